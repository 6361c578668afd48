"""Qt-free presentation helpers: span bookkeeping, privacy indicators, offset conversion
between Python strings (code points) and Qt documents (UTF-16 units), cost text, the
utility curve's ε grid and the (message, hint) of a failure.

Kept free of Qt so they are unit-tested without a display (and usable by any face).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Sequence

from preflight.core.errors import PreflightError
from preflight.core.types import SanitizedText, Span

if TYPE_CHECKING:   # the learner's module loads numpy and scikit-learn glue
    from preflight.core.utility.flow import CalibrationStatus


# --- offsets ------------------------------------------------------------------------------
class Utf16Map:
    """Code-point offsets of a Python string ↔ UTF-16 offsets of the same text in Qt.

    Characters outside the Basic Multilingual Plane (emoji) take two UTF-16 units; for
    texts without them both offsets are equal and no table is built.
    """

    def __init__(self, text: str) -> None:
        self._astral: list[int] = [i for i, ch in enumerate(text) if ord(ch) > 0xFFFF] \
            if not text.isascii() else []

    @property
    def identity(self) -> bool:
        return not self._astral

    def to_qt(self, cp: int) -> int:
        if not self._astral:
            return cp
        return cp + bisect.bisect_left(self._astral, cp)

    def to_py(self, u16: int) -> int:
        if not self._astral:
            return u16
        # find cp with to_qt(cp) <= u16, largest
        lo, hi = 0, u16
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.to_qt(mid) <= u16:
                lo = mid
            else:
                hi = mid - 1
        return lo


# --- spans --------------------------------------------------------------------------------
def span_key(span: Span, text: str) -> tuple[str, str]:
    """Identity of a detection that survives edits and re-detection: (type, value)."""
    return (span.type, text[span.start:span.end])


def effective_spans(
    spans: Sequence[Span], text: str, excluded: set[tuple[str, str]]
) -> list[Span]:
    """The spans that will be sanitized: detections minus the ones the user excluded."""
    return [s for s in spans if span_key(s, text) not in excluded]


def shift_spans(spans: Iterable[Span], pos: int, removed: int, added: int) -> list[Span]:
    """Move detections after an edit so highlights stay on their words until the next
    detection arrives. Spans touched by the edit are dropped (they are re-detected)."""
    out: list[Span] = []
    delta = added - removed
    end_removed = pos + removed
    for s in spans:
        if s.end <= pos:
            out.append(s)
        elif s.start >= end_removed:
            out.append(replace(s, start=s.start + delta, end=s.end + delta))
        # else: the edit touched this span; it comes back with the next detection
    return out


def span_at(spans: Sequence[Span], pos: int) -> Span | None:
    """The span covering code-point offset ``pos`` (spans sorted, non-overlapping)."""
    starts = [s.start for s in spans]
    i = bisect.bisect_right(starts, pos) - 1
    if 0 <= i < len(spans) and spans[i].start <= pos < spans[i].end:
        return spans[i]
    return None


# --- indicators ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyIndicators:
    """What the assessment panel shows about the payload's privacy."""

    tokens_changed: int
    tokens_total: int
    pii_total: int
    pii_left: int            # detected items whose value is still in the payload verbatim
    guarantee: str
    pii_kept: int = 0        # items the policy keeps as written on purpose (not "left")

    @property
    def changed_share(self) -> float:
        return self.tokens_changed / self.tokens_total if self.tokens_total else 0.0


def privacy_indicators(
    original: str, sanitized: SanitizedText, spans: Sequence[Span]
) -> PrivacyIndicators:
    """Share of tokens changed and PII items still present in the payload.

    An item counts as "left" when its source range is not fully covered by changes and
    its exact value still appears in the payload (d_X may leave a name untouched).
    """
    info = sanitized.info or {}
    total = int(info.get("tokens_total") or 0)
    changed = int(info.get("tokens_changed") or 0)
    if not total:
        # Operators: count whitespace-separated words as tokens for a comparable share.
        total = max(1, len(original.split()))
        changed = sum(len(original[c.source_start:c.source_end].split()) or 1
                      for c in sanitized.changes)
        changed = min(changed, total)
    covered = sorted((c.source_start, c.source_end) for c in sanitized.changes)
    starts = [c[0] for c in covered]
    kept_ranges = {tuple(r) for r in info.get("kept_spans") or ()}
    left = kept = 0
    for s in spans:
        if (s.start, s.end) in kept_ranges:
            kept += 1
            continue
        value = original[s.start:s.end]
        if not value.strip():
            continue
        if _fully_covered(s.start, s.end, covered, starts):
            # A change may still copy the value back (d_X may pick the same token).
            touched = [c for c in sanitized.changes
                       if c.source_start < s.end and c.source_end > s.start]
            if all(c.replacement != c.original for c in touched):
                continue
        if value in sanitized.text:
            left += 1
    guarantee = str(info.get("guarantee") or _operator_guarantee(sanitized.method))
    return PrivacyIndicators(changed, total, len(spans), left, guarantee, kept)


def _fully_covered(start: int, end: int, covered: list[tuple[int, int]],
                   starts: list[int]) -> bool:
    pos = start
    i = max(0, bisect.bisect_right(starts, pos) - 1)
    while pos < end and i < len(covered):
        cs, ce = covered[i]
        if cs > pos:
            return False
        if ce > pos:
            pos = ce
        i += 1
    return pos >= end


def _operator_guarantee(method: str) -> str:
    return ("No formal guarantee: only detected items are replaced; anything the detector "
            f"missed is sent as written ({method}).")


def change_at(sanitized: SanitizedText | None, pos: int):
    """The change covering output offset ``pos`` (for the preview's hover)."""
    if sanitized is None:
        return None
    changes = sanitized.changes
    starts = [c.start for c in changes]
    i = bisect.bisect_right(starts, pos) - 1
    if 0 <= i < len(changes) and changes[i].start <= pos < max(changes[i].end,
                                                                changes[i].start + 1):
        return changes[i]
    return None


def format_cost(cost: float | None, currency: str = "$") -> str:
    if cost is None:
        return "—"
    if cost == 0:
        return f"{currency}0 (free or price not set)"
    if cost < 0.01:
        return f"< {currency}0.01 ({currency}{cost:.5f})"
    return f"{currency}{cost:.2f}"


# --- curve and errors --------------------------------------------------------------------
def log_grid(lo: float, hi: float, n: int) -> list[float]:
    """``n`` values spaced evenly on a log scale between ``lo`` and ``hi``."""
    if n < 2:
        return [lo]
    a, b = math.log(lo), math.log(hi)
    return [math.exp(a + (b - a) * i / (n - 1)) for i in range(n)]


def error_text(exc: BaseException) -> tuple[str, str]:
    """(message, hint) for any exception a background op reported."""
    if isinstance(exc, PreflightError):
        return exc.message, exc.hint
    return (f"Something went wrong ({type(exc).__name__}).",
            "This is a bug in Preflight; your text is still here. Try again.")


# --- learning on the flow -------------------------------------------------------------------
def calibration_text(status: CalibrationStatus | None) -> str:
    """One line beside the predicted utility: whether the prediction is fitted to the
    user's own sends to the provider (None: no provider chosen)."""
    if status is None or status.calibrated_on <= 0:
        return "not yet calibrated for this provider"
    return f"calibrated on {status.calibrated_on} of your sends to {status.provider}"
