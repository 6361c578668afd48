"""Clients for OpenAI-compatible endpoints (OpenAI, Mistral, Gemini's OpenAI endpoint,
Azure-style deployments, local llama.cpp/vLLM/Ollama servers).

A provider *kind* is a strategy class registered by name; the kind of a configured
provider is its ``ProviderSettings.api_style``: ``"chat"`` (``/chat/completions`` with
``Task.messages``) or ``"completions"`` (``/completions`` with
``Task.completion_prompt``, for base models without a chat template).

The request is built once (:meth:`ProviderClient.build_request`) so the exact bytes can be
shown and audited before they leave; :meth:`ProviderClient.send` then streams the answer
over SSE.

Retry policy — retried only when the provider certainly did not start answering:
connection refused/reset while connecting, connect timeouts, HTTP 429 and 5xx (honouring
Retry-After). Never retried: a stream that started and broke, a read timeout, or a
connection dropped after the request was written — the provider may have received the
text, and sending it again silently would be a second disclosure. Those end in a
:class:`StreamBroken` error carrying the partial answer.

Where a request may go is decided in :mod:`.destination` (an address read as the HTTP
client reads it), :mod:`.route` (no cleartext to another machine, no proxy but the
provider's own) and :mod:`.transport` (never a redirect to another origin); how the
answer is read (bounded, linear, guarded against hostile text) in :mod:`.stream`.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

import requests

from preflight import __version__
from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled, ConfigError, ProviderError
from preflight.core.send import logfilter, transport
from preflight.core.send.stream import MAX_ANSWER_CHARS, ProviderReply, read_answer
from preflight.core.send.transport import (
    MAX_SAME_ORIGIN_REDIRECTS, REDIRECT_STATUSES, Retryable, StreamBroken,
)
from preflight.core.tasks import Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timeouts:
    connect: float = 10.0   # seconds to open the TCP/TLS connection
    read: float = 120.0     # seconds of silence allowed between bytes of the answer


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3              # total tries, including the first
    backoff: float = 1.0           # first wait; doubled per retry, with jitter
    max_wait: float = 30.0         # a Retry-After longer than this is reported, not waited


@dataclass(frozen=True)
class PreparedRequest:
    """What will leave the machine, byte for byte (except the key header's value)."""

    url: str
    headers: tuple[tuple[str, str], ...]   # without the key
    body: bytes
    auth_header: str | None                 # header that will carry the key, if any
    auth_prefix: str = ""                   # "Bearer " for OpenAI style, "" for Azure api-key
    content_texts: tuple[str, ...] = ()     # the strings inside ``body`` a model reads

    def display_headers(self, with_auth: bool = True) -> list[tuple[str, str]]:
        """Headers for display; the key shows as a marker, never as its value."""
        out = list(self.headers)
        if with_auth and self.auth_header:
            out.append((self.auth_header, f"{self.auth_prefix}<API key from keyring>"))
        return out

    @property
    def token_text(self) -> str:
        """The text the provider's tokenizer reads: the chat messages' contents, or the
        completion prompt — taken from this very body (what the bill counts)."""
        return "\n".join(self.content_texts)


# --- registry -------------------------------------------------------------------------

_KINDS: dict[str, type["ProviderClient"]] = {}


def register_kind(name: str) -> Callable[[type["ProviderClient"]], type["ProviderClient"]]:
    def deco(cls: type[ProviderClient]) -> type[ProviderClient]:
        _KINDS[name] = cls
        cls.kind = name
        return cls

    return deco


def provider_kinds() -> list[str]:
    return list(_KINDS)


def create_client(settings: ProviderSettings, **kwargs: Any) -> "ProviderClient":
    """The client for ``settings`` (its kind is ``settings.api_style``)."""
    try:
        cls = _KINDS[settings.api_style]
    except KeyError:
        raise ConfigError(
            f"Provider '{settings.name}' has an unknown API style '{settings.api_style}'.",
            f"Use one of: {', '.join(_KINDS)}.",
        ) from None
    return cls(settings, **kwargs)


# --- the strategy ----------------------------------------------------------------------


class ProviderClient(ABC):
    """One provider endpoint: builds requests and streams answers."""

    kind = ""
    endpoint = ""

    def __init__(
        self,
        settings: ProviderSettings,
        http: requests.Session | None = None,
        timeouts: Timeouts = Timeouts(),
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.settings = settings
        # No proxy, .netrc or CA bundle from the environment; the provider's own proxy
        # only (route.proxy_for). A Stop lands before the provider answered, too.
        self.http = transport.harden(http or requests.Session())
        self.timeouts = timeouts
        self.retry = retry
        self._sleep = sleep

    # -- request shape (the part that differs per kind) --

    @abstractmethod
    def body(self, task: Task, document: str) -> dict[str, Any]:
        """The JSON body for ``task`` on ``document`` (already sanitized)."""

    @abstractmethod
    def content_texts(self, body: dict[str, Any]) -> tuple[str, ...]:
        """The strings of ``body`` that carry text a model reads (for the PII re-scan)."""

    @abstractmethod
    def delta(self, event: dict[str, Any]) -> tuple[str, str | None]:
        """(text delta, finish_reason) of one streamed event."""

    @abstractmethod
    def whole(self, payload: dict[str, Any]) -> tuple[str, str | None]:
        """(text, finish_reason) of a non-streamed reply (servers that ignore stream=true)."""

    # -- shared --

    def url(self) -> str:
        """The endpoint's URL exactly as the HTTP client sends it (refused when the base
        URL is not plain, is cleartext to another machine, or its proxy is malformed)."""
        transport.check_cleartext(self.settings)
        parts = urlsplit(transport.provider_destination(self.settings).url)
        path = parts.path.rstrip("/")
        if not path:
            path = "/v1"  # local servers are often given as just host:port
        url = urlunsplit((parts.scheme, parts.netloc, f"{path}/{self.endpoint}",
                          parts.query, ""))
        return transport.destination(url).url

    def _is_azure(self) -> bool:
        host = transport.origin(self.settings.base_url.strip())[1]
        return host.endswith(".azure.com") or "api-version=" in self.settings.base_url

    def build_request(self, task: Task, document: str) -> PreparedRequest:
        body = self.body(task, document)
        raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = (
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
            # Compressed SSE would be buffered by the decompressor; ask for plain bytes.
            ("Accept-Encoding", "identity"),
            ("User-Agent", f"preflight/{__version__}"),
        )
        if self._is_azure():
            auth, prefix = "api-key", ""
        else:
            auth, prefix = "Authorization", "Bearer "
        return PreparedRequest(self.url(), headers, raw, auth, prefix, self.content_texts(body))

    def send(
        self,
        request: PreparedRequest,
        key: str | None,
        on_delta: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        on_attempt: Callable[[int], None] | None = None,
        on_accepted: Callable[[], None] | None = None,
        on_request: Callable[[str, int | None, str | None], None] | None = None,
    ) -> ProviderReply:
        """Send ``request`` and stream the answer; see the module doc for the retry policy.

        ``on_attempt(n)`` runs before try ``n`` leaves; ``on_request(url, status, proxy)``
        for every HTTP request (``url`` as it goes out, ``status`` None just before it
        leaves, then its status; ``proxy`` the proxy it goes through, or None);
        ``on_accepted()`` once the provider answered 200 (from then on nothing is
        re-sent). The answer is cut at :data:`MAX_ANSWER_CHARS` (``reply.truncated``).
        """
        headers = dict(request.headers)
        if key and request.auth_header:
            logfilter.register_secret(key)
            headers[request.auth_header] = f"{request.auth_prefix}{key}"
        last: ProviderError | None = None
        for attempt in range(1, max(1, self.retry.attempts) + 1):
            if cancel is not None and cancel.is_set():
                raise transport.not_sent(Cancelled("Stopped before sending; nothing was sent."))
            if on_attempt:
                on_attempt(attempt)
            try:
                response, url = self._exchange(request, headers, on_request, cancel)
            except Retryable as retry:
                last = retry.error
                if attempt >= self.retry.attempts:
                    break
                wait = retry.wait
                if wait is not None and wait > self.retry.max_wait:
                    break  # the provider asks for longer than we wait: tell the user
                if wait is None:
                    wait = self.retry.backoff * (2 ** (attempt - 1)) * (0.75 + random.random() / 2)
                log.info("provider %s: %s; retrying in %.1f s", self.settings.name,
                         retry.error.message, wait)
                self._wait(wait, cancel)
                continue
            if on_accepted:
                on_accepted()
            text, finish, usage, truncated, notes = read_answer(self, response, on_delta,
                                                                cancel)
            return ProviderReply(text, finish, usage, attempt, truncated, url, tuple(notes))
        assert last is not None
        raise last

    def _wait(self, seconds: float, cancel: threading.Event | None) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        elif cancel is not None:
            if cancel.wait(seconds):
                raise Cancelled("Stopped while waiting to retry.")
        else:
            time.sleep(seconds)

    def _exchange(self, request: PreparedRequest, headers: dict[str, str],
                  on_request: Callable[[str, int | None, str | None], None] | None,
                  cancel: threading.Event | None = None) -> tuple[requests.Response, str]:
        """POST ``request``; follow a same-origin 307/308 only (see :mod:`.transport`).

        ``on_request(url, None, proxy)`` runs before each request leaves (``url`` as the
        HTTP client sends it), ``on_request(url, status, proxy)`` when its status line
        arrived.
        """
        url = request.url                # as url() prepared it; post() checks again
        for _ in range(MAX_SAME_ORIGIN_REDIRECTS + 1):
            proxy = transport.proxy_for(self.settings, url)
            if on_request:
                on_request(url, None, proxy)
            response = transport.post(self.http, url, request.body, headers, self.timeouts,
                                      self.settings.name, cancel=cancel, proxy=proxy)
            if on_request:
                on_request(url, response.status_code, proxy)
            if response.status_code not in REDIRECT_STATUSES:
                transport.check_status(response, self.settings)
                return response, url
            url = transport.redirect_target(response, url, request.url)
        raise ProviderError(
            f"{self.settings.name} redirected more than {MAX_SAME_ORIGIN_REDIRECTS} times.",
            "Check the provider's base URL.",
        )


@register_kind("chat")
class ChatCompletionsClient(ProviderClient):
    """``POST {base}/chat/completions`` with the task's chat messages."""

    endpoint = "chat/completions"

    def body(self, task: Task, document: str) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "messages": task.messages(document),
            "max_tokens": task.max_tokens,
            "stream": True,
        }

    def content_texts(self, body: dict[str, Any]) -> tuple[str, ...]:
        return tuple(m["content"] for m in body["messages"])

    def delta(self, event: dict[str, Any]) -> tuple[str, str | None]:
        choices = event.get("choices") or []
        if not choices:
            return "", None  # e.g. a usage-only event
        choice = choices[0]
        return (choice.get("delta") or {}).get("content") or "", choice.get("finish_reason")

    def whole(self, payload: dict[str, Any]) -> tuple[str, str | None]:
        choice = payload["choices"][0]
        return choice["message"].get("content") or "", choice.get("finish_reason")


@register_kind("completions")
class CompletionsClient(ProviderClient):
    """``POST {base}/completions`` with ``Task.completion_prompt`` (base models)."""

    endpoint = "completions"

    def body(self, task: Task, document: str) -> dict[str, Any]:
        return {
            "model": self.settings.model,
            "prompt": task.completion_prompt(document),
            "max_tokens": task.max_tokens,
            "stream": True,
        }

    def content_texts(self, body: dict[str, Any]) -> tuple[str, ...]:
        return (body["prompt"],)

    def delta(self, event: dict[str, Any]) -> tuple[str, str | None]:
        choices = event.get("choices") or []
        if not choices:
            return "", None
        return choices[0].get("text") or "", choices[0].get("finish_reason")

    def whole(self, payload: dict[str, Any]) -> tuple[str, str | None]:
        choice = payload["choices"][0]
        return choice.get("text") or "", choice.get("finish_reason")


__all__ = [
    "MAX_ANSWER_CHARS", "ChatCompletionsClient", "CompletionsClient", "PreparedRequest",
    "ProviderClient", "ProviderReply", "RetryPolicy", "StreamBroken", "Timeouts",
    "create_client", "provider_kinds", "register_kind",
]
