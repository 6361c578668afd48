"""The re-scan of a payload before it leaves: block leaks, note the rest.

Every string of the request a model reads is checked in two ways, and each thing found is
a :class:`~preflight.core.send.plan.Finding` of one of these kinds:

- ``leak`` (blocks): a value detected in the *original* under a protecting action — not
  one the policy kept on purpose (``sanitized.info["kept_spans"]``) — is still in the
  payload: verbatim (whole words, any case), or in another spelling the detector finds
  again in the payload (same value key: ``ALICE MARTIN``, a card number with other
  separators or zero-width characters inside). A single lower-case word ("company" read as
  a name) is not searched for elsewhere: that is prose. Without ``kept_spans`` (a classic
  mechanism, no policy) only direct identifiers and secrets of the original count, as
  before policies.
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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from preflight.core.pii.entities import STATISTICAL_RECOGNIZERS
from preflight.core.pii.propagate import name_parts, trie_regex
from preflight.core.ports import Detector
from preflight.core.send.plan import (
    BLOCKING_CATEGORIES, Finding, degraded_finding, finding_id,
)
from preflight.core.send.providers import PreparedRequest
from preflight.core.types import Category, SanitizedText, Span

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
#: Recognizers whose spans are no independent evidence (the NER model's guess, or a copy
#: of another detection of the same text).
NOT_EVIDENCE = STATISTICAL_RECOGNIZERS | {"PropagatedValue"}
MIN_LEAK_CHARS = 3      # shorter values ("Al", "3") match too much prose to block on


def is_validated(span: Span) -> bool:
    """Whether ``span`` is a direct identifier or secret on pattern/checksum evidence."""
    return (span.category in BLOCKING_CATEGORIES and span.type in VALIDATED_TYPES
            and span.recognizer not in NOT_EVIDENCE)


def kept_ranges(sanitized: SanitizedText) -> list[tuple[int, int]] | None:
    """The source ranges the policy kept on purpose, or None when the output has no
    policy (a classic mechanism)."""
    raw = sanitized.info.get("kept_spans") if isinstance(sanitized.info, dict) else None
    if raw is None:
        return None
    return sorted((int(s), int(e)) for s, e in raw)


class _Payload:
    """One string of the request and where the sanitized document sits in it."""

    def __init__(self, content: str, sanitized: SanitizedText) -> None:
        self.content = content
        self.sanitized = sanitized
        self.doc_at = content.find(sanitized.text) if sanitized.text else -1

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
        for change in self.sanitized.changes:
            if change.start <= start and end <= change.end:
                return change
            if change.start >= end:
                break
        return None

    def source_range(self, part: str, start: int, end: int) -> tuple[int, int] | None:
        """Where [start, end) of the document part came from in the original (None when
        it lies in or across a change)."""
        if part != "document":
            return None
        shift = 0
        for change in self.sanitized.changes:
            if change.end <= start:
                shift = change.source_end - change.end
                continue
            if change.start < end:
                return None
            break
        return start + shift, end + shift


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
    protected = [_Protected(original[s.start:s.end], s.type, s.category, s.score)
                 for s in original_spans
                 if len(original[s.start:s.end].strip()) >= MIN_LEAK_CHARS
                 and not _plain_word(original[s.start:s.end])
                 and ((s.start, s.end) not in kept_set if kept is not None
                      else s.category in BLOCKING_CATEGORIES)]
    protected += [_Protected(v.value, v.type, v.category, v.score) for v in values
                  if len(v.value.strip()) >= MIN_LEAK_CHARS and not _plain_word(v.value)]
    protected_keys = {value_key(p.value, p.type): p for p in protected}
    kept_keys = {value_key(original[s:e], "") for s, e in kept_set}
    folded_original = original.casefold()
    # (which string of the request, start, end in it, finding)
    candidates: list[tuple[int, int, int, Finding]] = []
    payloads = [_Payload(c, sanitized) for c in request.content_texts]
    words = _lower_words(*(p.content for p in payloads))   # (the original's own lower-case
    # copies of a name would read as words)
    for i, pay in enumerate(payloads):
        candidates += [(i, s, e, f) for s, e, f in _verbatim_leaks(pay, protected, kept_set)]
        candidates += [(i, s, e, f) for s, e, f in _name_part_leaks(pay, protected, kept_set,
                                                                     words)]
    for i, pay in enumerate(payloads):
        for span in detector.detect(pay.content):
            def add(f: Finding, where: tuple[int, int, int] = (i, span.start, span.end)
                    ) -> None:
                candidates.append((*where, f))

            value = pay.content[span.start:span.end]
            part, start, end = pay.locate(span.start, span.end)
            change = pay.change_around(part, start, end)
            if change is not None and value.casefold() not in folded_original:
                continue        # the mechanism wrote it: a placeholder or a surrogate
            source = pay.source_range(part, start, end)
            if (source is not None and _within(source, kept_set)
                    and span.category is not Category.SECRET):
                continue        # the policy kept this very value here
            key = value_key(value, span.type)
            leaked = protected_keys.get(key)
            if leaked is not None:
                add(_finding(leaked.type, leaked.category, value, part, start, end,
                             max(span.score, leaked.score), LEAK,
                             "detected in the original as a value to protect and still "
                             "in the payload"))
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


def _verbatim_leaks(pay: _Payload, protected: Iterable[_Protected],
                    kept: set[tuple[int, int]]) -> Iterable[tuple[int, int, Finding]]:
    """Protected values written verbatim (whole words, any case): a name the detector
    flagged once but the re-scan misses in the payload must still block."""
    seen: set[str] = set()
    for item in protected:
        value = item.value
        fid = finding_id(item.type, value)
        if fid in seen:
            continue
        seen.add(fid)
        pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
        for m in re.finditer(pattern, pay.content, re.IGNORECASE):
            part, start, end = pay.locate(m.start(), m.end())
            change = pay.change_around(part, start, end)
            if change is not None and value.casefold() in change.original.casefold():
                continue   # the action let this value through on purpose (a generalization)
            source = pay.source_range(part, start, end)
            if source is not None and _within(source, kept):
                continue   # the same value kept at this place (kept here, protected elsewhere)
            yield m.start(), m.end(), Finding(
                fid, item.type, item.category, m.group(0), part, start, end, item.score,
                True, "detected in the original as a value to protect and still in the "
                "payload unchanged", LEAK)


def _name_part_leaks(pay: _Payload, protected: Iterable[_Protected],
                     kept: set[tuple[int, int]], lower_words: set[str]
                     ) -> Iterable[tuple[int, int, Finding]]:
    """Parts of protected person names written alone (the module's rule)."""
    owners: dict[str, _Protected] = {}
    for item in protected:
        if item.type == "PERSON":
            for name_part in name_parts(item.value):
                if name_part.casefold() != " ".join(item.value.split()).casefold():
                    owners.setdefault(name_part, item)
    source = trie_regex(owners, fold=False)
    if source is None:
        return
    for m in re.finditer(rf"(?<!\w)(?:{source})(?!\w)", pay.content):
        item = owners.get(m.group())
        if item is None:
            continue
        part, start, end = pay.locate(m.start(), m.end())
        if pay.change_around(part, start, end) is not None:
            continue       # inside a replacement: the mechanism wrote it
        source_range = pay.source_range(part, start, end)
        if source_range is not None and _within(source_range, kept):
            continue       # inside a value the policy keeps at this place
        if m.group().casefold() in lower_words and _starts_sentence(pay.content, m.start()):
            continue       # "Mark the date" where the text also writes "mark": a word
        yield m.start(), m.end(), Finding(
            finding_id(item.type, m.group()), item.type, item.category, m.group(), part,
            start, end, item.score, True,
            f"part of the name of a person protected in this request, written alone; allow "
            f"it only if '{m.group()}' is not that person here", LEAK)


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
    if span.recognizer in NOT_EVIDENCE:
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


def _within(source: tuple[int, int], kept: Iterable[tuple[int, int]]) -> bool:
    return any(s <= source[0] and source[1] <= e for s, e in kept)
