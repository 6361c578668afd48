"""The company-hosted assessor against a fake OpenAI-compatible server: the protocol shape
(same prompts and limits as LocalSLM, streaming, cancel, echoed prompt log-probabilities),
the fallback to the in-process model with where it ran, and the rule that an endpoint not
marked internal never receives the original document."""

from __future__ import annotations

import inspect
import math
import socket
import threading
from typing import ClassVar

import pytest
from _fake_openai import FakeOpenAI, word_logprob
from preflight.core.errors import Cancelled, ModelUnavailableError
from preflight.core.ports import LanguageModel
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText
from preflight.core.utility.assess import UtilityAssessor, correction_task
from preflight.runtime.remote_fallback import FallbackSLM
from preflight.runtime.remote_slm import (
    RemoteSLM,
    RemoteUnavailable,
    RemoteUnsupported,
    prompt_logprobs,
)
from preflight.runtime.slm import LocalSLM

DOC = ("Alice Morgan of Leeds asked the bank to move her savings to the new account "
       "before the merger closes in March, and to keep the change private.")
SANITIZED = ("PERSON_1 of LOCATION_1 asked the bank to move her savings to the new account "
             "before the merger closes in March, and to keep the change private.")


class LocalFake:
    """Stands in for the in-process LocalSLM: records what it was asked."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def run(self, task: Task, text: str, on_token=None, cancel=None) -> str:
        self.texts.append(text)
        return "local: " + " ".join(text.split()[:6])

    def perplexity(self, text: str) -> float:
        self.texts.append(text)
        return 42.0


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


def dead_url() -> str:
    """A loopback port nobody listens on (connection refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_fakes_and_the_remote_model_match_the_port():
    for cls in (RemoteSLM, FallbackSLM, LocalFake):
        for name in ("run", "perplexity"):
            want = list(inspect.signature(getattr(LanguageModel, name)).parameters)
            assert list(inspect.signature(getattr(cls, name)).parameters) == want, (cls, name)
    assert isinstance(RemoteSLM("http://127.0.0.1:1"), LanguageModel)


def test_run_sends_localslms_prompt_and_limits_and_streams(server):
    system = "Reply with the answer only."
    remote = RemoteSLM(server.url, "smol", system_prompt=system)
    pieces: list[str] = []
    out = remote.run(SUMMARIZE, DOC, on_token=pieces.append)
    assert out == server.answer and "".join(pieces) == server.answer
    path, body = server.bodies[-1]
    assert path == "/v1/chat/completions"
    local = LocalSLM("unused.gguf", system_prompt=system)
    assert body["messages"] == local.messages(SUMMARIZE, DOC)
    assert body["messages"][0] == {"role": "system", "content": system}
    assert body["max_tokens"] == SUMMARIZE.max_tokens and body["stream"] is True
    assert body["temperature"] == 0.0 and body["model"] == "smol"
    local.close()
    fix = correction_task(SANITIZED)
    remote.run(fix, SANITIZED)
    assert server.bodies[-1][1]["max_tokens"] == fix.max_tokens


def test_cancel_stops_reading_the_stream(server):
    server.answer = " ".join(f"w{i}" for i in range(40))
    server.delay = 0.01
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 3:
            cancel.set()

    with pytest.raises(Cancelled):
        RemoteSLM(server.url).run(Task("summarize", max_tokens=40), DOC, on_token, cancel)
    assert len(seen) == 3


def test_perplexity_from_echoed_prompt_logprobs(server):
    remote = RemoteSLM(server.url, score_prefix="<s>", perplexity_window=8)
    value = remote.perplexity(DOC)
    body = server.bodies[-1][1]
    assert server.bodies[-1][0] == "/v1/completions"
    assert body["prompt"].startswith("<s>" + DOC[:20])
    assert (body["echo"], body["logprobs"], body["max_tokens"]) == (True, 1, 1)
    # The prefixed first word has no prediction; then 7 words (the window minus one),
    # never the generated token.
    words = ("<s>" + DOC).split()
    want = math.exp(-sum(word_logprob(w) for w in words[1:8]) / 7)
    assert value == pytest.approx(want)


def test_prompt_logprobs_shape():
    data = {"choices": [{"logprobs": {"token_logprobs": [None, -1.0, -3.0, -0.2]}}],
            "usage": {"completion_tokens": 1}}
    assert prompt_logprobs(data) == [-1.0, -3.0]
    # the generated token stopped at once (EOS): nothing to drop at the end
    data["usage"]["completion_tokens"] = 0
    assert prompt_logprobs(data) == [-1.0, -3.0, -0.2]
    # no leading null: these are generated tokens, not the echoed prompt
    assert prompt_logprobs({"choices": [{"logprobs": {"token_logprobs": [-1.0]}}]}) is None
    assert prompt_logprobs({"choices": [{"logprobs": None}]}) is None


def test_a_server_without_prompt_logprobs_is_unsupported(server):
    server.logprobs = False
    with pytest.raises(RemoteUnsupported) as err:
        RemoteSLM(server.url).perplexity(DOC)
    assert "log-probabilities" in str(err.value)


@pytest.mark.parametrize("status", [500, 404])
def test_http_errors_and_a_dead_server_are_unavailable(server, status):
    server.status = status
    with pytest.raises(RemoteUnavailable) as err:
        RemoteSLM(server.url).run(SUMMARIZE, DOC)
    assert err.value.reason == f"answered HTTP {status}"
    with pytest.raises(RemoteUnavailable) as err:
        RemoteSLM(dead_url()).perplexity(DOC)
    assert err.value.reason == "unreachable"
    assert isinstance(err.value, ModelUnavailableError) and err.value.hint


def test_fallback_runs_locally_says_why_and_retries_later():
    now = [0.0]
    local = LocalFake()
    url = dead_url()
    slm = FallbackSLM(RemoteSLM(url), local, url, retry_after=30, clock=lambda: now[0])
    assert slm.run(SUMMARIZE, DOC).startswith("local: ")
    assert slm.perplexity(DOC) == 42.0
    place = slm.place()
    assert (place.where, place.endpoint, place.fallback_reason) == ("local", url, "unreachable")
    assert place.label == f"Assessment ran on this computer (company assessor at {url} " \
                          "unreachable)."
    assert place.to_json() == {"where": "local", "endpoint": url, "owner": "company assessor",
                               "fallback_reason": "unreachable", "note": None}
    with FakeOpenAI() as srv:      # the server comes back; the wrapper waits retry_after
        slm.remote = RemoteSLM(srv.url)
        slm.run(SUMMARIZE, DOC)
        assert srv.bodies == []
        now[0] = 31.0
        assert slm.run(SUMMARIZE, DOC) == srv.answer
        assert slm.place().where == "company"
        assert slm.place().label == f"Assessment ran on the company assessor at {url}."


def test_unsupported_perplexity_stays_local_but_answers_come_from_the_server(server):
    server.logprobs = False
    local = LocalFake()
    slm = FallbackSLM(RemoteSLM(server.url), local, server.url)
    assert slm.perplexity(DOC) == 42.0 and slm.perplexity(DOC) == 42.0
    assert len(server.bodies) == 1          # asked once, then perplexity stays local
    assert slm.run(SUMMARIZE, DOC) == server.answer
    place = slm.place()
    assert place.where == "company" and "Perplexity was computed on this computer" in \
        place.note


def test_cancel_is_not_a_fallback(server):
    server.answer = " ".join(f"w{i}" for i in range(40))
    local = LocalFake()
    slm = FallbackSLM(RemoteSLM(server.url), local, server.url)
    cancel = threading.Event()
    with pytest.raises(Cancelled):
        slm.run(Task("summarize", max_tokens=40), DOC, lambda _p: cancel.set(), cancel)
    assert local.texts == []


class Embedder:
    def embed(self, texts):
        import numpy as np

        return np.eye(len(texts), 4, dtype=np.float32)

    def similarity(self, a: str, b: str) -> float:
        return 0.5


class Predictor:
    metrics: ClassVar[dict] = {}

    def reads(self, feature):
        return True             # the remote model scores the sanitized text too

    def estimate(self, features, *, refined=True, corrected=False, explain=True):
        from preflight.core.utility.predictor import Estimate

        return Estimate(0.5, "full" if refined else "fast")


@pytest.mark.parametrize("internal", [False, True])
def test_the_original_reaches_only_an_internal_endpoint(server, internal):
    local = LocalFake()
    company = FallbackSLM(RemoteSLM(server.url), local, server.url)
    assessor = UtilityAssessor(company, Embedder(), Predictor(),
                               original_slm=None if internal else local)
    sanitized = SanitizedText(text=SANITIZED, method="placeholder")
    result = assessor.refine(DOC, sanitized)
    assert result.predicted is not None
    sent = server.texts()
    assert SANITIZED in sent                     # D and its perplexity: the server
    assert ("Alice Morgan" in sent) is internal  # the original: only when internal
    assert (DOC in local.texts) is (not internal)
