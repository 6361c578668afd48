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
"""

from __future__ import annotations

import codecs
import http.client
import json
import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3

from preflight import __version__
from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled, ConfigError, ProviderError
from preflight.core.send import logfilter
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


@dataclass(frozen=True)
class ProviderReply:
    text: str
    finish_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 1


class StreamBroken(ProviderError):
    """The provider accepted the request but the answer did not arrive whole.

    Not retried: the text was already disclosed once. ``partial`` holds what arrived.
    """

    def __init__(self, message: str, hint: str = "", partial: str = "") -> None:
        super().__init__(message, hint)
        self.partial = partial


class _Retryable(Exception):
    def __init__(self, error: ProviderError, wait: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


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
        self.http = http or requests.Session()
        # Proxies from the environment are honoured (corporate networks); loopback bypasses.
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
        base = self.settings.base_url.strip()
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"Provider '{self.settings.name}' has an invalid base URL '{base}'.",
                "Give the OpenAI-style base URL, e.g. https://api.openai.com/v1 or "
                "http://127.0.0.1:8080/v1.",
            )
        path = parts.path.rstrip("/")
        if not path:
            path = "/v1"  # local servers are often given as just host:port
        return urlunsplit((parts.scheme, parts.netloc, f"{path}/{self.endpoint}", parts.query, ""))

    def _is_azure(self) -> bool:
        host = (urlsplit(self.settings.base_url).hostname or "").lower()
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
    ) -> ProviderReply:
        """Send ``request`` and stream the answer; see the module doc for the retry policy.

        ``on_attempt(n)`` runs before try ``n`` leaves; ``on_accepted()`` once the provider
        answered 200 (from then on nothing is re-sent).
        """
        headers = dict(request.headers)
        if key and request.auth_header:
            logfilter.register_secret(key)
            headers[request.auth_header] = f"{request.auth_prefix}{key}"
        last: ProviderError | None = None
        for attempt in range(1, max(1, self.retry.attempts) + 1):
            if cancel is not None and cancel.is_set():
                raise Cancelled("Stopped before sending.")
            if on_attempt:
                on_attempt(attempt)
            try:
                response = self._post(request, headers)
                self._check_status(response)
            except _Retryable as retry:
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
            text, finish, usage = self._read(response, on_delta, cancel)
            return ProviderReply(text, finish, usage, attempt)
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

    def _post(self, request: PreparedRequest, headers: dict[str, str]) -> requests.Response:
        name = self.settings.name
        host = urlsplit(request.url).hostname or request.url
        try:
            return self.http.post(
                request.url, data=request.body, headers=headers, stream=True,
                timeout=(self.timeouts.connect, self.timeouts.read),
            )
        except requests.exceptions.SSLError:
            raise _not_sent(ProviderError(
                f"The secure connection to {host} failed (TLS certificate or handshake error).",
                "Check the base URL, the system clock, and any proxy that inspects HTTPS "
                "traffic (set REQUESTS_CA_BUNDLE to your company's CA bundle). Nothing was sent.",
            )) from None
        except requests.exceptions.ConnectTimeout:
            raise _Retryable(_not_sent(ProviderError(
                f"Connecting to {host} timed out after {self.timeouts.connect:g} s.",
                "Check the network connection and the base URL. Nothing was sent.",
            )), None) from None
        except requests.exceptions.ReadTimeout:
            raise ProviderError(
                f"{name} did not answer within {self.timeouts.read:g} s.",
                "The request may have reached the provider, so it was not re-sent "
                "automatically. Try again later, or send again yourself.",
            ) from None
        except requests.exceptions.ConnectionError as exc:
            detail = _root_cause(exc)
            if _is_dns_failure(detail):
                raise _not_sent(ProviderError(
                    f"The provider's host name {host} could not be resolved (DNS).",
                    "Check the base URL and your network or VPN. Nothing was sent.",
                )) from None
            if _before_request_written(exc):
                raise _Retryable(_not_sent(ProviderError(
                    f"Cannot connect to {host} ({detail}).",
                    "Check that the server is running and the base URL is right. "
                    "Nothing was sent.",
                )), None) from None
            raise ProviderError(
                f"The connection to {host} broke while sending ({detail}).",
                "The request may have reached the provider, so it was not re-sent "
                "automatically. Send again yourself if you want to.",
            ) from None
        except requests.exceptions.RequestException as exc:
            raise ProviderError(
                f"The request to {host} failed ({type(exc).__name__}).",
                "Check the provider's base URL.",
            ) from None

    def _check_status(self, response: requests.Response) -> None:
        status = response.status_code
        if status == 200:
            return
        try:
            detail = _error_detail(response)
        finally:
            response.close()
        name = self.settings.name
        said = f" The provider said: {detail}" if detail else ""
        if status == 401:
            raise ProviderError(
                f"{name} rejected the API key (HTTP 401).{said}",
                f"Check the key: preflight providers set-key {name}.",
            )
        if status == 403:
            raise ProviderError(
                f"{name} refused access (HTTP 403).{said}",
                "The key is valid but lacks permission for this model or region; check "
                "the account's access.",
            )
        if status == 404:
            raise ProviderError(
                f"{name} has no such endpoint or model (HTTP 404 for model "
                f"'{self.settings.model}').{said}",
                "Check the base URL (it usually ends in /v1) and the model name.",
            )
        if status == 413:
            raise ProviderError(
                f"The request is too large for {name} (HTTP 413).{said}",
                "Shorten the document or split it.",
            )
        if status == 429:
            wait = _retry_after(response)
            when = f" Retry after {wait:g} s." if wait is not None else ""
            raise _Retryable(ProviderError(
                f"{name} is rate-limiting requests (HTTP 429).{when}{said}",
                "Wait and try again, or check the account's quota.",
            ), wait)
        if 500 <= status < 600:
            raise _Retryable(ProviderError(
                f"{name} had a server error (HTTP {status}).{said}",
                "This is on the provider's side; try again later.",
            ), _retry_after(response))
        raise ProviderError(
            f"{name} refused the request (HTTP {status}).{said}",
            "Check the provider settings (model name, API style).",
        )

    def _read(
        self,
        response: requests.Response,
        on_delta: Callable[[str], None] | None,
        cancel: threading.Event | None,
    ) -> tuple[str, str | None, dict[str, int]]:
        name = self.settings.name
        parts: list[str] = []
        finish: str | None = None
        usage: dict[str, int] = {}
        ctype = response.headers.get("Content-Type", "")
        try:
            if "text/event-stream" not in ctype:
                return self._read_whole(response, on_delta)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            buffer = ""
            done = False
            for raw in _chunks(response):
                if cancel is not None and cancel.is_set():
                    raise Cancelled("Stopped while the answer was streaming.")
                buffer += decoder.decode(raw)
                while "\n" in buffer:
                    line, buffer = buffer.split("\n", 1)
                    line = line.rstrip("\r")
                    if not line.startswith("data:"):
                        continue  # comments, event names, blank separators
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        event = json.loads(data)
                    except ValueError:
                        raise StreamBroken(
                            f"{name} sent a malformed answer stream (not JSON).",
                            "The provider or a proxy in between broke the stream; it was not "
                            "re-sent automatically. Try again, or check the base URL.",
                            "".join(parts),
                        ) from None
                    if isinstance(event, dict) and "error" in event:
                        raise StreamBroken(
                            f"{name} reported an error mid-answer: "
                            f"{_short(event.get('error'))}",
                            "The request reached the provider; it was not re-sent.",
                            "".join(parts),
                        )
                    try:
                        text, reason = self.delta(event)
                    except (KeyError, IndexError, TypeError, AttributeError):
                        raise StreamBroken(
                            f"{name} sent an answer stream in an unexpected format.",
                            "Check the API style of the provider (chat or completions).",
                            "".join(parts),
                        ) from None
                    if isinstance(event.get("usage"), dict):
                        usage = {k: int(v) for k, v in event["usage"].items()
                                 if isinstance(v, (int, float))}
                    if text:
                        parts.append(text)
                        if on_delta:
                            on_delta(text)
                    if reason:
                        finish = reason
                if done:
                    break
            if not done and finish is None:
                raise StreamBroken(
                    f"The answer from {name} stopped before it was complete "
                    f"(the stream ended after {len(''.join(parts))} characters).",
                    "The request reached the provider, so it was not re-sent automatically. "
                    "Send again yourself if you want a complete answer.",
                    "".join(parts),
                )
        except (requests.exceptions.Timeout, urllib3.exceptions.ReadTimeoutError, TimeoutError):
            raise StreamBroken(
                f"{name} stopped sending for more than {self.timeouts.read:g} s mid-answer.",
                "The request reached the provider, so it was not re-sent automatically.",
                "".join(parts),
            ) from None
        except (requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ConnectionError,
                urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as exc:
            raise StreamBroken(
                f"The connection to {name} broke while the answer was streaming "
                f"({_root_cause(exc)}).",
                "The request reached the provider, so it was not re-sent automatically.",
                "".join(parts),
            ) from None
        except Cancelled as exc:
            exc.partial = "".join(parts)  # type: ignore[attr-defined]
            raise
        finally:
            response.close()
        return "".join(parts), finish, usage

    def _read_whole(
        self, response: requests.Response, on_delta: Callable[[str], None] | None
    ) -> tuple[str, str | None, dict[str, int]]:
        name = self.settings.name
        try:
            payload = response.json()
            text, finish = self.whole(payload)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise StreamBroken(
                f"{name} answered with something that is not an OpenAI-compatible reply "
                f"(Content-Type {response.headers.get('Content-Type', 'missing')}).",
                "Check the base URL: it should point at the API, not a web page or proxy login.",
            ) from None
        if text and on_delta:
            on_delta(text)
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        return text, finish, {k: int(v) for k, v in usage.items() if isinstance(v, (int, float))}


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


# --- helpers ---------------------------------------------------------------------------


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """Bytes as they arrive. Chunked responses yield per HTTP chunk; close-delimited ones
    (HTTP/1.0 servers, some proxies) via ``read1`` so a slow stream is not buffered whole."""
    raw = response.raw
    if getattr(raw, "chunked", False) or not hasattr(raw, "read1"):
        yield from response.iter_content(chunk_size=None)
        return
    while True:
        data = raw.read1(8192)
        if not data:
            return
        yield data


def _not_sent(error: ProviderError) -> ProviderError:
    """Mark an error raised before any byte of the request reached the provider."""
    error.delivered = False  # type: ignore[attr-defined]
    return error


def _root_cause(exc: BaseException) -> str:
    seen = exc
    while True:
        nxt = seen.__cause__ or seen.__context__
        if nxt is None and seen.args and isinstance(seen.args[0], BaseException):
            nxt = seen.args[0]
        if nxt is None and len(seen.args) > 1 and isinstance(seen.args[1], BaseException):
            nxt = seen.args[1]
        if nxt is None or nxt is seen:
            break
        seen = nxt
        reason = getattr(seen, "reason", None)
        if isinstance(reason, BaseException):
            seen = reason
    text = str(seen) or type(seen).__name__
    return logfilter.redact(text.split(": ", 1)[-1] if "object at 0x" in text else text)[:160]


def _is_dns_failure(detail: str) -> bool:
    lowered = detail.lower()
    return any(s in lowered for s in (
        "name or service not known", "nodename nor servname", "getaddrinfo failed",
        "temporary failure in name resolution", "failed to resolve", "no address associated",
        "name resolution",
    ))


def _before_request_written(exc: requests.exceptions.ConnectionError) -> bool:
    """True when the connection failed while being opened (refused, unreachable)."""
    import urllib3.exceptions as u3

    cur: BaseException | None = exc
    seen = set()
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (u3.NewConnectionError, u3.ConnectTimeoutError,
                            ConnectionRefusedError)):
            return True
        if isinstance(cur, u3.ProtocolError):
            return False  # 'Connection aborted': the request was (at least partly) written
        nxt = getattr(cur, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = cur.args[0] if cur.args and isinstance(cur.args[0], BaseException) else None
        cur = nxt or cur.__cause__ or cur.__context__
    return False


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _error_detail(response: requests.Response) -> str:
    try:
        raw = response.raw.read(4096, decode_content=True) if response.raw else b""
    except Exception:  # noqa: BLE001 - the status code alone is enough to report
        return ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        payload = json.loads(text)
        if isinstance(payload, dict):
            err = payload.get("error", payload.get("detail", payload.get("message", payload)))
            return _short(err)
    except ValueError:
        pass
    return _short(text)


def _short(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("message") or json.dumps(value, ensure_ascii=False)
    text = " ".join(str(value).split())
    return logfilter.redact(text[:200] + ("…" if len(text) > 200 else ""))
