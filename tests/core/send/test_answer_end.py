"""How an answer ends: the length setting reaches the request and the local model, a
stream that is stopped stops at once, an answer cut on length ends at a sentence, and
the result line says what was really restored."""

from __future__ import annotations

import json
import threading
import time

import pytest
from _loopback import Reply
from _sessions import DOC, placeholder_plan, session_for

from preflight.core.config import ProviderSettings, Settings, load_settings
from preflight.core.errors import Cancelled, ConfigError
from preflight.core.ports import AnsweringModel, LanguageModel, ModelAnswer
from preflight.core.send.answer_text import (
    LENGTH_NOTE,
    Restoration,
    finish_answer,
    restoration_line,
    trim_to_sentence,
)
from preflight.core.send.providers import RetryPolicy, Timeouts, create_client
from preflight.core.tasks import ANSWER_MAX_TOKENS, SUMMARIZE, SUMMARY_MAX_TOKENS
from preflight.core.types import DxReport, SanitizedText, SanitizeReport


# -- the length setting ----------------------------------------------------------------


def test_answer_length_setting_defaults_long_and_is_validated(tmp_path):
    assert Settings().answer_max_tokens == ANSWER_MAX_TOKENS > SUMMARY_MAX_TOKENS
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"answer_max_tokens": 5}))
    with pytest.raises(ConfigError, match="answer_max_tokens must be between"):
        load_settings(path)
    path.write_text(json.dumps({"answer_max_tokens": 1234}))
    assert load_settings(path).answer_max_tokens == 1234


def test_answer_length_reaches_the_request_body(server, tmp_path):
    session = session_for(ProviderSettings("loop", server.url, "m-1"), tmp_path)
    session.settings.answer_max_tokens = 1234
    plan = placeholder_plan(session)
    assert json.loads(plan.request.body)["max_tokens"] == 1234
    assert plan.cost.max_output_tokens == 1234          # the estimate counts the same limit


class _AnsweringSLM:
    """A local model that records the task it was given (an AnsweringModel)."""

    def __init__(self, finish: str | None) -> None:
        self.tasks: list = []
        self.finish = finish

    def run(self, task, text, on_token=None, cancel=None) -> str:
        return self.answer(task, text, on_token, cancel).text

    def answer(self, task, text, on_token=None, cancel=None) -> ModelAnswer:
        self.tasks.append(task)
        return ModelAnswer("One. Two th", self.finish)

    def perplexity(self, text: str) -> float:
        return 1.0


def test_fake_matches_the_protocol():
    import inspect

    assert isinstance(_AnsweringSLM(None), AnsweringModel)
    for name in ("run", "answer", "perplexity"):
        port = AnsweringModel if name == "answer" else LanguageModel
        assert list(inspect.signature(getattr(_AnsweringSLM, name)).parameters) == \
            list(inspect.signature(getattr(port, name)).parameters)


def test_answer_length_reaches_the_local_model_and_its_finish_reason_comes_back(tmp_path):
    slm = _AnsweringSLM("length")
    session = session_for(ProviderSettings("loop", "http://127.0.0.1:9/v1", "m"), tmp_path,
                          slm=slm)
    session.settings.answer_max_tokens = 321
    res = session.keep_local(DOC, SUMMARIZE)
    assert slm.tasks[0].max_tokens == 321
    assert res.finish_reason == "length" and res.answer == "One. Two th"


# -- stopping a stream -----------------------------------------------------------------


def test_cancel_while_the_provider_is_silent_stops_within_a_second(server):
    """The provider accepted the request and then sends nothing for 3 s: Stop must not
    wait for its next byte."""
    server.script(Reply(deltas=["first", " second"], delay=3.0))   # silent for 3 s
    client = create_client(ProviderSettings("loop", server.url, "m"),
                           retry=RetryPolicy(attempts=1), timeouts=Timeouts(connect=2, read=60),
                           sleep=lambda s: None)
    cancel = threading.Event()
    got: list[str] = []
    threading.Timer(0.5, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled) as info:
        client.send(client.build_request(SUMMARIZE, "d"), None, on_delta=got.append,
                    cancel=cancel)
    stopped = time.monotonic() - t0 - 0.5
    assert stopped < 1.0, f"stopped {stopped:.2f} s after cancel"
    assert got == [] and info.value.partial == ""


# -- cut on length ------------------------------------------------------------------------


@pytest.mark.parametrize("text, want", [
    ("First sentence. Second one is cut mid", "First sentence."),
    ("Is it? Yes! And then “quoted.” and more", "Is it? Yes! And then “quoted.”"),
    ("- item one\n- item two\n- item thr", "- item one\n- item two"),
    ("No sentence ends here", "No sentence ends here"),
    ("It costs 3.5 million. The rest", "It costs 3.5 million."),
])
def test_trim_to_sentence(text, want):
    assert trim_to_sentence(text) == want


def test_finish_answer_trims_only_on_length():
    assert finish_answer("Done. Cut", "stop") == ("Done. Cut", None)
    assert finish_answer("Done. Cut", None) == ("Done. Cut", None)
    assert finish_answer("Done. Cut", "length") == ("Done.", LENGTH_NOTE)


# -- what was restored ------------------------------------------------------------------


def _san(method: str, epsilon: float | None = None, **fields) -> SanitizedText:
    dx = DxReport(epsilon) if epsilon is not None else None
    return SanitizedText("x", method, (), SanitizeReport(dx=dx, **fields))


@pytest.mark.parametrize("san, says, not_says", [
    (_san("identifiers", actions={"placeholder": 3, "keep": 1}),
     "Placeholders were restored locally", "d_X"),
    (_san("pseudonyms", actions={"pseudonym": 2}), "Pseudonyms were mapped back",
     "Placeholders"),
    (_san("dx-all", epsilon=8.0), "Nothing was restored: words changed by d_X noise",
     "Placeholders"),
    (_san("dx"), "Nothing was restored", "Placeholders"),
    (_san("identifiers-dx", epsilon=8.0, actions={"placeholder": 2}),
     "Placeholders were restored locally; words changed by d_X noise cannot be restored",
     "Pseudonyms"),
    (_san("redact-all", actions={"redact": 2}), "Nothing needed restoring", "restored loc"),
])
def test_restoration_line_per_method(san, says, not_says):
    line = restoration_line(Restoration.of(san))
    assert says in line and not_says not in line
