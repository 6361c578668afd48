"""Qt-free presentation helpers: span bookkeeping, privacy indicators, offset conversion
between Python strings (code points) and Qt documents (UTF-16 units), cost text, the
utility curve's ε grid, what a utility prediction means in words and the (message, hint) of
a failure; the privacy figures in words are :mod:`preflight.app.privacy_words` (re-exported
here).

Kept free of Qt so they are unit-tested without a display (and usable by any face).
"""

from __future__ import annotations

import bisect
import math
from datetime import datetime, timezone
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from preflight.app.privacy_words import (  # noqa: F401 - re-exported: one import for faces
    NO_DX_SENTENCE,
    attack_sentence,
    ledger_sentence,
    privacy_summary,
    quasi_sentence,
    quasi_warning,
    reconstruct_idle_text,
    reconstruct_progress_text,
    reidentified_sentence,
)
from preflight.core.errors import PreflightError
from preflight.core.types import SanitizedText, Span
from preflight.core.textio import MAX_DOCUMENT_BYTES
from preflight.core.utility.recommend import log_grid  # noqa: F401 - the curve's grid, shared

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
    dx = sanitized.report.dx
    total = int(dx.tokens_total or 0) if dx is not None else 0
    changed = int(dx.tokens_changed or 0) if dx is not None else 0
    if not total:
        # Operators: count whitespace-separated words as tokens for a comparable share.
        total = max(1, len(original.split()))
        changed = sum(len(original[c.source_start:c.source_end].split()) or 1
                      for c in sanitized.changes)
        changed = min(changed, total)
    status = [st for _s, st in payload_status(original, sanitized, spans)]
    left, kept = status.count("left"), status.count("kept")
    guarantee = sanitized.report.guarantee or _operator_guarantee(sanitized.method)
    return PrivacyIndicators(changed, total, len(spans), left, guarantee, kept)


#: A protected value whose letters and digits survive in the payload at least this much
#: (d_X noise changed a token or two of a card number, a key, an IBAN) still leaves.
LEFT_SHARE = 0.5


def payload_status(original: str, sanitized: SanitizedText, spans: Sequence[Span]
                   ) -> list[tuple[Span, str]]:
    """Each span with its fate in the payload: ``"kept"`` (the policy keeps it as written
    on purpose), ``"left"`` (protected, yet at least :data:`LEFT_SHARE` of its letters and
    digits are still in the payload as written — not covered by changes, copied back by
    one, or changed only in case; d_X may pick the same token, or change one token of a
    16-digit card) or ``"gone"``."""
    kept_ranges = set(sanitized.report.kept_spans or ())
    out = []
    for s in spans:
        if (s.start, s.end) in kept_ranges:
            out.append((s, "kept"))
            continue
        value = original[s.start:s.end]
        touched = any(c.source_start < s.end and c.source_end > s.start
                      for c in sanitized.changes)
        left = bool(value.strip()) and (
            surviving_share(original, s, sanitized.changes) >= LEFT_SHARE if touched
            else value in sanitized.text)
        out.append((s, "left" if left else "gone"))
    return out


def surviving_share(original: str, span: Span, changes: Sequence[Any]) -> float:
    """The share of ``span``'s letters and digits still written in the payload: those no
    change covers, or covered by a change that wrote the same text back (ignoring case)."""
    alive = [ch.isalnum() for ch in original[span.start:span.end]]
    total = sum(alive)
    if total == 0:
        return 0.0
    for c in changes:
        if c.source_end <= span.start or c.source_start >= span.end:
            continue
        if c.replacement.strip().casefold() == c.original.strip().casefold():
            continue                          # written back as it was
        for i in range(max(c.source_start, span.start), min(c.source_end, span.end)):
            alive[i - span.start] = False
    return sum(a and ch.isalnum() for a, ch in
               zip(alive, original[span.start:span.end])) / total


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
def oversize_message(text: str) -> str | None:
    """Why ``text`` is too large for the window (the limit Open enforces), or None."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_DOCUMENT_BYTES:
        return None
    return (f"The text is {size / 1e6:.1f} MB; Preflight handles documents up to "
            f"{MAX_DOCUMENT_BYTES / 1e6:.0f} MB. Split it and process the parts separately.")


#: How each face says a remedy (``PreflightError.fix``; ``{subject}``: its provider).
FIX_WORDS: dict[str, dict[str, str]] = {
    "set-key": {"window": "Set the key in Settings → Providers → Set key.",
                "cli": "Set the key: preflight providers set-key {subject}."},
    "question": {"window": "Type your question in the question field, then send.",
                 "cli": "Pass --question with the question."},
    # the core's hint is the CLI's command; the window names its own place
    "install-models": {"window": "Install or repair the local models in Settings → Local "
                                 "models."},
    "add-provider": {"window": "Add one in Settings → Providers."},
    "https": {"window": "Give {subject} an https:// base URL in Settings → Providers (plain "
                        "http:// is only for a server on this computer)."},
    "confirm": {"window": "Review the payload and press Send in the confirmation."},
    "accept-degraded": {"window": "Repair the local models in Settings → Local models, or "
                                  "tick the detector's item in the confirmation to send "
                                  "anyway."},
    "allow": {"window": "Choose a stronger policy, or tick each item in the confirmation to "
                        "send it as it is (“Protect all” protects them instead)."},
    "allow-typed": {"window": "Remove {subject} from the question or instruction you typed (a "
                              "stronger policy does not change what you typed), or tick it "
                              "in the confirmation to send it as it is."},
    "allow-resend": {"window": "This send adds ε {subject} of d_X noise, and several "
                               "differently noised copies of one text can be averaged to undo "
                               "it. Tick “I understand; send this document again” in the "
                               "confirmation, or choose a policy without d_X."},
    "epsilon": {"window": "Set the privacy level ε with the slider."},
    "epsilon-range": {"window": "Fix the ε bounds in Settings → Policy, or set one to "
                                "“calibrated”."},
    "dx-scope": {"window": "Choose a policy in the Policy box."},
    "export-exists": {"window": "Choose a new file name."},
    "export-again": {"window": "Export it again from History → Export…."},
    "audit-verify": {"window": "Tell your IT administrator; nothing more is sent until it is "
                               "resolved."},
    "no-keyring": {"window": "Keep the key for this session only (Settings → Providers → Set "
                             "key). Preflight never writes keys to a file."},
    "model-choice": {"window": "Choose another file, or go back to the default, in Settings → "
                               "Local models."},
}


def error_text(exc: BaseException, face: str = "window") -> tuple[str, str]:
    """(message, hint) for any exception a background op reported, in the words of
    ``face`` ("window" or "cli"): a remedy the faces do differently is worded here."""
    if isinstance(exc, PreflightError):
        words = FIX_WORDS.get(exc.fix or "", {}).get(face)
        return exc.message, exc.hint if words is None else words.format(subject=exc.subject)
    return ("Something went wrong inside Preflight.",
            "This is a bug in Preflight; your text is still here. Try again.")


def local_time(iso: str, seconds: bool = False) -> str:
    """A stored timestamp (UTC, ISO 8601) in this computer's time zone, for reading."""
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone().strftime("%d %b %Y, %H:%M:%S" if seconds else "%d %b %Y, %H:%M")


# --- what a utility prediction means (CLI and window share these words) -------------------
def _share(v: float) -> str:
    return f"{max(0.0, min(1.0, v)):.0%}"


# How each feature reads in a sentence, from its value (no canned verdicts: the number
# shown is the document's own).
_FEATURE_WORDS = {
    "frac_tokens_changed": lambda v: f"{_share(1 - v)} of tokens unchanged",
    "frac_chars_changed": lambda v: f"{_share(1 - v)} of characters unchanged",
    "epsilon": lambda v: f"privacy level ε = {v:.3g}",
    "log_epsilon": lambda v: f"privacy level ε = {math.exp(v):.3g}",
    "length_ratio": lambda v: f"the sanitized text is {v:.0%} of the original's length",
    "dx_share": lambda v: f"{_share(v)} of the text under d_X noise",
    "spans_replaced_share": lambda v: f"{_share(v)} of detected items replaced",
    "spans_kept": lambda v: f"{v:.0f} detected item(s) kept as written by the policy",
    "pii_total": lambda v: f"{v:.0f} personal item(s) detected",
    "pii_left": lambda v: f"{v:.0f} personal item(s) still in the text",
    "frac_pii_left": lambda v: f"{_share(v)} of personal items still in the text",
    "log_words": lambda v: f"a {math.expm1(v):.0f}-word document",
    "letter_share": lambda v: f"{_share(v)} of the document's characters are letters",
    "field_line_share": lambda v: f"{_share(v)} of its lines are \"Label: value\" fields",
    "sim_sanitized": lambda v: f"the sanitized text matches the original at {v:.2f}",
    "sim_slm_original": lambda v: f"the local model's answer on the original matches it at "
                                  f"{v:.2f}",
    "sim_slm_sanitized": lambda v: f"the local model's answer on the sanitized text matches "
                                   f"the original at {v:.2f}",
    "slm_d_minus_c": lambda v: f"the local model's answer lost {max(0.0, -v):.2f} of its "
                               f"match to sanitization",
    "log_ppl_sanitized": lambda v: f"the local model finds the sanitized text "
                                   f"{'hard' if v > 4.5 else 'easy'} to read "
                                   f"(perplexity {math.exp(v):.0f})",
    "log_ppl_ratio": lambda v: f"the sanitized text reads {math.exp(v):.1f}× harder than the "
                               f"original for the local model",
    "log_ppl_original": lambda v: f"the local model's perplexity on the original is "
                                  f"{math.exp(v):.0f}",
}


def driver_text(feature: str, value: float, effect: float) -> str:
    """One driver in words, with the direction it pushed the prediction."""
    if feature.startswith("method_"):
        name = feature.removeprefix("method_")
        words = f"{'uses' if value >= 0.5 else 'does not use'} {name}"
    else:
        render = _FEATURE_WORDS.get(feature)
        words = render(value) if render else f"{feature} = {value:.3g}"
    return f"{words} ({'+' if effect >= 0 else '−'}{abs(effect):.2f})"


def utility_number(value: float, minimum: float) -> str:
    """``value`` with two decimals, or as many more as it takes not to read like the
    minimum it is compared with: 0.619 against 0.62 is "0.619", never a red "0.62"."""
    for digits in (2, 3, 4):
        text = f"{value:.{digits}f}"
        if (value >= minimum) == (float(text) >= minimum):
            return text
    return f"{math.floor(value * 1e4) / 1e4:.4f}"    # below it by less than 0.00005


def utility_sentence(value: float, unsanitized: float | None, kept: float | None) -> str:
    """“predicted 0.62 of an expected 0.81 for the unsanitized text (keeps 77 %)”."""
    if unsanitized is None or kept is None:
        return f"predicted {value:.2f} (no estimate for the unsanitized text)"
    if kept >= 1.0:
        return (f"predicted {value:.2f}; the unsanitized text is expected at "
                f"{unsanitized:.2f} (no loss predicted)")
    return (f"predicted {value:.2f} of an expected {unsanitized:.2f} for the unsanitized "
            f"text (keeps {kept:.0%})")


def band_text(low: float | None, high: float | None, level: float | None) -> str:
    if low is None or high is None or level is None:
        return ""
    return f"{level:.0%} interval {low:.2f}–{high:.2f}"


def explanation_lines(est) -> list[str]:
    """The sentence, the band and the drivers of a core ``Estimate`` (None: nothing)."""
    if est is None:
        return []
    lines = [utility_sentence(est.value, est.unsanitized, est.kept_share)]
    band = band_text(est.low, est.high, est.level)
    if band:
        lines.append(band)
    if est.drivers:
        lines.append("what moved it (vs. a typical training text): " + "; ".join(
            driver_text(d.feature, d.value, d.effect) for d in est.drivers))
    return lines


# --- learning on the flow -------------------------------------------------------------------
def calibration_text(status: CalibrationStatus | None) -> str:
    """One line beside the predicted utility: whether the prediction is fitted to the
    user's own sends to the provider (None: no provider chosen)."""
    if status is None or status.calibrated_on <= 0:
        return "not yet calibrated for this provider"
    text = f"calibrated on {status.calibrated_on} of your sends to {status.provider}"
    if status.failed_prior_pct is None or status.failed_refit_pct is None:
        return text
    return (f"{text}: on them it is off by more than 0.1 {status.failed_refit_pct:.0f} % of "
            f"the time, the shipped estimate {status.failed_prior_pct:.0f} %")
