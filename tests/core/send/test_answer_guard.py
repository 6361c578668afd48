"""The answer guard gives the same text however the answer is chunked, keeps what a reader
needs (words, newlines, tabs, emoji), and works in linear time on hostile input."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from preflight.core.send.answer_guard import MAX_SEQUENCE, AnswerGuard, neutralize

KEY = "sk-guard-Tz4Yx7Wv1Ur8"
PIECES = ["plain words ", "\x1b[31m", "\x1b[0m", "\x1b]52;c;aGk=\x07", "\x1b]8;;http://x\x1b\\",
          "\r\n", "\r", "\t", "\n", "\x1b", "[", "]", "\x9b", "2K", "\x07", "\u202e", "\u2066",
          "日本語 ", "👩\u200d💻 ", KEY, KEY[:9], "\x08", "\x00"]


def streamed(text: str, cuts: list[int], secrets: tuple[str, ...] = ()) -> tuple[str, AnswerGuard]:
    guard = AnswerGuard(secrets=secrets)
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    return "".join(guard.feed(c) for c in chunks) + guard.flush(), guard


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=20),
       cuts=st.lists(st.integers(0, 400), max_size=8))
def test_any_chunking_gives_the_whole_answer_guarded(parts, cuts):
    text = "".join(parts)
    whole, _ = streamed(text, [], (KEY,))
    got, _ = streamed(text, cuts, (KEY,))
    assert got == whole
    assert KEY not in got and "\x1b" not in got and "\x9b" not in got and "\r" not in got


def test_what_a_reader_needs_stays():
    text = "Line one\n\tIndented — naïve café 日本語 👩\u200d💻 and ½."
    assert neutralize(text) == text


def test_a_carriage_return_cannot_rewrite_its_line():
    assert neutralize("Approved.\rRejected.") == "Approved.\nRejected."
    assert neutralize("a\r\nb") == "a\nb"


def test_an_unterminated_sequence_loses_only_its_introducer():
    tail = "x" * (MAX_SEQUENCE + 10)
    assert neutralize("\x1b]0;" + tail) == "0;" + tail


def test_hostile_input_is_filtered_in_linear_time():
    hostile = ("\x1b]" + "a" * 50) * 20000 + "\x1b[" * 20000 + ("s" * 3 + "sk-gu") * 20000
    guard = AnswerGuard(secrets=(KEY,))
    start = time.perf_counter()
    for i in range(0, len(hostile), 7):
        guard.feed(hostile[i:i + 7])
    guard.flush()
    assert time.perf_counter() - start < 20
