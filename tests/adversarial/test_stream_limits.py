"""Reading an answer is linear and bounded: a 13 MB answer in a single HTTP chunk ends in
seconds with a few MiB of memory and a record that says ``truncated``; a stall says the
provider stopped sending, not that the connection broke."""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply, sse_event  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.send.providers import Timeouts  # noqa: E402
from preflight.core.send.session import Confirmation, StreamBroken  # noqa: E402
from preflight.core.send.stream import (  # noqa: E402
    MAX_ANSWER_CHARS, MAX_LINE_CHARS, MAX_WHOLE_BYTES, SSELines, _LineTooLong,
)

@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


YES = Confirmation(confirmed=True)
THIRTEEN_MB = 13 * 1000 * 1000


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


def _many_events_one_chunk() -> bytes:
    event = sse_event("word " * 20, "chat")           # 100 characters of answer each
    return event * (THIRTEEN_MB // len(event) + 1)


def _one_huge_event() -> bytes:
    return sse_event("x" * THIRTEEN_MB, "chat")


@pytest.mark.parametrize("make_body", [_many_events_one_chunk, _one_huge_event],
                         ids=["many-events", "one-event"])
def test_13mb_single_chunk_is_cut_fast_with_bounded_memory(server, tmp_path, make_body):
    body = make_body()
    assert len(body) >= THIRTEEN_MB
    server.script(Reply(raw_chunks=[body]))
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path)
    plan = placeholder_plan(session)

    tracemalloc.start()
    started = time.monotonic()
    try:
        result = session.execute(plan, YES, learn=False)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert elapsed < 20, f"took {elapsed:.1f} s"          # was: minutes at 100 % CPU
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"   # was: 1.25 GB
    assert result.truncated
    assert len(result.answer_raw) <= MAX_ANSWER_CHARS
    (row,) = session.audit.records()
    assert row["status"] == "truncated" and row["delivered"] == 1
    assert "size limit" in row["error"]
    assert row["answer_raw"] == result.answer_raw


def test_answer_at_the_limit_is_complete_and_not_truncated(server, tmp_path):
    server.script(Reply(deltas=["a" * 1000] * 5))
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path)
    result = session.execute(placeholder_plan(session), YES, learn=False)
    assert not result.truncated and result.answer == "a" * 5000
    assert session.audit.records()[0]["status"] == "done"


def test_sse_lines_match_split_whatever_the_chunking():
    text = "data: one\r\n\ndata: two\nevent: x\n\ndata: three\n"
    expected = [line.rstrip("\r") for line in text.split("\n")[:-1]]
    for size in (1, 2, 3, 7, len(text)):
        lines = SSELines()
        got = []
        for i in range(0, len(text), size):
            got.extend(lines.feed(text[i:i + size]))
        assert got == expected, size


def test_sse_lines_is_linear_on_a_long_line_fed_in_small_pieces():
    lines = SSELines(max_line=MAX_LINE_CHARS)
    piece = "y" * 1024
    started = time.monotonic()
    for _ in range(3 * 1024):                     # 3 MiB without a newline
        assert lines.feed(piece) == []
    (line,) = lines.feed("\n")
    assert len(line) == 3 * 1024 * 1024
    assert time.monotonic() - started < 5


def test_sse_line_over_the_limit_raises():
    lines = SSELines(max_line=10)
    with pytest.raises(_LineTooLong):
        lines.feed("z" * 11)


@pytest.mark.parametrize("chunked", [True, False])
def test_mid_stream_stall_says_the_provider_stopped_sending(server, tmp_path, chunked):
    server.script(Reply(deltas=["<PERSON_1>", " is", " late"], delay=1.5, chunked=chunked))
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path,
                          timeouts=Timeouts(connect=2, read=0.5))
    # The first event comes after 1.5 s too: let headers arrive, then stall before data.
    with pytest.raises(StreamBroken) as info:
        session.execute(placeholder_plan(session), YES, learn=False)
    assert "stopped sending for 0.5 s" in info.value.message
    assert "broke" not in info.value.message
    (row,) = session.audit.records()
    assert row["status"] == "failed" and row["delivered"] == 1


def test_oversized_single_json_reply_is_not_read_whole(server, tmp_path):
    payload = {"choices": [{"message": {"content": "q" * (MAX_WHOLE_BYTES + 10)},
                            "finish_reason": "stop"}]}
    server.script(Reply(status=200, body=json.dumps(payload).encode()))
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path)
    with pytest.raises(StreamBroken, match="larger than 4 MiB"):
        session.execute(placeholder_plan(session), YES, learn=False)
