"""The re-scan of a payload before it leaves: block leaks, note the rest.

Every string of the request a model reads is checked in two ways, and each thing found is
a :class:`~preflight.core.send.plan.Finding` of one of these kinds:

- ``leak`` (blocks): a value detected in the *original* under a protecting action — not
  one the policy kept on purpose (``sanitized.report.kept_spans``) — is still in the
  payload: verbatim (whole words, any case), or in another spelling the detector finds
  again in the payload (same value key: ``ALICE MARTIN``, a card number with other
  separators or zero-width characters inside). A single lower-case word ("company" read as
  a name) is not searched for elsewhere: that is prose. Without ``kept_spans`` (a classic
  mechanism, no policy) only direct identifiers and secrets of the original count, as
  before policies.
  A detection that crosses a change of the mechanism (not one inside a change: a
  generalized date's year is the mechanism's own output) and whose copied text is part
  of a protected value of its type is that value partly let through (d_X drew
  "narrowly" for "jane" in "jane.doe@…"): it blocks under the original's value, as the
  window counts it.
  Besides the original's detections, every value the request protected elsewhere (the
  question, the instruction, an earlier send of the document: ``values``, from
  :func:`~preflight.core.send.request_scope.protect_request`) counts the same way.
- ``leak`` too (blocks): a part of a protected person's name written alone ("Lindqvist"
  for "Karin Lindqvist": a capitalized part of three letters or more, or a part in a
  script without capitals). A part that starts a sentence and is written in lower case
  elsewhere in the document or the payload ("Mark the date" beside "a mark") is a word
  there, not the person; any other use blocks, and the user can allow it item by item.
- ``validated`` (blocks): a direct identifier or secret found fresh in the payload on
  pattern plus checksum or format evidence (:data:`VALIDATED_TYPES`, from a recognizer
  that is not the NER model's guess nor a propagated copy). A secret blocks even when the
  policy kept it: a kept key is a mistake to confirm, never noise.
- ``note`` (does not block): a fresh NER-only detection (a person, organization or place
  the statistical model sees, e.g. the ticker "ASTS ST" read as a name once the text
  around it became placeholders), a fresh weak-format match, or a validated direct
  identifier the policy keeps.

Never a finding: text the mechanism itself wrote (a placeholder, a surrogate, a coarser
value — inside a change and not a value of the original), and a detection at the very
place of a value the policy kept (the plan already shows what the policy keeps).

Size (~490 lines): one pass over the payload; its leak finders share the payload's offset
map and the protected values.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

from preflight.core.pii.overlaps import CoveringRanges
from preflight.core.pii.propagate import name_parts, trie_regex
from preflight.core.ports import Detector
from preflight.core.send.plan import (
    BLOCKING_CATEGORIES, Finding, degraded_finding, finding_id,
)
from preflight.core.send.providers import PreparedRequest
from preflight.core.types import Category, Evidence, SanitizedText, Span

LEAK, VALIDATED, NOTE = "leak", "validated", "note"

#: Types whose detection rests on a pattern plus a checksum or a strict format (Luhn,
#: mod-97, a parsed phone number, an e-mail with a known top-level domain, a vendor key
#: prefix, a private-key block, a password or PIN given as one, an SSN-shaped number or
#: an id next to its label). ``DENY_LIST`` is the user's own "always protect" list.
VALIDATED_TYPES = frozenset({
    "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "US_ITIN",
    "UK_NHS", "CRYPTO", "MEDICAL_LICENSE", "API_KEY", "SECRET", "DENY_LIST", "ID_NUMBER",
    "NATIONAL_ID", "INTERNAL_HOST",
})
#: Evidence that is no independent evidence (the NER model's guess, or a copy of another
#: detection of the same text).
NOT_EVIDENCE = Evidence.STATISTICAL | Evidence.COPY
MIN_LEAK_CHARS = 3      # shorter values ("Al", "3") match too much prose to block on


def is_validated(span: Span) -> bool:
    """Whether ``span`` is a direct identifier or secret on pattern/checksum evidence."""
    return (span.category in BLOCKING_CATEGORIES and span.type in VALIDATED_TYPES
            and not span.evidence & NOT_EVIDENCE)


def kept_ranges(sanitized: SanitizedText) -> list[tuple[int, int]] | None:
    """The source ranges the policy kept on purpose, or None when the output has no
    policy (a classic mechanism)."""
    raw = sanitized.report.kept_spans
    if raw is None:
        return None
    return sorted((int(s), int(e)) for s, e in raw)


class _Payload:
    """One string of the request and where the sanitized document sits in it. Lookups
    into the change list are binary searches: a document of tens of thousands of values
    has as many changes, and every finding looks one up."""

    def __init__(self, content: str, sanitized: SanitizedText) -> None:
        self.content = content
        self.sanitized = sanitized
        self.doc_at = content.find(sanitized.text) if sanitized.text else -1
        self._changes = list(sanitized.changes)          # sorted, non-overlapping
        self._starts = [c.start for c in self._changes]
        self._ends = [c.end for c in self._changes]

    def locate(self, start: int, end: int) -> tuple[str, int, int]:
        """(part, start, end) with offsets into that part."""
        n = len(self.sanitized.text)
        if self.doc_at >= 0 and self.doc_at <= start and end <= self.doc_at + n:
            return "document", start - self.doc_at, end - self.doc_at
        return "instruction", start, end

    def change_around(self, part: str, start: int, end: int):
        """The change of the sanitized document that contains [start, end), if any."""
        if part != "document":
            return None
        j = bisect_right(self._starts, start) - 1
        while j >= 0:
            change = self._changes[j]
            if end <= change.end:
                return change
            if change.end <= start:
                break
            j -= 1
        return None

    def source_range(self, part: str, start: int, end: int) -> tuple[int, int] | None:
        """Where [start, end) of the document part came from in the original (None when
        it lies in or across a change)."""
        if part != "document":
            return None
        k = bisect_right(self._ends, start)       # changes[:k] end at or before start
        if k < len(self._changes) and self._changes[k].start < end:
            return None
        shift = self._changes[k - 1].source_end - self._changes[k - 1].end if k else 0
        return start + shift, end + shift

    def copied_sources(self, part: str, start: int, end: int) -> list[tuple[int, int]]:
        """Where the pieces of [start, end) of the document part that no change wrote
        were copied from in the original."""
        if part != "document":
            return []
        out, pos = [], start
        j = max(bisect_right(self._starts, start) - 1, 0)
        while pos < end:
            while j < len(self._changes) and self._changes[j].end <= pos:
                j += 1
            change = self._changes[j] if j < len(self._changes) else None
            if change is not None and change.start <= pos:
                pos = change.end                   # written by the mechanism
                continue
            stop = min(end, change.start) if change is not None else end
            shift = (self._changes[j - 1].source_end - self._changes[j - 1].end) if j else 0
            out.append((pos + shift, stop + shift))
            pos = stop
        return out


@dataclass(frozen=True)
class _Protected:
    """A value the payload must not carry (from the original, or another part)."""

    value: str
    type: str
    category: Category
    score: float


def rescan(detector: Detector, original: str, sanitized: SanitizedText,
           request: PreparedRequest, original_spans: Sequence[Span] = (),
           values: Sequence[Any] = ()) -> tuple[Finding, ...]:
    """Every finding of the payload a model reads (see the module's rules). ``values``:
    what the request protected outside the original's detections (objects with
    ``value``, ``type``, ``category`` and ``score``, e.g.
    :class:`~preflight.core.send.request_scope.ClassifiedValue`)."""
    from preflight.core.sanitize.operators import value_key   # (imports Faker: lazily)

    kept = kept_ranges(sanitized)
    kept_set = set(kept or ())
    own = [s for s in original_spans
           if len(original[s.start:s.end].strip()) >= MIN_LEAK_CHARS
           and not _plain_word(original[s.start:s.end])
           and ((s.start, s.end) not in kept_set if kept is not None
                else s.category in BLOCKING_CATEGORIES)]
    protected = [_Protected(original[s.start:s.end], s.type, s.category, s.score)
                 for s in own]
    protected_at = _Placed(own, protected)
    protected += [_Protected(v.value, v.type, v.category, v.score) for v in values
                  if len(v.value.strip()) >= MIN_LEAK_CHARS and not _plain_word(v.value)]
    protected_keys = {value_key(p.value, p.type): p for p in protected}
    kept_keys = {value_key(original[s:e], "") for s, e in kept_set}
    folded_original = original.casefold()
    # (which string of the request, start, end in it, finding)
    candidates: list[tuple[int, int, int, Finding]] = []
    payloads = [_Payload(c, sanitized) for c in request.content_texts]
    kept_index = CoveringRanges(kept_set)
    values = _protected_values(protected)
    finder = _verbatim(tuple(values))
    words = _lower_words(*(p.content for p in payloads))   # (the original's own lower-case
    # copies of a name would read as words)
    for i, pay in enumerate(payloads):
        candidates += [(i, s, e, f) for s, e, f in _verbatim_leaks(pay, values, finder,
                                                                    kept_index)]
        candidates += [(i, s, e, f) for s, e, f in _name_part_leaks(pay, protected, kept_index,
                                                                     words)]
    # the detector's paragraph cache when it has one: a paragraph of the payload the
    # mechanism did not touch is the original's, analyzed a moment ago (a chunked send
    # re-scans every part of a long document); the result equals a full pass
    detect = getattr(detector, "detect_incremental", None) or detector.detect
    for i, pay in enumerate(payloads):
        for span in detect(pay.content):
            def add(f: Finding, where: tuple[int, int, int] = (i, span.start, span.end)
                    ) -> None:
                candidates.append((*where, f))

            value = pay.content[span.start:span.end]
            part, start, end = pay.locate(span.start, span.end)
            change = pay.change_around(part, start, end)
            if change is not None and value.casefold() not in folded_original:
                continue        # the mechanism wrote it: a placeholder or a surrogate
            source = pay.source_range(part, start, end)
            if (source is not None and kept_index.contains(*source)
                    and span.category is not Category.SECRET):
                continue        # the policy kept this very value here
            key = value_key(value, span.type)
            leaked = protected_keys.get(key)
            # across a change (not inside one: the mechanism's own output, such as the
            # year a generalized date keeps), with copied text of a protected value
            partly = None if leaked is not None or source is not None or change is not None \
                else protected_at.overlapping(pay.copied_sources(part, start, end), span.type)
            if leaked is not None:
                add(_finding(leaked.type, leaked.category, value, part, start, end,
                             max(span.score, leaked.score), LEAK,
                             "detected in the original as a value to protect and still "
                             "in the payload"))
            elif partly is not None:
                # the mechanism changed a part of a protected value and let the rest
                # through ("jane.doe@…" noised to "narrowly.doe@…"): the original's value
                # is what leaves, under its own name (the window counts it so too)
                add(_finding(partly.type, partly.category, partly.value, part, start, end,
                             max(span.score, partly.score), LEAK,
                             "detected in the original as a value to protect and partly "
                             "still in the payload"))
            elif is_validated(span) and (span.category is Category.SECRET
                                         or value_key(value, "") not in kept_keys):
                add(_finding(span.type, span.category, value, part, start, end, span.score,
                             VALIDATED, f"a {_cat(span.category)} would leave the "
                             f"machine: {span.why}"))
            else:
                add(_finding(span.type, span.category, value, part, start, end, span.score,
                             NOTE, _note_reason(span, value_key(value, "") in kept_keys)))
    out: dict[str, Finding] = {}
    for f in _drop_covered(candidates):      # one finding per id: blocking, else first
        prev = out.get(f.id)
        if prev is None or (f.blocking and not prev.blocking):
            out[f.id] = f
    degraded = degraded_finding(detector)
    if degraded is not None:
        out[degraded.id] = degraded
    return tuple(sorted(out.values(), key=lambda f: (not f.blocking, f.part, f.start)))


class _Placed:
    """The original's protected values by place: which one a range overlaps."""

    def __init__(self, spans: Sequence[Span], protected: Sequence[_Protected]) -> None:
        placed = sorted(zip(spans, protected), key=lambda sp: (sp[0].start, sp[0].end))
        self._starts = [s.start for s, _ in placed]
        self._placed = placed
        self._longest = max((s.end - s.start for s in spans), default=0)

    def overlapping(self, sources: Iterable[tuple[int, int]], type_: str) -> _Protected | None:
        """The protected value of type ``type_`` that one of the original's ranges
        ``sources`` overlaps (what a payload detection across a change copied)."""
        for a, b in sources:
            i = bisect_right(self._starts, b - 1) - 1
            while i >= 0 and self._starts[i] > a - self._longest:
                span, p = self._placed[i]
                if span.start < b and a < span.end and span.type == type_:
                    return p
                i -= 1
        return None


def _drop_covered(found: list[tuple[int, int, int, Finding]]) -> list[Finding]:
    """Without the occurrences that lie inside another at least as blocking ("Martin"
    inside "Martin Lundstedt"): one decision per value the user reads."""
    kept: list[Finding] = []
    reach: dict[tuple[int, bool], int] = {}   # (string, blocking) -> furthest end so far
    for i, _, end, f in sorted(found, key=lambda t: (t[0], t[1], -t[2], not t[3].blocking)):
        if max(reach.get((i, True), -1),
               -1 if f.blocking else reach.get((i, False), -1)) >= end:
            continue
        reach[(i, f.blocking)] = max(reach.get((i, f.blocking), -1), end)
        kept.append(f)
    return kept


@lru_cache(maxsize=4)
def _verbatim(values: tuple[str, ...]) -> _Verbatim:
    """One finder per set of values: the parts of a chunked send search for the same
    values of the whole document, and building the finder is most of the time."""
    return _Verbatim(values)


class _Verbatim:
    """Every occurrence of any of many values in a text, in one pass: whole words, any
    case, a run of whitespace for a space — as one ``re`` search per value would find
    them, overlapping occurrences included, but in time that grows with the text and the
    occurrences, not with (values x text)."""

    def __init__(self, values: Iterable[str]) -> None:
        self._by_key: dict[str, list[str]] = {}
        for value in values:
            self._by_key.setdefault(_fold(value), []).append(value)
        # the trie of the values as written (it lowers each character itself; a casefold
        # first would turn "Straße" into a pattern that no longer matches "Straße")
        source = trie_regex(v for vs in self._by_key.values() for v in vs)
        # a zero-width match at each start, the value captured inside the look-ahead: the
        # scan then moves one character on, so occurrences that overlap are all found
        self._pattern = (re.compile(rf"(?<!\w)(?=({source})(?!\w))", re.IGNORECASE)
                         if source else None)
        self._by_length: dict[int, list[str]] | None = None

    def find(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, value) of every occurrence."""
        if self._pattern is None:
            return
        for m in self._pattern.finditer(text):
            start, end = m.span(1)
            yield from self._values_at(text, start, end)
            limit = end - 1
            while limit > start:        # shorter values at the same start ("Martin" of
                short = self._pattern.match(text, start, limit)   # "Martin Lundstedt")
                if short is None:
                    break
                s, e = short.span(1)
                if e == len(text) or not _WORD.match(text, e):   # a real word end
                    yield from self._values_at(text, s, e)
                limit = e - 1

    def _values_at(self, text: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
        found = text[start:end]
        values = self._by_key.get(_fold(found))
        if values is None:      # a case the regex equates but casefold() does not (ı, ſ…)
            values = [v for v in self._length_bucket(len(_fold(found)))
                      if re.fullmatch(_spaced(v), found, re.IGNORECASE)]
        for value in values:
            yield start, end, value

    def _length_bucket(self, n: int) -> list[str]:
        if self._by_length is None:
            self._by_length = {}
            for key, values in self._by_key.items():
                self._by_length.setdefault(len(key), []).extend(values)
        return self._by_length.get(n, [])


_WORD = re.compile(r"\w")


def _fold(value: str) -> str:
    return " ".join(value.split()).casefold()


def _spaced(value: str) -> str:
    return r"\s+".join(re.escape(w) for w in value.split())


def _protected_values(protected: Iterable[_Protected]) -> dict[str, list[_Protected]]:
    """Value → the protected items it was classified as (one per finding id)."""
    out: dict[str, list[_Protected]] = {}
    seen: set[str] = set()
    for item in protected:
        fid = finding_id(item.type, item.value)
        if fid not in seen:
            seen.add(fid)
            out.setdefault(item.value, []).append(item)
    return out


def _verbatim_leaks(pay: _Payload, values: dict[str, list[_Protected]], finder: _Verbatim,
                    kept: CoveringRanges) -> Iterable[tuple[int, int, Finding]]:
    """Protected values written verbatim (whole words, any case): a name the detector
    flagged once but the re-scan misses in the payload must still block."""
    for m_start, m_end, value in finder.find(pay.content):
        part, start, end = pay.locate(m_start, m_end)
        change = pay.change_around(part, start, end)
        if change is not None and value.casefold() in change.original.casefold():
            continue   # the action let this value through on purpose (a generalization)
        source = pay.source_range(part, start, end)
        if source is not None and kept.contains(*source):
            continue   # the same value kept at this place (kept here, protected elsewhere)
        for item in values[value]:
            yield m_start, m_end, Finding(
                finding_id(item.type, value), item.type, item.category,
                pay.content[m_start:m_end], part, start, end, item.score, True,
                "detected in the original as a value to protect and still in the payload "
                "unchanged", LEAK)


def _name_part_leaks(pay: _Payload, protected: Iterable[_Protected],
                     kept: CoveringRanges, lower_words: set[str]
                     ) -> Iterable[tuple[int, int, Finding]]:
    """Parts of protected person names written alone (the module's rule)."""
    owners, pattern = _name_part_finder(tuple(p for p in protected if p.type == "PERSON"))
    if pattern is None:
        return
    for m in pattern.finditer(pay.content):
        item = owners.get(m.group())
        if item is None:
            continue
        part, start, end = pay.locate(m.start(), m.end())
        if pay.change_around(part, start, end) is not None:
            continue       # inside a replacement: the mechanism wrote it
        source_range = pay.source_range(part, start, end)
        if source_range is not None and kept.contains(*source_range):
            continue       # inside a value the policy keeps at this place
        if m.group().casefold() in lower_words and _starts_sentence(pay.content, m.start()):
            continue       # "Mark the date" where the text also writes "mark": a word
        yield m.start(), m.end(), Finding(
            finding_id(item.type, m.group()), item.type, item.category, m.group(), part,
            start, end, item.score, True,
            f"part of the name of a person protected in this request, written alone; allow "
            f"it only if '{m.group()}' is not that person here", LEAK)


@lru_cache(maxsize=4)
def _name_part_finder(persons: tuple[_Protected, ...]
                      ) -> tuple[dict[str, _Protected], re.Pattern[str] | None]:
    """Each part of the protected names → its person, and the pattern finding any of them
    (built once per set of names: see :func:`_verbatim`)."""
    owners: dict[str, _Protected] = {}
    for item in persons:
        for name_part in name_parts(item.value):
            if name_part.casefold() != " ".join(item.value.split()).casefold():
                owners.setdefault(name_part, item)
    source = trie_regex(owners, fold=False)
    return owners, (None if source is None else
                    re.compile(rf"(?<!\w)(?:{source})(?!\w)"))


_LOWER_WORDS = re.compile(r"(?<!\w)[^\W\d_A-Z][\w'’-]*")


def _lower_words(*texts: str) -> set[str]:
    """Words written in lower case in any of ``texts``."""
    return {w for t in texts for w in _LOWER_WORDS.findall(t) if w.islower()}


def _starts_sentence(text: str, at: int) -> bool:
    """Whether ``text[at:]`` starts a sentence, a line or a list item."""
    i = at
    while i > 0 and text[i - 1] in " \t\"'“‘([":
        i -= 1
    return i == 0 or text[i - 1] in "\n.!?:;•*-–—"


def _finding(type_: str, category: Category, value: str, part: str, start: int, end: int,
             score: float, kind: str, reason: str) -> Finding:
    return Finding(finding_id(type_, value), type_, category, value, part, start, end, score,
                   kind != NOTE, reason, kind)


def _note_reason(span: Span, kept_value: bool) -> str:
    if kept_value:
        return f"a value the policy keeps ({_cat(span.category)})"
    if span.evidence & NOT_EVIDENCE:
        return (f"the NER model's guess, not a validated identifier ({_cat(span.category)}); "
                "check it reads as intended")
    return f"remains in the text ({_cat(span.category)}, no checksum or strict format)"


_PLAIN_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+")


def _plain_word(value: str) -> bool:
    """A single ordinary word ("company", "for", "Company" at a sentence start): as a
    detected name or condition it is the detector's noise, and other occurrences of it
    are prose — they do not block (the detected occurrence itself was replaced). A
    capitalized word counts only when it is a common English word."""
    from preflight.core.pii.person_evidence import common_words

    if not _PLAIN_WORD.fullmatch(value):
        return False
    return value.islower() or value.casefold() in common_words()


def _cat(category: Category) -> str:
    return category.value.replace("_", " ")

