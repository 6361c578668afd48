"""The assessor's language model on a company-hosted OpenAI-compatible server.

:class:`RemoteSLM` implements :class:`~preflight.core.ports.LanguageModel` over HTTP
(llama.cpp's ``llama_cpp.server`` or vLLM on a GPU box), with the prompts and limits of
the in-process :class:`~preflight.runtime.slm.LocalSLM`:

* ``run`` streams ``/v1/chat/completions`` with the same messages (the manifest's system
  prompt), ``max_tokens`` of the task, greedy decoding and the same repetition penalty,
  and stops reading when ``cancel`` is set.
* ``perplexity`` asks ``/v1/completions`` to echo the prompt with the log-probability of
  every prompt token (``echo: true, logprobs: 1, max_tokens: 1``) and averages those of
  the first ``perplexity_window`` tokens after the first, as LocalSLM does. llama-cpp-python
  (0.3.x) pairs each prompt token with the *next* position's distribution unless the
  prompt starts with the model's BOS token, so the prompt is prefixed with
  ``score_prefix`` (the BOS text of the model, from its GGUF: :func:`bos_text`). A server
  that returns no prompt log-probabilities raises :class:`RemoteUnsupported`.

Every failure raises :class:`RemoteUnavailable` (a ModelUnavailableError) with a short
``reason``; :class:`~preflight.runtime.remote_fallback.FallbackSLM` then uses the
in-process model and says so.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests

from preflight.core.errors import Cancelled, InputError, ModelUnavailableError
from preflight.core.send.destination import UnclearURL, destination
from preflight.core.send.route import harden
from preflight.core.tasks import Task
from preflight.runtime.slm import PERPLEXITY_WINDOW, REPEAT_PENALTY, task_messages

log = logging.getLogger(__name__)

#: Characters sent for perplexity: enough for ``perplexity_window`` tokens of any text
#: (a token is rarely longer than 24 characters), so a long excerpt is not sent whole.
_CHARS_PER_TOKEN_BOUND = 24


class RemoteUnavailable(ModelUnavailableError):
    """The company assessor could not answer; ``reason`` completes "company assessor at
    URL …" (e.g. "unreachable", "timed out")."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"The company assessor at {url} is not usable ({reason}).",
                         "Check that its server runs, or remove it from Settings / the "
                         "company policy.")
        self.reason = reason


class RemoteUnsupported(RemoteUnavailable):
    """The server answers but cannot score prompt tokens (no echo with logprobs)."""


class RemoteSLM:
    """A :class:`~preflight.core.ports.LanguageModel` on an OpenAI-compatible server.

    Args:
        url: the server's base URL, with or without the trailing "/v1".
        model: the model id the server knows ("" lets a one-model server choose).
        system_prompt: replaces the task's system message (the manifest's, as LocalSLM).
        score_prefix: text put before the document when scoring (the model's BOS), or a
            function giving it (called once, at the first perplexity).
        connect_timeout / read_timeout: seconds; a down server fails in ``connect_timeout``.
        session: a ``requests.Session`` (tests pass their own).
    """

    def __init__(self, url: str, model: str = "", *, system_prompt: str | None = None,
                 score_prefix: str | Callable[[], str] = "", perplexity_window: int = PERPLEXITY_WINDOW,
                 repeat_penalty: float = REPEAT_PENALTY, connect_timeout: float = 2.0,
                 read_timeout: float = 120.0, session: requests.Session | None = None,
                 ) -> None:
        url = url.strip().rstrip("/")
        self.url = url
        self._api = url if url.endswith("/v1") else url + "/v1"
        self.model = model
        self._system_prompt = system_prompt or None
        self._prefix = score_prefix
        self._window = perplexity_window
        self._repeat_penalty = repeat_penalty
        self._timeout = (connect_timeout, read_timeout)
        # The text (the original document, when the endpoint is internal) goes to this
        # address only: no proxy from the environment, no redirect followed.
        self._http = harden(session or requests.Session())

    # -- LanguageModel -----------------------------------------------------------------
    def run(self, task: Task, text: str, on_token: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> str:
        """``task`` on ``text`` by the server; raises :class:`Cancelled` when ``cancel``
        is set while the answer streams in (the connection is closed, which stops it)."""
        if not text.strip():
            raise InputError("The document is empty.", "Give the model some text to work on.")
        body = {"messages": task_messages(task, text, self._system_prompt),
                "max_tokens": task.max_tokens, "temperature": 0.0,
                "repeat_penalty": self._repeat_penalty, "stream": True, "seed": 0}
        pieces: list[str] = []
        with self._post("/chat/completions", body, stream=True) as resp:
            for event in _sse_events(resp, self.url):
                if cancel is not None and cancel.is_set():
                    raise Cancelled("Stopped the company assessor.")
                try:
                    piece = event["choices"][0]["delta"].get("content") or ""
                except (KeyError, IndexError, TypeError, AttributeError):
                    raise RemoteUnavailable(self.url, "sent an unreadable answer") from None
                if piece:
                    pieces.append(piece)
                    if on_token is not None:
                        on_token(piece)
        return "".join(pieces).strip()

    def perplexity(self, text: str) -> float:
        """Perplexity on the first ``perplexity_window`` tokens of ``text`` (see module)."""
        if callable(self._prefix):
            self._prefix = self._prefix()
        prompt = self._prefix + text[: self._window * _CHARS_PER_TOKEN_BOUND]
        body = {"prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1,
                "temperature": 0.0}
        with self._post("/completions", body) as resp:
            data = _json(resp, self.url)
        values = prompt_logprobs(data)
        if values is None:
            raise RemoteUnsupported(self.url, "returns no prompt log-probabilities")
        values = values[: self._window - 1]
        if not values:
            return float("nan")
        return float(math.exp(-sum(values) / len(values)))

    # -- HTTP --------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any], stream: bool = False) -> Any:
        if self.model:
            body = {"model": self.model, **body}
        started = time.monotonic()
        url = self._api + path
        try:
            destination(url)
        except UnclearURL as exc:
            raise RemoteUnavailable(self.url, f"its address is not plain: {exc.reason}") \
                from None
        try:
            resp = self._http.post(url, json=body, stream=stream, timeout=self._timeout,
                                   allow_redirects=False)
        except requests.Timeout:
            raise RemoteUnavailable(self.url, "timed out") from None
        except requests.RequestException:
            raise RemoteUnavailable(self.url, "unreachable") from None
        if 300 <= resp.status_code < 400:
            resp.close()
            raise RemoteUnavailable(self.url, f"redirected elsewhere (HTTP {resp.status_code}, "
                                              "not followed)")
        if resp.status_code >= 400:
            resp.close()
            raise RemoteUnavailable(self.url, f"answered HTTP {resp.status_code}")
        log.debug("company assessor %s answered in %.0f ms", path,
                  1000 * (time.monotonic() - started))
        return resp


def prompt_logprobs(data: Any) -> list[float] | None:
    """The prompt tokens' log-probabilities in an echoed completion, from the second
    token of the text on (the first has no prediction), without the generated token(s);
    None when the answer holds none."""
    try:
        choice = data["choices"][0]
        raw = choice["logprobs"]["token_logprobs"]
        done = int((data.get("usage") or {}).get("completion_tokens", 1))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    if not isinstance(raw, list):
        return None
    entries = raw[: len(raw) - done] if done > 0 else list(raw)
    start = 0
    while start < len(entries) and entries[start] is None:
        start += 1
    if start == 0 or not all(isinstance(v, (int, float)) for v in entries[start:]):
        return None          # no leading null: not the echoed prompt; a null inside: none
    return [float(v) for v in entries[start:]]


def _json(resp: Any, url: str) -> Any:
    try:
        return resp.json()
    except ValueError:
        raise RemoteUnavailable(url, "sent an unreadable answer") from None


def _sse_events(resp: Any, url: str) -> Iterator[dict[str, Any]]:
    """The JSON events of a server-sent-events stream, until ``[DONE]``."""
    try:
        for line in resp.iter_lines(decode_unicode=False):
            if not line or not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                return
            try:
                yield json.loads(payload)
            except (ValueError, RecursionError):
                raise RemoteUnavailable(url, "sent an unreadable answer") from None
    except requests.Timeout:
        raise RemoteUnavailable(url, "timed out") from None
    except requests.RequestException:
        raise RemoteUnavailable(url, "unreachable") from None


def bos_text(model_path: Path | str) -> str:
    """The BOS token's text of a GGUF (vocabulary only, no weights), "" when it has none:
    the ``score_prefix`` that makes llama-cpp-python's echoed log-probabilities line up."""
    from preflight.runtime.llama_open import open_llama

    vocab = open_llama(model_path, quiet_stderr=True, vocab_only=True)
    try:
        bos = vocab.token_bos()
        return "" if bos < 0 else vocab._model.token_get_text(bos)
    finally:
        vocab.close()
