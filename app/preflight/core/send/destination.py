"""Where a request really goes: one reading of a URL, the HTTP client's own.

``requests`` rewrites a URL before it connects (``PreparedRequest.prepare_url``: IDNA,
percent-encoding of a backslash, a port's leading zeros dropped), and its adapter then
takes the host and port from that prepared URL. A check that reads the *written* URL with
another parser can name one host while the bytes go to another: ``http://a:1\\@b:2/``
is host ``b`` to :func:`urllib.parse.urlsplit` and host ``a`` to ``requests``.

:func:`destination` therefore prepares the URL exactly as ``requests`` will, reads the
prepared URL with the adapter's parser and with urllib3's, and refuses the URL
(:class:`UnclearURL`) unless every reading — the written one included — names the same
scheme, host and port. It also refuses what has no business in a provider's address even
when the readings agree: a backslash, user name or password, control, space or invisible
characters, a non-ASCII host (write the ``xn--`` form), a percent sign in the host, a
numeric host other than a plain dotted IPv4 address (``2130706433``, ``0177.0.0.1``), a
trailing dot, an IPv6 zone, a port with a sign or leading zeros, a ``.``/``..`` path
segment (``%2e`` included: the URL on the wire would differ from the one audited).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from urllib3.util import parse_url

from preflight.core.send import logfilter

DEFAULT_PORTS = {"http": 80, "https": 443}
_PORT = re.compile(r"[1-9][0-9]{0,4}")
# WHATWG: a host whose last label is a number is read as an IPv4 address in any base.
_NUMERIC_LABEL = re.compile(r"(?i)[0-9]+|0x[0-9a-f]*")
_DOT_SEGMENT = re.compile(r"(?i)(?:\.|%2e){1,2}")


class UnclearURL(ValueError):
    """A URL whose destination is not one plain scheme://host:port; ``reason`` says why."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(reason)
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class Destination:
    """Where ``requests`` connects for a URL, and the URL exactly as it goes out."""

    scheme: str          # "http" | "https"
    host: str            # lower case; an IPv6 address without brackets, compressed
    port: int            # explicit or the scheme's default
    url: str             # the prepared URL (what the request line and the audit carry)

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def netloc(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def shown(self) -> str:
        """``scheme://host:port/path`` (the query may carry tokens: left out)."""
        return f"{self.scheme}://{self.netloc}{urlsplit(self.url).path or '/'}"


def destination(url: str) -> Destination:
    """Where a request to ``url`` really goes; :class:`UnclearURL` when that is not plain."""
    if not isinstance(url, str) or not url:
        raise UnclearURL(str(url), "it is empty")
    bad = next((ch for ch in url if _hidden(ch)), None)
    if bad is not None:
        raise UnclearURL(url, f"it contains an invisible or control character "
                              f"(U+{ord(bad):04X})")
    if "\\" in url:
        raise UnclearURL(url, "it contains a backslash, which HTTP clients read differently")
    written = urlsplit(url)
    scheme = written.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise UnclearURL(url, "it is not an http:// or https:// address")
    netloc = written.netloc
    if "@" in netloc:
        raise UnclearURL(url, "it carries a user name or password before the host")
    if not netloc.isascii():
        raise UnclearURL(url, "its host is not written in ASCII (write the xn-- form)")
    if "%" in netloc:
        raise UnclearURL(url, "its host contains a percent sign (encoded characters or an "
                              "IPv6 zone)")
    if any(_DOT_SEGMENT.fullmatch(seg) for seg in written.path.split("/")):
        raise UnclearURL(url, "its path has '.' or '..' segments, which clients and servers "
                              "resolve differently")
    host, port_text = _split_netloc(url, netloc)
    host = _plain_host(url, host)
    port = _port(url, port_text, scheme)
    try:
        prepared = requests.PreparedRequest()
        prepared.prepare_url(url, None)
        sent = prepared.url or ""
    except (requests.exceptions.RequestException, ValueError) as exc:
        raise UnclearURL(url, f"the HTTP client cannot read it ({type(exc).__name__})") \
            from None
    readings = {(scheme, host, port)}
    adapter = urlsplit(sent)                      # what requests' adapter connects to
    try:
        readings.add((adapter.scheme.lower(), _unbracket(adapter.hostname or ""),
                      adapter.port or DEFAULT_PORTS.get(adapter.scheme.lower(), 0)))
        lib = parse_url(sent)                     # urllib3's own reading
    except ValueError as exc:
        raise UnclearURL(url, f"the HTTP client cannot read it ({exc})") from None
    lib_scheme = (lib.scheme or "").lower()
    readings.add((lib_scheme, _unbracket(lib.host or ""),
                  lib.port or DEFAULT_PORTS.get(lib_scheme, 0)))
    if len(readings) != 1 or lib.auth or adapter.username is not None:
        raise UnclearURL(url, "the HTTP client would connect to another host or port than "
                              "the address shows")
    return Destination(scheme, host, port, sent)


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) a request to ``url`` really connects to (see
    :func:`destination`); ``("", "", 0)`` for a URL whose destination is not plain, which
    therefore matches no origin."""
    try:
        return destination(url).origin
    except UnclearURL:
        return "", "", 0


def shown_url(url: str) -> str:
    """A URL for a message: ``scheme://host:port/path`` when it is plain, else the written
    text with every control or invisible character escaped (cut, keys redacted)."""
    try:
        return logfilter.redact(destination(url).shown())
    except UnclearURL:
        escaped = ascii(url)[1:-1]
        return logfilter.redact(escaped[:120] + ("…" if len(escaped) > 120 else ""))


def is_loopback_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _hidden(ch: str) -> bool:
    # Cc: C0/C1 controls incl. tab, CR, LF, ESC; Cf: bidi, zero-width; Z*: any space.
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Co",
                                                         "Cn")


def _split_netloc(url: str, netloc: str) -> tuple[str, str | None]:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise UnclearURL(url, "its IPv6 address has no closing bracket")
        rest = netloc[end + 1:]
        if rest and not rest.startswith(":"):
            raise UnclearURL(url, "something follows its IPv6 address")
        return netloc[:end + 1], (rest[1:] if rest else None)
    host, sep, port = netloc.partition(":")
    return host, (port if sep else None)


def _plain_host(url: str, host: str) -> str:
    if not host:
        raise UnclearURL(url, "it names no host")
    if host.startswith("["):
        try:
            address = ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise UnclearURL(url, "its IPv6 address is not valid") from None
        return address.compressed
    host = host.lower()
    if host.endswith("."):
        raise UnclearURL(url, "its host ends in a dot")
    labels = host.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            address = None
        if address is None or str(address) != host:
            raise UnclearURL(url, "its host is a number written in an unusual form (use "
                                  "the dotted address, e.g. 127.0.0.1)")
        return host
    if not all(re.fullmatch(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?", label) for label in labels):
        raise UnclearURL(url, "its host name contains characters a host name cannot have")
    return host


def _port(url: str, text: str | None, scheme: str) -> int:
    if text is None:
        return DEFAULT_PORTS[scheme]
    if not _PORT.fullmatch(text) or int(text) > 65535:
        raise UnclearURL(url, f"its port '{text}' is not a plain number from 1 to 65535")
    return int(text)


def _unbracket(host: str) -> str:
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host).compressed
        except ValueError:
            return host
    return host
