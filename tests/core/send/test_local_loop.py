"""A local answer that loops is stopped at the first sentence it repeats, and ends there."""

from __future__ import annotations

import inspect
import threading

import pytest
from _sessions import DOC, session_for

from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled
from preflight.core.ports import AnsweringModel, LanguageModel, ModelAnswer
from preflight.core.send.answer_text import (
    REPEAT_NOTE,
    REPEAT_REASON,
    RepeatWatch,
    finish_answer,
    first_repeat,
)
from preflight.core.send.local import guarded_answer
from preflight.core.tasks import SUMMARIZE

LOOP = ("The memo says the office moves next month. "
        "Staff must file expenses by Friday at noon. "
        "The memo says the office moves next month. "
        "Staff must file expenses by Friday at noon. ") * 20


class _StreamingSLM:
    """Streams ``text`` word by word and stops as the runtime does: ``Cancelled`` as soon as
    its cancel event is set (an AnsweringModel)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.emitted = 0

    def run(self, task, text, on_token=None, cancel=None) -> str:
        return self.answer(task, text, on_token, cancel).text

    def answer(self, task, text, on_token=None, cancel=None) -> ModelAnswer:
        out = []
        for piece in self.text.split(" "):
            if cancel is not None and cancel.is_set():
                raise Cancelled("Stopped the local model.")
            piece += " "
            self.emitted += 1
            out.append(piece)
            if on_token is not None:
                on_token(piece)
        return ModelAnswer("".join(out).rstrip(), "stop")

    def perplexity(self, text: str) -> float:
        return 1.0


def test_fake_matches_the_protocol():
    assert isinstance(_StreamingSLM(""), AnsweringModel)
    for name in ("run", "answer", "perplexity"):
        port = AnsweringModel if name == "answer" else LanguageModel
        assert list(inspect.signature(getattr(_StreamingSLM, name)).parameters) == \
            list(inspect.signature(getattr(port, name)).parameters)


def test_a_loop_stops_at_the_first_repeated_sentence_and_the_answer_ends_before_it():
    slm, streamed = _StreamingSLM(LOOP), []
    got = guarded_answer(slm, SUMMARIZE, DOC, on_token=streamed.append)
    assert got.finish_reason == REPEAT_REASON
    assert slm.emitted < 25 < len(LOOP.split(" "))          # stopped, not run to the end
    assert "".join(streamed) == got.text                    # the faces saw what it keeps
    shown, note = finish_answer(got.text, got.finish_reason)
    assert note == REPEAT_NOTE
    assert shown == ("The memo says the office moves next month. "
                     "Staff must file expenses by Friday at noon.")


def test_an_answer_without_a_loop_is_untouched():
    text = "The memo moves the office. Thank you. Thank you. Expenses are due on Friday."
    got = guarded_answer(_StreamingSLM(text), SUMMARIZE, DOC)
    assert got == ModelAnswer(text, "stop")                # "Thank you." is too short to count


def test_the_users_stop_still_stops():
    cancel = threading.Event()
    slm = _StreamingSLM(LOOP)

    def on_token(piece: str) -> None:
        if slm.emitted == 3:
            cancel.set()

    with pytest.raises(Cancelled):
        guarded_answer(slm, SUMMARIZE, DOC, on_token=on_token, cancel=cancel)
    assert slm.emitted == 3


def test_keep_local_reports_the_loop(tmp_path):
    session = session_for(ProviderSettings("loop", "http://127.0.0.1:9/v1", "m"), tmp_path,
                          slm=_StreamingSLM(LOOP))
    res = session.keep_local(DOC, SUMMARIZE)
    assert res.finish_reason == REPEAT_REASON
    assert first_repeat(res.answer) is None


@pytest.mark.parametrize("text, want", [
    ("One two three four five six. Seven. One two three four five six. More", 36),
    ("A list:\n- one two three four five six\n- one two three four five six\n", 38),
    ("It costs 3.5 million dollars this year. It costs 3.5 million dollars this year", None),
    ("Yes, thanks a lot for that. YES,  thanks a lot for that. ", 28),
    ("Short. Short. Short. ", None),
])
def test_first_repeat(text, want):
    assert first_repeat(text) == want


@pytest.mark.parametrize("text", [
    LOOP,
    "One two three four five six. Seven. One two three four five six. More",
    "A list:\n- one two three four five six\n- one two three four five six\n",
    "No loop here at all. Every sentence is new. Really it is, quite new.",
])
def test_the_watch_fed_piece_by_piece_finds_what_the_whole_text_shows(text):
    for size in (1, 3, 17):
        watch, found = RepeatWatch(), None
        for i in range(0, len(text), size):
            found = watch.feed(text[i:i + size], streaming=False)
            if found is not None:
                break
        assert found == first_repeat(text), size


def test_streaming_catches_the_repeat_at_its_end_mark_before_the_space():
    first = "The memo says the office moves next month. "
    watch = RepeatWatch()
    assert watch.feed(first) is None
    assert watch.feed("The memo says the office moves next month") is None
    assert watch.feed(".") == len(first)           # the mark itself is never shown


def test_text_without_sentence_ends_is_read_without_a_false_loop():
    code = "x = [" + ", ".join(str(i) for i in range(20_000)) + "]"
    watch = RepeatWatch()
    assert all(watch.feed(code[i:i + 4]) is None for i in range(0, len(code), 4))
