"""Reading a provider's answer: OpenAI-style server-sent events, or one JSON reply.

Reading is linear in the size of the answer and bounded: at most
:data:`MAX_ANSWER_CHARS` characters of answer text are kept (the rest is not read and the
reply says ``truncated``), one SSE line may hold at most :data:`MAX_LINE_CHARS`
characters, and bytes are read in pieces of :data:`READ_CHUNK_BYTES` however large the
server's HTTP chunks are. A provider (or a proxy) that sends a huge answer costs a few
MiB of memory and a second of CPU, never gigabytes.

Every piece of answer text passes through :class:`~.answer_guard.AnswerGuard` here, the
one place answers enter: terminal control and text-direction sequences are removed and
stored secrets redacted before a face, the audit log or an export sees them.
"""

from __future__ import annotations

import codecs
import http.client
import json
import logging
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

import requests
import urllib3

from preflight.core.errors import Cancelled
from preflight.core.send.answer_guard import AnswerGuard
from preflight.core.send.transport import StreamBroken, plain_cause, root_cause, short

if TYPE_CHECKING:
    from preflight.core.send.providers import ProviderClient

MAX_ANSWER_CHARS = 1 << 20          # 1 MiB of answer text; more is cut off
MAX_LINE_CHARS = 4 * MAX_ANSWER_CHARS  # one SSE line (one event's JSON)
MAX_WHOLE_BYTES = 4 * MAX_ANSWER_CHARS  # a non-streamed JSON reply
READ_CHUNK_BYTES = 64 * 1024
CANCEL_POLL_S = 0.05     # how soon a cancelled stream's connection is shut
STOPPED = "Stopped while the answer was streaming."
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProviderReply:
    text: str
    finish_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 1
    truncated: bool = False     # the answer exceeded MAX_ANSWER_CHARS and was cut off
    url: str = ""               # where the answer came from (after same-origin redirects)
    notes: tuple[str, ...] = ()  # what the answer guard removed or redacted


class _LineTooLong(Exception):
    pass


class SSELines:
    """Incremental line splitter: each character is scanned once, whatever the chunking.

    A line still incomplete is kept as a list of pieces (never re-concatenated per
    chunk), and a line longer than ``max_line`` raises instead of growing without bound.
    """

    def __init__(self, max_line: int = MAX_LINE_CHARS) -> None:
        self._pieces: list[str] = []
        self._pending = 0
        self._max = max_line

    def feed(self, text: str) -> list[str]:
        if "\n" not in text:
            if text:
                self._pieces.append(text)
                self._pending += len(text)
                if self._pending > self._max:
                    raise _LineTooLong
            return []
        lines = text.split("\n")
        lines[0] = "".join(self._pieces) + lines[0]
        tail = lines.pop()
        self._pieces = [tail] if tail else []
        self._pending = len(tail)
        if any(len(line) > self._max for line in lines) or self._pending > self._max:
            raise _LineTooLong
        return [line[:-1] if line.endswith("\r") else line for line in lines]


class _Answer:
    """The answer so far, cut at MAX_ANSWER_CHARS (counted as received) and passed through
    an :class:`~.answer_guard.AnswerGuard`: no control sequence or stored secret of the
    provider's text reaches ``on_delta``, the reply or a partial answer."""

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.truncated = False
        self.guard = AnswerGuard()
        self._on_delta = on_delta
        self._closed = False

    def add(self, text: str) -> None:
        room = MAX_ANSWER_CHARS - self.size
        if len(text) > room:
            text, self.truncated = text[:room], True
        if text:
            self.size += len(text)
            self._emit(self.guard.feed(text))

    def close(self) -> None:
        """The end of the answer: what the guard held back (an incomplete sequence, the
        start of what might have been a key) goes out filtered."""
        if not self._closed:
            self._closed = True
            self._emit(self.guard.flush())

    def _emit(self, text: str) -> None:
        if text:
            self.parts.append(text)
            if self._on_delta:
                self._on_delta(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def read_answer(
    client: "ProviderClient",
    response: requests.Response,
    on_delta: Callable[[str], None] | None,
    cancel: threading.Event | None,
) -> tuple[str, str | None, dict[str, int], bool, list[str]]:
    """(text, finish_reason, usage, truncated, notes) of ``response``; closes it.

    ``text`` (and every delta, and the ``partial`` of an error) is guarded (see
    :class:`_Answer`); ``notes`` says what the guard removed or redacted. Setting
    ``cancel`` stops the reading within :data:`CANCEL_POLL_S` even while the provider
    sends nothing: the connection is shut, which wakes the blocked read, and
    :class:`Cancelled` (with ``partial``, the answer so far) is raised."""
    answer = _Answer(on_delta)
    try:
        with _CloseOnCancel(response, cancel):
            finish, usage = _read(client, response, answer, cancel)
        answer.close()
        return answer.text, finish, usage, answer.truncated, answer.guard.notes()
    except (Cancelled, StreamBroken) as exc:
        try:
            answer.close()
        except Exception:  # noqa: BLE001 - the error the user must see is ``exc``
            pass
        exc.partial = answer.text  # type: ignore[attr-defined]
        raise
    finally:
        response.close()


def _read(
    client: "ProviderClient", response: requests.Response, answer: _Answer,
    cancel: threading.Event | None,
) -> tuple[str | None, dict[str, int]]:
    name = client.settings.name
    try:
        if "text/event-stream" not in response.headers.get("Content-Type", ""):
            return _read_whole(client, response, answer)
        finish, usage, done = _read_events(client, response, answer, cancel)
        if cancel is not None and cancel.is_set():
            raise Cancelled(STOPPED)     # the shut connection ended the stream
        if not done and finish is None and not answer.truncated:
            raise StreamBroken(
                f"The answer from {name} stopped before it was complete "
                f"(the stream ended after {answer.size} characters).",
                "The request reached the provider, so it was not re-sent automatically. "
                "Send again yourself if you want a complete answer.",
            )
        return finish, usage
    except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError,
            requests.exceptions.Timeout, urllib3.exceptions.HTTPError,
            http.client.HTTPException, OSError) as exc:
        if cancel is not None and cancel.is_set():
            raise Cancelled(STOPPED) from None
        if is_read_timeout(exc):
            raise StreamBroken(
                f"The provider ({name}) stopped sending for {client.timeouts.read:g} s "
                "in the middle of the answer.",
                "The request reached the provider, so it was not re-sent automatically. "
                "Try again later, or send again yourself.",
                answer.text,
            ) from None
        log.info("the answer from %s broke off: %s", name, root_cause(exc))
        raise StreamBroken(
            f"The answer from {name} broke off while it was arriving: {plain_cause(exc)}.",
            "The request reached the provider, so it was not re-sent automatically.",
            answer.text,
        ) from None


class _CloseOnCancel:
    """While reading: a watcher shuts the response's socket once ``cancel`` is set, so a
    read blocked on a provider that sends nothing returns at once (closing the response
    from another thread does not wake a blocked ``recv``; ``shutdown`` does)."""

    def __init__(self, response: requests.Response, cancel: threading.Event | None) -> None:
        self._response = response
        self._cancel = cancel
        self._done = threading.Event()

    def __enter__(self) -> "_CloseOnCancel":
        if self._cancel is not None:
            threading.Thread(target=self._watch, name="preflight-stream-cancel",
                             daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def _watch(self) -> None:
        assert self._cancel is not None
        while not self._done.wait(CANCEL_POLL_S):
            if self._cancel.is_set():
                sock = _socket_of(self._response)
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass          # already closed: the read has ended anyway
                return


def _socket_of(response: requests.Response) -> socket.socket | None:
    """The socket under a streamed ``requests`` response (urllib3 2 or http.client)."""
    raw = response.raw
    conn = getattr(raw, "_connection", None)
    sock = getattr(conn, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def _read_events(
    client: "ProviderClient", response: requests.Response, answer: _Answer,
    cancel: threading.Event | None,
) -> tuple[str | None, dict[str, int], bool]:
    name = client.settings.name
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = SSELines()
    finish: str | None = None
    usage: dict[str, int] = {}
    for raw in _chunks(response):
        if cancel is not None and cancel.is_set():
            raise Cancelled(STOPPED)
        try:
            batch = lines.feed(decoder.decode(raw))
        except _LineTooLong:
            answer.truncated = True
            return finish, usage, False
        for line in batch:
            if not line.startswith("data:"):
                continue  # comments, event names, blank separators
            data = line[5:].strip()
            if data == "[DONE]":
                return finish, usage, True
            try:
                event = json.loads(data)
            except (ValueError, RecursionError):     # RecursionError: nested too deeply
                raise StreamBroken(
                    f"{name} sent a malformed answer stream (not JSON).",
                    "The provider or a proxy in between broke the stream; it was not "
                    "re-sent automatically. Try again, or check the base URL.",
                    answer.text,
                ) from None
            if isinstance(event, dict) and "error" in event:
                raise StreamBroken(
                    f"{name} reported an error mid-answer: {short(event.get('error'))}",
                    "The request reached the provider; it was not re-sent.", answer.text,
                )
            try:
                text, reason = client.delta(event)
            except (KeyError, IndexError, TypeError, AttributeError):
                raise StreamBroken(
                    f"{name} sent an answer stream in an unexpected format.",
                    "Check the API style of the provider (chat or completions).",
                    answer.text,
                ) from None
            if isinstance(event.get("usage"), dict):
                usage = _usage(event["usage"])
            answer.add(text)
            if reason:
                finish = reason
            if answer.truncated:
                return finish, usage, False
    return finish, usage, False


def _read_whole(
    client: "ProviderClient", response: requests.Response, answer: _Answer
) -> tuple[str | None, dict[str, int]]:
    name = client.settings.name
    body = bytearray()
    for raw in _chunks(response):
        body += raw
        if len(body) > MAX_WHOLE_BYTES:
            raise StreamBroken(
                f"{name} answered with a single reply larger than "
                f"{MAX_WHOLE_BYTES // (1 << 20)} MiB; it was not read.",
                "The request reached the provider. Check the base URL and the model's "
                "max_tokens.",
            )
    try:
        payload = json.loads(bytes(body).decode("utf-8", "replace"))
        text, finish = client.whole(payload)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        raise StreamBroken(
            f"{name} answered with something that is not an OpenAI-compatible reply "
            f"(Content-Type {response.headers.get('Content-Type', 'missing')}).",
            "Check the base URL: it should point at the API, not a web page or proxy login.",
        ) from None
    answer.add(text)
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return finish, _usage(usage)


def _usage(raw: dict[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in raw.items() if isinstance(v, (int, float))}


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """Bytes as they arrive, at most READ_CHUNK_BYTES at a time. Chunked responses yield
    per HTTP chunk (split when larger); close-delimited ones (HTTP/1.0 servers, some
    proxies) via ``read1`` so a slow stream is not buffered whole."""
    raw = response.raw
    if getattr(raw, "chunked", False) or not hasattr(raw, "read1"):
        yield from response.iter_content(chunk_size=READ_CHUNK_BYTES)
        return
    while True:
        data = raw.read1(READ_CHUNK_BYTES)
        if not data:
            return
        yield data


def is_read_timeout(exc: BaseException) -> bool:
    """True when ``exc`` (or what it wraps) is a read timeout: the server went silent."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        cur = stack.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, (urllib3.exceptions.ReadTimeoutError, socket.timeout,
                            TimeoutError, requests.exceptions.ReadTimeout)):
            return True
        for nxt in (cur.__cause__, cur.__context__, getattr(cur, "reason", None), *cur.args):
            if isinstance(nxt, BaseException):
                stack.append(nxt)
    return False
