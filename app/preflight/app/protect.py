"""The policy's "always protected entity types", applied after any mechanism.

The operators replace every detected span anyway; d_X perturbs tokens at random and may
leave an e-mail address or a card number readable (wholly or in part). For spans whose
type the user listed in *Settings → Policy → Always protected entity types*, every
character of the value is replaced by a type marker (``[EMAIL_ADDRESS]``) in the output,
whatever the method — that is the setting's promise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Sequence

from preflight.core.types import Change, SanitizedText, Span


def marker(span_type: str) -> str:
    return f"[{span_type}]"


def _already_replaced(span: Span, changes: Sequence[Change]) -> bool:
    """An operator's change covering exactly the span (not a d_X token change)."""
    return any(c.source_start == span.start and c.source_end == span.end and c.type != "TOKEN"
               for c in changes)


def enforce_always_protect(original: str, spans: Iterable[Span], sanitized: SanitizedText,
                           types: Iterable[str]) -> SanitizedText:
    """``sanitized`` with every span of a protected type replaced by its marker.

    Changes of the mechanism that overlap such a span are merged into one change that
    covers the span (widened to the changes' source ranges), so the change list still maps
    the output back to ``original``.
    """
    wanted = set(types)
    todo = sorted((s for s in spans if s.type in wanted
                   and not _already_replaced(s, sanitized.changes)), key=lambda s: s.start)
    if not todo:
        return sanitized
    changes = list(sanitized.changes)
    pieces: list[tuple[int, int, str, str]] = []      # source ranges to mark
    for s in todo:
        lo, hi = s.start, s.end
        for c in changes:       # widen to whole mechanism changes that straddle the span
            if c.source_start < hi and lo < c.source_end:
                lo, hi = min(lo, c.source_start), max(hi, c.source_end)
        if pieces and lo < pieces[-1][1]:
            plo, phi, ptext, ptype = pieces[-1]
            pieces[-1] = (plo, max(phi, hi), ptext, ptype)
        else:
            pieces.append((lo, hi, marker(s.type), s.type))
    return _rebuild(original, sanitized, changes, pieces)


def _rebuild(original: str, sanitized: SanitizedText, changes: list[Change],
             pieces: list[tuple[int, int, str, str]]) -> SanitizedText:
    """Re-emit the output: kept mechanism changes plus the markers, in source order."""
    out: list[str] = []
    new_changes: list[Change] = []
    cursor = 0          # source position
    out_len = 0
    items: list[tuple[int, int, str, Change | None]] = []
    for lo, hi, text, typ in pieces:
        items.append((lo, hi, text, Change(0, 0, lo, hi, typ, original[lo:hi], text)))
    for c in changes:
        if not any(c.source_start < hi and lo < c.source_end for lo, hi, _t, _ty in pieces):
            items.append((c.source_start, c.source_end,
                          sanitized.text[c.start:c.end], c))
    items.sort(key=lambda it: (it[0], it[1]))
    for lo, hi, text, change in items:
        keep = original[cursor:lo]
        out.append(keep)
        out_len += len(keep)
        out.append(text)
        assert change is not None
        new_changes.append(replace(change, start=out_len, end=out_len + len(text)))
        out_len += len(text)
        cursor = hi
    out.append(original[cursor:])
    info = dict(sanitized.info)
    info["always_protected"] = len(pieces)
    return SanitizedText("".join(out), sanitized.method, tuple(new_changes), info)


class ProtectedPrepared:
    """A prepared d_X document whose every ε applies the always-protected types."""

    def __init__(self, inner: Any, spans: Sequence[Span], protect: Sequence[str]) -> None:
        self._inner, self._spans, self._protect = inner, list(spans), list(protect)

    @property
    def epsilon_range(self) -> tuple[float, float]:
        lo, hi = self._inner.epsilon_range
        return float(lo), float(hi)

    def at(self, epsilon: float) -> SanitizedText:
        out = self._inner.at(epsilon)
        return enforce_always_protect(self._inner.text, self._spans, out, self._protect)

    def resample(self, seed: int | None = None) -> "ProtectedPrepared":
        return ProtectedPrepared(self._inner.resample(seed), self._spans, self._protect)

    def update(self, new_text: str, new_spans: Sequence[Span]) -> "ProtectedPrepared":
        return ProtectedPrepared(self._inner.update(new_text, list(new_spans)), new_spans,
                                 self._protect)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)
