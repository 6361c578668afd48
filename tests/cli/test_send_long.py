"""`preflight send` on documents over the provider's context window: refused before any
detection with the two ways on, the first part that fits, a chunked summary with progress
(a 0.9 MB document of real text, the loopback provider)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, fake_mechanisms  # noqa: E402
from _long_doc import long_document, tab_person_names  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.cli import main as cli  # noqa: E402

MINUTES = """Minutes of the works council, 14 March.

Present: Alice Martin (chair), Bob Stone, the staff representatives of the Lyon site.

The council reviewed the draft budget for the new canteen. The figures were sent round a
week before; nobody asked for changes to the staffing lines.

The chair asked for a vote on the opening hours. The proposal to open at seven was carried
with two abstentions.

Any other business: the car park lighting is still broken on the east side; Bob Stone will
raise it with facilities before the next meeting.
"""


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fakes(monkeypatch):
    calls = []

    def make(self, detection=None):
        det = FakeDetector(names=("Alice Martin", "Bob Stone") + tab_person_names())
        calls.append(det)
        return det

    monkeypatch.setattr(Services, "make_detector", make)
    with fake_mechanisms():
        yield calls


def _add(url: str, context: int) -> None:
    assert cli.main(["providers", "add", "loop", "--base-url", url, "--model", "m-1",
                     "--context-tokens", str(context)]) == 0


def test_over_the_window_is_refused_before_detection(server, tmp_path, capsys, _fakes):
    doc = tmp_path / "minutes.txt"
    doc.write_text("\n\n".join([MINUTES.strip()] * 8), encoding="utf-8")
    _add(server.url, 1024)
    capsys.readouterr()
    code = cli.main(["send", str(doc), "--method", "placeholder", "--yes"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Too long to send whole" in err and "1,024" in err and "--long chunked" in err
    assert all(d.calls == 0 for d in _fakes)            # nothing detected
    assert server.requests == []


def test_first_part_sends_the_beginning_cut_at_a_paragraph(server, tmp_path, capsys):
    doc = tmp_path / "minutes.txt"
    doc.write_text("\n\n".join([MINUTES.strip()] * 8), encoding="utf-8")
    _add(server.url, 1024)
    server.script(Reply(deltas=["The council met."]))
    capsys.readouterr()
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                     "--no-learn", "--long", "first-part"]) == 0
    captured = capsys.readouterr()
    assert "sending the first" in captured.err
    (req,) = server.requests
    content = json.loads(req.body)["messages"][-1]["content"]
    assert "Minutes of the works council" in content and "Alice Martin" not in content
    sent = content.split("Document:\n", 1)[1]
    assert len(sent) < len(MINUTES * 8)
    # the last paragraph sent is whole: one of the minutes' paragraph ends
    ends = tuple(p.strip()[-12:] for p in MINUTES.split("\n\n"))
    assert sent.rstrip().endswith(ends)


def test_chunked_summary_of_09_mb_prints_progress(server, tmp_path, capsys, monkeypatch):
    doc = tmp_path / "long.txt"
    doc.write_text(long_document(), encoding="utf-8")
    _add(server.url, 65_536)
    server.script(*[Reply(deltas=[f"Summary {i}."]) for i in range(40)])
    capsys.readouterr()
    code = cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                     "--long", "chunked"] + _allow_all(doc, monkeypatch))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["requests"] == out["parts"] + 1 == len(server.requests)
    assert "Summarizing part 2 of" in captured.err and "Summarizing the summaries" in captured.err
    assert out["answer"] == f"Summary {out['parts']}."
    for req in server.requests:
        assert not any(name.encode() in req.body for name in tab_person_names())


class _NoTerminal:
    available = False

    def __init__(self, stdin_is_document: bool) -> None:
        pass

    def close(self) -> None:
        pass


def _allow_all(doc, monkeypatch) -> list[str]:
    """The --allow flags for every blocking item of the plan, read from the plan a run
    without a terminal prints (and refuses to send)."""
    import contextlib
    import io

    from preflight.cli.commands import send as send_cmd

    monkeypatch.setattr(send_cmd, "_Terminal", _NoTerminal)
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        assert cli.main(["send", str(doc), "--method", "placeholder", "--long", "chunked"]) != 0
    ids = [line.split("(id ", 1)[1].split(")", 1)[0] for line in out.getvalue().splitlines()
           if "[BLOCKS]" in line]
    return [f"--allow={i}" for i in ids]


def test_ctrl_c_during_a_chunked_send_stops_cleanly(server, tmp_path, capsys):
    import signal

    # Ctrl+C as a terminal delivers it: Python's own handler (an earlier test in the same
    # process may have left another one installed)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _chunked_send_interrupted(server, tmp_path, capsys)
    finally:
        signal.signal(signal.SIGINT, previous)


def _chunked_send_interrupted(server, tmp_path, capsys) -> None:
    import os
    import signal
    import threading

    doc = tmp_path / "minutes.txt"
    doc.write_text("\n\n".join([MINUTES.strip()] * 12), encoding="utf-8")
    _add(server.url, 1024)
    # each answer dribbles in slowly; Ctrl+C comes while the second request streams
    server.script(*[Reply(deltas=["Part", " summary", " here."], delay=0.4)
                    for _ in range(40)])

    def interrupt_on_second(_req):
        if len(server.requests) == 2:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    server.on_request = interrupt_on_second
    capsys.readouterr()
    code = cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn",
                     "--long", "chunked", "--allow-resend"] + [])
    err = capsys.readouterr().err
    assert code == 130, err
    assert "stopped by you after 1 of" in err and "nothing more was sent" in err
    assert len(server.requests) == 2                  # the third never left
