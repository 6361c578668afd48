"""One request, one verdict: a value the product classified in any part of a request is
protected in every part of it.

A request has parts — the document, the question, the custom instruction — and a
document has a history: the values its earlier sanitizations protected, kept in its
:class:`~preflight.core.sanitize.placeholder_memory.PlaceholderMemory`. The detector
reads each part alone, so it may find "Karin Lindqvist" in a short question and miss the
document's "karin lindqvist" (or call it a place the policy keeps). Sent as is, the
question's copy would be ``<PERSON_2>`` and the document's would leave verbatim.

:func:`protect_request` therefore, before the request is built:

1. detects in the question and the instruction, and looks every part up in the
   document's memory (word n-grams whose value key an earlier sanitization protected);
2. propagates every value found outside the document's own detection into every part
   (:func:`~preflight.core.pii.propagate.propagate_values`: the same rules as inside one
   document — any case for whole values, capitalized parts of a person's name alone),
   and the document's values into the typed parts;
3. sanitizes the typed parts (:mod:`.question`) and replaces the new occurrences in the
   already sanitized document in place (the rest of its text, d_X noise included, stays
   as the user saw it), with the same token everywhere;
4. returns every value it protected, so the re-scan (:mod:`.rescan`) blocks a payload in
   which any of them — or a part of a protected name written alone — is still there.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

from preflight.core.pii.entities import category_of
from preflight.core.pii.propagate import name_parts, propagate_values
from preflight.core.ports import Detector
from preflight.core.sanitize.policy import Action, Policy
from preflight.core.send.question import (
    MIN_VALUE_CHARS, document_policy, sanitize_user_text, token_for_value, vault_with,
)
from preflight.core.tasks import Task
from preflight.core.types import Category, Change, SanitizedText, SanitizeReport, Span

#: Between the parts of the union text: no value, name or line runs across it.
SEPARATOR = "\n\n\n"
#: Longest value (in words) looked up in a document's memory of earlier sends.
MAX_MEMORY_WORDS = 6
REMEMBERED = "EarlierSend"
_EDGE = "\"'“”‘’«»()[]{}<>.,;:!?"
_LETTERS = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class ClassifiedValue:
    """A value the request protects outside the document's own detections (``where``:
    the part it was found in — "document", "question", "instruction" — or "earlier
    send" when the document's memory named it)."""

    value: str
    type: str
    category: Category
    score: float
    where: str


@dataclass(frozen=True)
class ProtectedRequest:
    """The request's parts after :func:`protect_request`."""

    task: Task
    sanitized: SanitizedText
    vault: Any
    values: tuple[ClassifiedValue, ...]   # for the re-scan: what must not be on the wire


def protect_request(task: Task, *, detector: Detector, original: str,
                    sanitized: SanitizedText, spans: Sequence[Span], vault: Any,
                    memory: Any = None, allowed: Iterable[str] = ()) -> ProtectedRequest:
    """Protect every value classified in any part of the request in all of its parts
    (the module's steps). ``memory``: the document's placeholder memory (None: no
    earlier sends are known); ``allowed``: the user's allow-list."""
    policy = document_policy(sanitized)
    allowed_set = {a.strip().casefold() for a in allowed if a.strip()}
    parts = {"question": task.question, "instruction": task.note}
    found = {name: list(detector.detect(text)) if text.strip() else []
             for name, text in parts.items()}
    remembered = {name: remembered_spans(text, memory, allowed_set)
                  for name, text in (("document", original), *parts.items())}
    # 1. values found outside the document's detection, into every part
    union, offsets = _union([original, *parts.values()])
    sources = [_shift(s, offsets[i]) for i, name in enumerate(("document", *parts))
               for s in (found.get(name, []) + remembered[name])]
    spread = _split(propagate_values(union, sources, allowed_set), offsets)
    doc_new = _uncovered(remembered["document"] + spread[0], spans)
    # 2. the document's values into the typed parts (a short text of its values stands in
    #    for the document, so the document is not searched again)
    listing, listed = _value_listing(original, spans)
    union2, offsets2 = _union([listing, *parts.values()])
    typed_sources = [_shift(s, offsets2[i + 1]) for i, name in enumerate(parts)
                     for s in found[name] + remembered[name]]
    spread2 = _split(propagate_values(union2, listed + typed_sources, allowed_set),
                     offsets2)
    # 3. sanitize the typed parts, then the document's new places, with shared tokens
    entries = list(vault.entries) if _is_vault(vault) else []
    before = len(entries)
    reserved = (original + "\n" + sanitized.text).lower()
    typed: dict[str, str] = {}
    values: list[ClassifiedValue] = []
    for i, (name, text) in enumerate(parts.items()):
        extra = found[name] + remembered[name] + spread[i + 1] + spread2[i + 1]
        typed[name], protected = sanitize_user_text(text, original, spans, extra, policy,
                                                    entries, reserved)
        values += [_classified(text, s, name) for s in protected]
    reps, doc_values = _document_replacements(original, doc_new, policy, entries, reserved)
    values += doc_values
    patched = patch_sanitized(original, sanitized, reps) if reps else sanitized
    if patched is None:
        # the mechanism did not copy its source, so nothing can be placed: the text stays
        # and the re-scan blocks these values, at places the policy kept too
        patched = replace(sanitized, report=_without_kept(sanitized.report,
                                                          [(a, b) for a, b, _, _ in reps]))
    if len(entries) > before:
        vault = vault_with(vault, entries, policy)
    _remember(memory, entries)
    return ProtectedRequest(task.with_user_text(typed["question"], typed["instruction"]),
                            patched, vault, tuple(values))


# -- the parts as one text -----------------------------------------------------------------

def _union(texts: Sequence[str]) -> tuple[str, list[int]]:
    offsets, pos = [], 0
    for text in texts:
        offsets.append(pos)
        pos += len(text) + len(SEPARATOR)
    return SEPARATOR.join(texts), offsets


def _shift(span: Span, by: int) -> Span:
    return replace(span, start=span.start + by, end=span.end + by)


def _split(spans: Iterable[Span], offsets: Sequence[int]) -> list[list[Span]]:
    """Spans of the union text, back in the coordinates of the part each lies in."""
    out: list[list[Span]] = [[] for _ in offsets]
    for s in spans:
        i = max(k for k, at in enumerate(offsets) if at <= s.start)
        out[i].append(_shift(s, -offsets[i]))
    return out


def _uncovered(new: Iterable[Span], spans: Sequence[Span]) -> list[Span]:
    """The new spans not already inside a detection of the same type in the document
    (the detector's spans do not overlap: the one starting last before is the only
    candidate)."""
    ordered = sorted(spans, key=lambda d: d.start)
    starts = [d.start for d in ordered]
    out = []
    for s in new:
        i = bisect.bisect_right(starts, s.start) - 1
        d = ordered[i] if i >= 0 else None
        if d is None or not (s.end <= d.end and d.type == s.type):
            out.append(s)
    return out


def _value_listing(original: str, spans: Sequence[Span]) -> tuple[str, list[Span]]:
    """One line per distinct document value, and the document's spans placed on it."""
    lines, listed, seen, pos = [], [], set(), 0
    for s in spans:
        value = original[s.start:s.end]
        key = (s.type, value.casefold())
        if key in seen or not value.strip():
            continue
        seen.add(key)
        listed.append(replace(s, start=pos, end=pos + len(value)))
        lines.append(value)
        pos += len(value) + len(SEPARATOR)
    return SEPARATOR.join(lines), listed


def _classified(text: str, span: Span, where: str) -> ClassifiedValue:
    return ClassifiedValue(text[span.start:span.end], span.type, span.category, span.score,
                           where)


def _is_vault(vault: Any) -> bool:
    from preflight.core.sanitize.vault import Vault

    return isinstance(vault, Vault)


# -- earlier sends --------------------------------------------------------------------------

def remembered_spans(text: str, memory: Any, allowed: set[str] = frozenset()) -> list[Span]:
    """Places in ``text`` of values an earlier sanitization of the document protected
    (runs of up to :data:`MAX_MEMORY_WORDS` words, trimmed of punctuation, whose value
    key the memory knows); longest first, never overlapping."""
    if memory is None or not len(memory) or not text.strip():
        return []
    from preflight.core.pii.canonical import readable

    words = [m.span() for m in re.finditer(r"\S+", text)]
    # the two spellings a value key can have (value_key): its words case-folded, or a
    # number's letters and digits alone; built per word once, joined per run
    forms = []
    for a, b in words:
        word = readable(text[a:b]).casefold()
        forms.append((word, word.lstrip(_EDGE), word.rstrip(_EDGE), word.strip(_EDGE),
                      "".join(ch for ch in word if ch.isalnum())))
    labels: dict[str, str | None] = {}      # each key looked up once
    hits: list[Span] = []
    for i in range(len(words)):
        for j in range(min(len(words), i + MAX_MEMORY_WORDS) - 1, i - 1, -1):
            start, end = _trimmed(text, words[i][0], words[j][1])
            value = text[start:end]
            if (len(value) < MIN_VALUE_CHARS or value.casefold() in allowed
                    or (value.islower() and _LETTERS.fullmatch(value))):
                continue            # a lower-case word alone is prose ("mark", "will")
            plain = (forms[i][3] if i == j else " ".join(
                [forms[i][1], *(f[0] for f in forms[i + 1:j]), forms[j][2]]))
            # (the types keyed compact are numbers: no digit, no such key)
            compact = ("".join(f[4] for f in forms[i:j + 1])
                       if any(c.isdigit() for c in value) else "")
            label = None
            for key in (plain, compact):
                if key and key not in labels:
                    labels[key] = memory.label_of(key)
                label = label or labels.get(key)
            if label is not None:
                hits.append(Span(start, end, label, category_of(label), 0.9, REMEMBERED,
                                 "protected in an earlier send of this document"))
                break
    kept: list[Span] = []
    for s in sorted(hits, key=lambda s: (s.start, -(s.end - s.start))):
        if not kept or s.start >= kept[-1].end:
            kept.append(s)
    return kept


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _EDGE:
        start += 1
    while end > start and text[end - 1] in _EDGE:
        end -= 1
    return start, end


def _remember(memory: Any, entries: Sequence[Any]) -> None:
    """Record the request's tokens, and each part of a person's name under its full
    name's token, so a later request of the document protects those values wherever it
    finds them (the memory holds only keyed hashes of them)."""
    if memory is None or not entries:
        return
    from preflight.core.sanitize.operators import value_key
    from preflight.core.sanitize.surrogates import placeholder_label

    for e in entries:
        label = placeholder_label(e.type)
        keys = [value_key(e.original, e.type)]
        if e.type == "PERSON":
            keys += [value_key(p, e.type) for p in name_parts(e.original)]
        for key in keys:
            memory.record(e.kind, label, key, e.token)
    memory.save()


# -- the document ---------------------------------------------------------------------------

def _document_replacements(original: str, new: Sequence[Span], policy: Policy,
                           entries: list[Any], reserved: str
                           ) -> tuple[list[tuple[int, int, str, str]], list[ClassifiedValue]]:
    """Replacements (source offsets) for the document's newly protected places, longest
    first where they overlap; the vault's token when the value already has one."""
    reps: list[tuple[int, int, str, str]] = []
    values: list[ClassifiedValue] = []
    for s in sorted(new, key=lambda s: (s.start, -(s.end - s.start))):
        if reps and s.start < reps[-1][1]:
            continue
        value = original[s.start:s.end]
        action = policy.action_for(s, value)
        if action is Action.KEEP:
            continue
        reps.append((s.start, s.end, token_for_value(original, s, action, entries,
                                                     reserved), s.type))
        values.append(_classified(original, s, "earlier send" if s.recognizer == REMEMBERED
                                  else "document"))
    return reps, values


def patch_sanitized(original: str, sanitized: SanitizedText,
                    reps: Sequence[tuple[int, int, str, str]]) -> SanitizedText | None:
    """``sanitized`` with more source ranges replaced: ``reps`` are (source start, end,
    replacement, type), sorted and disjoint. A replacement that overlaps changes already
    made takes them over (one change covering all of them); one inside a change is
    already protected and skipped. None when ``sanitized`` does not copy ``original``
    verbatim outside its changes (then nothing can be placed safely)."""
    if not _copies_source(original, sanitized):
        return None
    items: list[tuple[int, int, Any]] = [(c.source_start, c.source_end, c)
                                         for c in sanitized.changes]
    for start, end, token, etype in reps:
        if any(c.source_start <= start and end <= c.source_end for c in sanitized.changes):
            continue                         # already replaced with what encloses it
        items.append((start, end, (token, etype)))
    items.sort(key=lambda t: (t[0], t[1]))
    groups: list[list[tuple[int, int, Any]]] = []
    for item in items:
        if groups and item[0] < max(e for _, e, _ in groups[-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    parts: list[str] = []
    changes: list[Change] = []
    cursor = out_len = 0
    touched: list[tuple[int, int]] = []
    for group in groups:
        start = min(s for s, _, _ in group)
        end = max(e for _, e, _ in group)
        new = [p for _, _, p in group if not isinstance(p, Change)]
        gap = original[cursor:start]
        out_len += len(gap)
        if new:        # one token per new value; the changes it overlaps go under it
            replacement = " ".join(token for token, _ in new)
            change = Change(out_len, out_len + len(replacement), start, end, new[0][1],
                            original[start:end], replacement)
            touched.append((start, end))
        else:          # a change alone (changes never overlap one another)
            (old,) = [p for _, _, p in group]
            replacement = sanitized.text[old.start:old.end]
            change = replace(old, start=out_len, end=out_len + len(replacement))
        parts += [gap, replacement]
        changes.append(change)
        out_len += len(replacement)
        cursor = end
    parts.append(original[cursor:])
    report = _without_kept(sanitized.report, touched)
    return SanitizedText("".join(parts), sanitized.method, tuple(changes), report)


def _without_kept(report: SanitizeReport, ranges: Sequence[tuple[int, int]]
                  ) -> SanitizeReport:
    """``report`` whose ``kept_spans`` (what the policy kept on purpose) no longer hold
    the places another part of the request protects."""
    if report.kept_spans is None:
        return report
    return replace(report, kept_spans=tuple(
        k for k in report.kept_spans if not any(k[0] < e and s < k[1] for s, e in ranges)))


def _copies_source(original: str, sanitized: SanitizedText) -> bool:
    """Whether the text outside the changes is the source's, change by change."""
    cursor = out = 0
    text = sanitized.text
    for c in sanitized.changes:
        gap = c.source_start - cursor
        if (gap < 0 or c.start - out != gap
                or text[out:c.start] != original[cursor:c.source_start]):
            return False
        cursor, out = c.source_end, c.end
    return text[out:] == original[cursor:] and len(text) - out == len(original) - cursor


__all__ = ["ClassifiedValue", "ProtectedRequest", "REMEMBERED", "patch_sanitized",
           "protect_request", "remembered_spans"]
