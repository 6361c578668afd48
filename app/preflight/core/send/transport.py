"""How a request leaves and what the provider's HTTP answer means.

Promises kept here:

- **Only the confirmed origin.** Requests go out with ``allow_redirects=False``. A
  redirect to another origin (scheme, host or port) is never followed: the payload and
  the key header stay with the provider the user confirmed, and the error names where the
  provider pointed. A same-origin 307/308 (method and body kept) may be followed; the
  caller records every URL a request really went to.
- **One reading of every address.** Each request's URL, and each redirect target, is read
  as the HTTP client will read it (:mod:`.destination`); an address the readings disagree
  on is never contacted. Which addresses a provider may use at all (cleartext, proxies)
  is decided in :mod:`.route`.
- **Honest delivery state.** Errors raised before a byte left carry ``delivered=False``;
  an HTTP error status carries ``delivered=True`` and ``http_status`` (the body reached
  the server even though it refused it).
"""

from __future__ import annotations

import html
import json
import logging
import re
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import urljoin

import requests
import urllib3.exceptions as u3

from preflight.core.config import ProviderSettings
from preflight.core.errors import PreflightError, ProviderError
from preflight.core.send import inflight, logfilter
from preflight.core.send.answer_guard import neutralize
from preflight.core.send.destination import (  # noqa: F401 - the names callers import here
    Destination, UnclearURL, destination, is_loopback_host, origin, shown_url,
)
from preflight.core.send.route import (  # noqa: F401
    check_cleartext, cleartext_host, cleartext_warning, harden, new_session,
    provider_destination, proxy_for, proxy_notice,
)

show_origin_url = shown_url
log = logging.getLogger(__name__)

REDIRECT_STATUSES = (301, 302, 303, 307, 308)
MAX_SAME_ORIGIN_REDIRECTS = 3
_E = TypeVar("_E", bound=PreflightError)


class StreamBroken(ProviderError):
    """The provider accepted the request but the answer did not arrive whole.

    Not retried: the text was already disclosed once. ``partial`` holds what arrived.
    """

    def __init__(self, message: str, hint: str = "", partial: str = "") -> None:
        super().__init__(message, hint)
        self.partial = partial


class Retryable(Exception):
    def __init__(self, error: ProviderError, wait: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


# --- one request ---------------------------------------------------------------------------


def post(http: requests.Session, url: str, body: bytes | None, headers: dict[str, str],
         timeouts: Any, name: str, method: str = "POST",
         cancel: threading.Event | None = None, proxy: str | None = None) -> requests.Response:
    """One request (a POST unless ``method`` says otherwise: the connection test's GET)
    that never follows a redirect; errors become ProviderError/Retryable.

    ``url`` must be plain (:func:`.destination.destination`), else nothing leaves.
    ``proxy`` (from :func:`proxy_for`) is the only proxy used: ``http`` is expected to be
    :func:`harden`-ed, so the environment adds none. With ``cancel``, setting it stops
    the request within a second even before the provider answered (see
    :mod:`.inflight`): :class:`Cancelled` says whether it left."""
    try:
        host = destination(url).host
    except UnclearURL as exc:
        raise not_sent(ProviderError(
            f"Preflight refused to send to {shown_url(url)}: {exc.reason}.",
            "Check the provider's base URL. Nothing was sent.",
        )) from None
    proxies = {"https": proxy} if proxy else {}

    def request() -> requests.Response:
        return http.request(method, url, data=body, headers=headers, stream=True,
                            allow_redirects=False, timeout=(timeouts.connect, timeouts.read),
                            proxies=proxies)

    try:
        if cancel is None:
            return request()
        return inflight.call(request, cancel, name, discard=lambda r: r.close())
    except requests.exceptions.SSLError:
        raise not_sent(ProviderError(
            f"The secure connection to {host} failed (TLS certificate or handshake error).",
            "Check the base URL, the system clock, and any proxy that inspects HTTPS "
            "traffic (set REQUESTS_CA_BUNDLE to your company's CA bundle). Nothing was sent.",
        )) from None
    except requests.exceptions.ConnectTimeout:
        raise Retryable(not_sent(ProviderError(
            f"Connecting to {host} timed out after {timeouts.connect:g} s.",
            "Check the network connection and the base URL. Nothing was sent.",
        )), None) from None
    except requests.exceptions.ReadTimeout:
        raise ProviderError(
            f"{name} did not answer within {timeouts.read:g} s.",
            "The request may have reached the provider, so it was not re-sent "
            "automatically. Try again later, or send again yourself.",
        ) from None
    except requests.exceptions.ConnectionError as exc:
        detail = root_cause(exc)
        log.info("request to %s failed: %s", host, detail)   # the technical detail
        if _is_dns_failure(detail):
            raise not_sent(ProviderError(
                f"Preflight could not find the provider's server {host} (its name is "
                "unknown to the network).",
                "Check the base URL and your network or VPN. Nothing was sent.",
            )) from None
        if _before_request_written(exc):
            raise Retryable(not_sent(ProviderError(
                f"Preflight could not reach {host}: {plain_cause(exc)}.",
                "Check that the server is running, the base URL is right and the network "
                "is up. Nothing was sent.",
            )), None) from None
        raise ProviderError(
            f"The connection to {host} broke while sending: {plain_cause(exc)}.",
            "The request may have reached the provider, so it was not re-sent "
            "automatically. Send again yourself if you want to.",
        ) from None
    except requests.exceptions.RequestException as exc:
        log.info("request to %s failed: %s", host, root_cause(exc))
        raise ProviderError(
            f"The request to {host} failed before an answer came back.",
            "Check the provider's base URL.",
        ) from None


def redirect_target(response: requests.Response, url: str, confirmed_url: str) -> str:
    """Where a 3xx points, if it may be followed: a 307/308 to the very origin the user
    confirmed, as the HTTP client reads it (the URL returned is the one that goes out).
    Otherwise a ProviderError (the body reached the provider, nothing reached the
    target)."""
    status = response.status_code
    location = response.headers.get("Location", "")
    response.close()
    target = urljoin(url, location) if location else ""
    try:
        dest: Destination | None = destination(target) if target else None
        unclear = ""
    except UnclearURL as exc:
        dest, unclear = None, exc.reason
    if dest is not None and dest.origin == origin(confirmed_url) and status in (307, 308):
        return dest.url
    if unclear:
        error = ProviderError(
            f"The provider redirected to an address Preflight will not follow "
            f"({shown_url(target)}: {unclear}); nothing was sent there.",
            "Check the provider's base URL (use the address the provider really serves "
            "from, with https://).",
        )
    elif dest is None or dest.origin != origin(confirmed_url):
        shown = shown_url(target) if target else "an unnamed location"
        error = ProviderError(
            f"The provider redirected to {shown}; nothing was sent there.",
            "Check the provider's base URL (use the address the provider really serves "
            "from, with https://).",
        )
    else:
        error = ProviderError(
            f"The provider redirected (HTTP {status}) to {shown_url(target)} and asked to "
            "change the request; it was not followed.",
            "Check the provider's base URL.",
        )
    raise _delivered(error, status)


def check_status(response: requests.Response, settings: ProviderSettings) -> None:
    """Return on 200; otherwise close ``response`` and raise what the status means."""
    status = response.status_code
    if status == 200:
        return
    try:
        detail = _error_detail(response)
    finally:
        response.close()
    name = settings.name
    said = f" The provider said: “{detail.rstrip('.')}”." if detail else ""
    if status == 401:
        raise _delivered(ProviderError(
            f"{name} rejected the API key (HTTP 401).{said}",
            "Check the provider's API key.", fix="set-key", subject=name,
        ), status)
    if status == 403:
        raise _delivered(ProviderError(
            f"{name} refused access (HTTP 403).{said}",
            "The key is valid but lacks permission for this model or region; check "
            "the account's access.",
        ), status)
    if status == 404:
        raise _delivered(ProviderError(
            f"{name} has no such endpoint or model (HTTP 404 for model "
            f"'{settings.model}').{said}",
            "Check the base URL (it usually ends in /v1) and the model name.",
        ), status)
    if status == 413:
        raise _delivered(ProviderError(
            f"The request is too large for {name} (HTTP 413).{said}",
            "Shorten the document or split it.",
        ), status)
    if status == 429:
        wait = _retry_after(response)
        when = f" Retry after {wait:g} s." if wait is not None else ""
        raise Retryable(_delivered(ProviderError(
            f"{name} is rate-limiting requests (HTTP 429).{when}{said}",
            "Wait and try again, or check the account's quota.",
        ), status), wait)
    if 500 <= status < 600:
        raise Retryable(_delivered(ProviderError(
            f"{name} had a server error (HTTP {status}).{said}",
            "This is on the provider's side; try again later.",
        ), status), _retry_after(response))
    raise _delivered(ProviderError(
        f"{name} refused the request (HTTP {status}).{said}",
        "Check the provider settings (model name, API style).",
    ), status)


# --- helpers -------------------------------------------------------------------------------


def not_sent(error: _E) -> _E:
    """Mark an error raised before any byte of the request reached the provider."""
    error.delivered = False  # type: ignore[attr-defined]
    return error


def _delivered(error: ProviderError, status: int) -> ProviderError:
    """Mark an error the provider answered with: the body reached it."""
    error.delivered = True  # type: ignore[attr-defined]
    error.http_status = status  # type: ignore[attr-defined]
    return error


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions behind it (causes, contexts, urllib3 reasons)."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not e for e in out):
        out.append(cur)
        nxt = getattr(cur, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = next((a for a in cur.args if isinstance(a, BaseException)), None)
        cur = nxt or cur.__cause__ or cur.__context__
    return out


def plain_cause(exc: BaseException) -> str:
    """Why a connection failed, in the user's words (the technical detail goes to the
    log: ``[Errno 111]``, ``invalid literal for int() with base 16`` mean nothing to a
    reader)."""
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "nothing answered at that address (the connection was refused)"
    if any(isinstance(e, ConnectionResetError) for e in chain) or "reset by peer" in text:
        return "the server closed the connection abruptly"
    if any(isinstance(e, (TimeoutError, u3.TimeoutError)) for e in chain):
        return "the server stopped responding"
    if any(isinstance(e, (u3.ProtocolError, requests.exceptions.ChunkedEncodingError,
                          ValueError)) for e in chain) or "broken" in text:
        return "the connection closed before the answer was complete"
    if "unreachable" in text:
        return "the network or the server cannot be reached from this computer"
    return "the network connection failed"


def root_cause(exc: BaseException) -> str:
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
            return short(err)
    except (ValueError, RecursionError):
        pass
    if "<" in text and ">" in text:      # an HTML error page: its words, not its markup
        text = html.unescape(re.sub(r"(?is)<(script|style)\b.*?</\1>|<[^>]*>", " ", text))
    return short(text)


def short(value: Any) -> str:
    """What the provider said, for a one-line message: plain text (no control sequence
    reaches the terminal), keys redacted, at most 200 characters."""
    if isinstance(value, dict):
        value = value.get("message") or json.dumps(value, ensure_ascii=False)
    text = " ".join(neutralize(str(value)).split())
    return logfilter.redact(text[:200] + ("…" if len(text) > 200 else ""))
