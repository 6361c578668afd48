"""Keep API keys out of every log line.

``redact(text)`` replaces anything key-shaped (``sk-…``, ``Bearer …``, AWS access key
ids ``AKIA…``, long high-entropy tokens) and every key value registered with
:func:`register_secret` by ``[REDACTED]``. :func:`install` puts a
:class:`RedactingFilter` on the root logger and its handlers, and wraps the LogRecord
factory: filters on the root *logger* do not see records that child loggers propagate
to root's handlers, so the factory is what makes the guarantee hold for every logger.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter

REDACTED = "[REDACTED]"

# Shapes of credentials. Order matters only for readability; all are applied.
_PATTERNS = (
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),          # Google API keys (Gemini)
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),       # GitHub tokens
    re.compile(r"(?i)\b(api[-_]?key|x-api-key|authorization)([\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{6,}"),
)
# Candidates for the entropy test: long runs of token characters.
_TOKEN = re.compile(r"[A-Za-z0-9_+/=.-]{32,}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_MIN_ENTROPY_BITS = 3.5  # per character; English words and hex hashes of text sit lower/near

_lock = threading.Lock()
_known: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember an exact key value so it is redacted even when it is not key-shaped."""
    if value and len(value) >= 4:
        with _lock:
            _known.add(value)


def known_secrets() -> tuple[str, ...]:
    """Every exact secret value registered in this process (keys, stored secrets)."""
    with _lock:
        return tuple(_known)


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    # A path or a dotted name is not a key; a key mixes classes and has high entropy.
    if token.count("/") > 2 or token.count(".") > 2:
        return False
    if _DIGEST.fullmatch(token):
        return False  # a SHA-256 hex digest (model checks, document hashes) is not a key
    classes = sum(
        bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]")
    )
    return classes >= 2 and _entropy(token) >= _MIN_ENTROPY_BITS


def redact(text: str) -> str:
    """``text`` with every key-shaped substring and every registered key replaced."""
    if not text:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        if pattern.groups >= 2:
            text = pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
        else:
            text = pattern.sub(REDACTED, text)
    return _TOKEN.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), text)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (and exception text) with :func:`redact`; never drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        _scrub(record)
        return True


def _scrub(record: logging.LogRecord) -> None:
    if getattr(record, "_preflight_redacted", False):
        return
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string must not break logging
        message = str(record.msg)
    record.msg = redact(message)
    record.args = None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    record._preflight_redacted = True  # type: ignore[attr-defined]


_installed = False
_FILTER = RedactingFilter()


def install() -> None:
    """Install redaction for the whole process (idempotent)."""
    global _installed
    root = logging.getLogger()
    if _FILTER not in root.filters:
        root.addFilter(_FILTER)
    for handler in root.handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs):  # type: ignore[no-untyped-def]
            record = previous(*args, **kwargs)
            # Only records that may be emitted pay for formatting.
            if logging.getLogger(record.name).isEnabledFor(record.levelno):
                _scrub(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
