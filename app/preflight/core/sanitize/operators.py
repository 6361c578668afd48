"""The classic operators: redact, delete, mask, placeholder, pseudonym, generalize.

Size (~490 lines): six small operators over one span validation and one reversible base.

Each one replaces every detected span and records the replacement as a
:class:`~preflight.core.types.Change`, so the window can map any range of the output back
to the source. Placeholder and pseudonym are reversible: they fill a
:class:`~preflight.core.sanitize.vault.Vault` (passed as the ``vault`` collaborator, or a
fresh one in ``operator.vault``) from which :func:`~preflight.core.sanitize.vault.restore`
puts the originals back into the sanitized text or an LLM's answer.

Spans may come in any order but must not overlap (a :class:`ValueError` says so). The
pseudonym operator's stand-ins come from :mod:`preflight.core.sanitize.surrogates`.

The reversible operators keep per-call state and their vault on the instance: use one
instance per thread (``create_mechanism`` builds a new one each time).
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from typing import Any, Sequence

from faker import Faker

from preflight.core.pii.canonical import readable
from preflight.core.pii.cleaning import NAME_AFFIXES
from preflight.core.sanitize import generalize as gen
from preflight.core.sanitize.base import SanitizeParams, register
from preflight.core.sanitize.surrogates import placeholder_label, surrogate_for
from preflight.core.sanitize.vault import (
    PLACEHOLDER,
    SURROGATE,
    Vault,
    VaultEntry,
    find_tokens,
    is_word_char,
    placeholder_token,
)
from preflight.core.types import SanitizedText, SanitizeReport, Span, apply_replacements

REDACTED = "[REDACTED]"
MASK_CHAR = "*"
# How often a reversible operator re-draws tokens that would make restoring ambiguous
# before giving up (in practice one round suffices; collisions are rare).
_MAX_ROUNDS = 50


def validate_spans(text: str, spans: Sequence[Span]) -> list[Span]:
    """Spans sorted by start; ValueError if any overlap or fall outside ``text``."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    prev_end = 0
    for span in ordered:
        if span.end > len(text):
            raise ValueError(
                f"span [{span.start}, {span.end}) lies outside a text of {len(text)} characters"
            )
        if span.start < prev_end:
            raise ValueError(
                f"overlapping spans at [{span.start}, {span.end}); resolve overlaps first"
            )
        prev_end = span.end
    return ordered


def document_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _SimpleOperator:
    """An operator whose replacement depends only on the value and its type."""

    name = ""
    reversible = False

    def replacement(self, value: str, span: Span) -> str:
        raise NotImplementedError

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        ordered = validate_spans(text, spans)
        reps = [(s.start, s.end, self.replacement(text[s.start:s.end], s), s.type)
                for s in ordered]
        out, changes = apply_replacements(text, reps)
        return SanitizedText(out, self.name, changes,
                             SanitizeReport(reversible=False, replaced=len(ordered)))


@register("redact")
class RedactOperator(_SimpleOperator):
    """Every value becomes ``[REDACTED]``: the reader sees that something was there,
    but not what kind of thing (use ``placeholder`` to keep the type)."""

    name = "redact"

    def replacement(self, value: str, span: Span) -> str:
        return REDACTED


@register("delete")
class DeleteOperator(_SimpleOperator):
    """Every value is removed; one neighbouring space goes with it so no double spaces
    or space-before-comma remain ("Call Bob now" → "Call now", "Hi Bob, x" → "Hi, x")."""

    name = "delete"

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        ordered = validate_spans(text, spans)
        # Adjacent values form one run; the space rule applies to the run as a whole.
        runs: list[list[Span]] = []
        for s in ordered:
            if runs and runs[-1][-1].end == s.start:
                runs[-1].append(s)
            else:
                runs.append([s])
        reps = []
        prev_end = 0
        prev_at_line_start = False
        for run in runs:
            rs, re_ = run[0].start, run[-1].end
            after = text[re_] if re_ < len(text) else ""
            # Only deleted text between the line start and this run?
            at_line_start = (rs == 0 or text[rs - 1] == "\n"
                             or (rs == prev_end and prev_at_line_start))
            bounds = [[s.start, s.end] for s in run]
            if (not at_line_start and rs - 1 >= prev_end and text[rs - 1] == " "
                    and (after == "" or after in " ,.;:!?)")):
                bounds[0][0] -= 1
            elif at_line_start and after == " ":
                bounds[-1][1] += 1  # value at the start of a line: drop the space after it
            reps.extend((b[0], b[1], "", s.type) for b, s in zip(bounds, run))
            prev_end, prev_at_line_start = bounds[-1][1], at_line_start
        out, changes = apply_replacements(text, reps)
        return SanitizedText(out, self.name, changes,
                             SanitizeReport(reversible=False, replaced=len(ordered)))


@register("mask")
class MaskOperator(_SimpleOperator):
    """Letters and digits become ``*``; separators (space, ``-``, ``.``, ``@``...) stay,
    so the shape survives (``+1 415-555-0100`` → ``+* ***-***-****``). Card numbers keep
    their last four digits, as printed on receipts (PCI DSS allows it)."""

    name = "mask"

    def replacement(self, value: str, span: Span) -> str:
        keep_last = 0
        if span.type == "CREDIT_CARD" and sum(ch.isdigit() for ch in value) >= 12:
            keep_last = 4
        out = []
        kept = 0
        for ch in reversed(value):
            if ch.isdigit() and kept < keep_last:
                out.append(ch)
                kept += 1
            elif ch.isalnum():
                out.append(MASK_CHAR)
            else:
                out.append(ch)
        return "".join(reversed(out))


@register("generalize")
class GeneralizeOperator(_SimpleOperator):
    """Coarser values per type (date → year, age → range...; see ``generalize.RULES``);
    types without a rule become a type marker such as ``[PERSON]``."""

    name = "generalize"

    def replacement(self, value: str, span: Span) -> str:
        return gen.generalize(value, span.type)


# -- reversible operators ----------------------------------------------------------------

_COMPACT_TYPES = frozenset({
    "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "US_ITIN", "US_BANK_NUMBER",
    "BANK_ACCOUNT", "UK_NHS", "US_PASSPORT", "US_DRIVER_LICENSE",
})


def value_key(value: str, entity_type: str) -> str:
    """When two spellings are the same value: numbers ignore separators, everything else
    ignores case and runs of whitespace ("John  Smith" = "JOHN SMITH"); both compare the
    :func:`~preflight.core.pii.canonical.readable` spelling (an encoded word is its text)."""
    value = readable(value)
    if entity_type in _COMPACT_TYPES:
        compact = "".join(ch for ch in value if ch.isalnum()).casefold()
        if compact:
            return compact
    return " ".join(value.split()).casefold()


def _alias_name_parts(keys: list[tuple[str, str]], spans: Sequence[Span]
                      ) -> list[tuple[str, str]]:
    """A first or last name written alone ("Max") takes the key of the one full name it
    belongs to ("Max Power"), so the reader of the sanitized text sees one person, not two.
    A part shared by several full names stays its own value (it is ambiguous)."""
    owners: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for key, span in zip(keys, spans):
        parts = key[1].split()
        if span.type == "PERSON" and len(parts) > 1:
            for part in parts:
                owners.setdefault((key[0], part), set()).add(key)
    out = []
    for key, span in zip(keys, spans):
        full = owners.get(key) if span.type == "PERSON" and " " not in key[1] else None
        out.append(next(iter(full)) if full and len(full) == 1 else key)
    return out


class _ReversibleOperator:
    """``memory`` (a :class:`~preflight.core.sanitize.placeholder_memory.PlaceholderMemory`)
    keeps each value's token stable across sends and edits of one document; the caller
    saves it. Without it, tokens depend on this text alone."""

    name = ""
    reversible = True
    kind = ""

    def __init__(self, vault: Vault | None = None, memory: Any = None) -> None:
        self.vault = vault if vault is not None else Vault()
        self.memory = memory

    # subclass hooks
    def _prepare(self, text: str, params: SanitizeParams) -> None: ...

    def _choose(self, key: tuple[str, str], value: str, span: Span, attempt: int,
                taken: set[str]) -> str:
        raise NotImplementedError

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        ordered = validate_spans(text, spans)
        keys = _alias_name_parts(
            [(self._key_type(s), value_key(text[s.start:s.end], s.type)) for s in ordered],
            ordered,
        )
        first: dict[tuple[str, str], Span] = {}
        forms: dict[tuple[str, str], list[str]] = {}
        for key, s in zip(keys, ordered):
            first.setdefault(key, s)
            forms.setdefault(key, []).append(text[s.start:s.end])
        self._prepare(text, params)
        attempts: dict[tuple[str, str], int] = {}
        banned: set[str] = set()
        sha = document_sha256(text)
        for _ in range(_MAX_ROUNDS):
            self._start_round()
            tokens: dict[tuple[str, str], str] = {}
            taken = set(banned)
            for key, s in first.items():
                tok = self._remembered(key, attempts.get(key, 0), taken) or self._choose(
                    key, readable(forms[key][0]), s, attempts.get(key, 0), taken)
                tokens[key] = tok
                taken.add(tok.casefold())
            reps = [(s.start, s.end, tokens[k], s.type) for k, s in zip(keys, ordered)]
            out, changes = apply_replacements(text, reps)
            glued = self._glued(out, changes)
            entries = []
            for key, s in first.items():
                fs = forms[key]
                # an answer names the person in full and legibly: "Max Power", not the
                # "Max" that happened to come first nor its MIME-encoded header form
                # (exact restore of the document uses ``forms``)
                original = max((readable(f) for f in fs), key=len)
                entries.append(VaultEntry(
                    token=tokens[key], type=s.type, original=original, kind=self.kind,
                    forms=tuple(fs) if any(f != original for f in fs) else (),
                    glued=tokens[key] in glued,
                ))
            self.vault.reset(self.name, sha, entries)
            expected = [(c.start, c.end, c.replacement) for c in changes]
            found = [(s, e, entry.token) for s, e, entry in find_tokens(out, self.vault)]
            if found == expected:
                break
            # Some token also matches elsewhere (or swallows a neighbour): draw those anew.
            bad = {t[2] for t in set(found) ^ set(expected)}
            by_token = {tok: key for key, tok in tokens.items()}
            for tok in bad:
                banned.add(tok.casefold())
                key = by_token.get(tok)
                if key is not None:
                    attempts[key] = attempts.get(key, 0) + 1
        else:  # pragma: no cover - would need an adversarial document
            raise RuntimeError("could not find unambiguous replacement tokens")
        if self.memory is not None:
            for key, tok in tokens.items():
                self.memory.record(self.kind, key[0], key[1], tok)
        report = SanitizeReport(reversible=True, replaced=len(ordered),
                                distinct_values=len(first))
        return SanitizedText(out, self.name, changes, report)

    def _key_type(self, span: Span) -> str:
        return span.type

    def _remembered(self, key: tuple[str, str], attempt: int, taken: set[str]) -> str | None:
        """The token this document's memory gave the value, when it is still usable here."""
        if self.memory is None or attempt:
            return None
        tok = self.memory.token_for(self.kind, key[0], key[1])
        if tok and tok.casefold() not in taken and self._usable(tok):
            return tok
        return None

    def _usable(self, token: str) -> bool:
        return True

    def _start_round(self) -> None: ...

    def _glued(self, out: str, changes) -> set[str]:
        return set()


_MAX_DIGITS = 24                   # longer numbers are looked up in the text directly
_DIGITS = re.compile(rf"_?([0-9]{{1,{_MAX_DIGITS}}})")


def _numbers_after(text: str, label: str) -> set[str]:
    """Every prefix of the ASCII digit runs that follow ``label`` (or ``label_``) in
    ``text``: "person_12" gives {"1", "12"}."""
    out: set[str] = set()
    i = text.find(label)
    while i >= 0:
        m = _DIGITS.match(text, i + len(label))
        if m:
            run = m.group(1)
            out.update(run[:k] for k in range(1, len(run) + 1))
        i = text.find(label, i + 1)
    return out


@register("placeholder")
class PlaceholderOperator(_ReversibleOperator):
    """``<PERSON_1>``, ``<EMAIL_ADDRESS_2>``: one numbered placeholder per distinct value
    and type, numbered in order of first appearance. Numbers the document already uses
    (a literal "PERSON_1" in the text) are skipped, so restoring is never ambiguous."""

    name = "placeholder"
    kind = PLACEHOLDER

    def _prepare(self, text: str, params: SanitizeParams) -> None:
        # Every spelling restore() accepts lower-cases to "label_n" or "labeln" once
        # spaces and hyphens become underscores, so a substring test is a safe superset.
        self._norm = text.lower().replace(" ", "_").replace("-", "_")
        self._numbers: dict[str, set[str]] = {}

    def _start_round(self) -> None:
        self._next: dict[str, int] = {}

    def _key_type(self, span: Span) -> str:
        return placeholder_label(span.type)

    def _usable(self, token: str) -> bool:
        label, _, n = token[1:-1].rpartition("_")
        return not self._in_text(label.lower(), n)

    def _in_text(self, low: str, n: int | str) -> bool:
        """Whether ``{low}_{n}`` or ``{low}{n}`` occurs in the text (as a substring).

        Asked once per value: a substring search each time would make a document of
        tens of thousands of values quadratic, so the numbers that follow each label in
        the text are collected once (every digit prefix, as a substring test sees them).
        """
        n = str(n)
        if len(n) > _MAX_DIGITS:
            return f"{low}_{n}" in self._norm or f"{low}{n}" in self._norm
        numbers = self._numbers.get(low)
        if numbers is None:
            numbers = self._numbers[low] = _numbers_after(self._norm, low)
        return n in numbers

    def _choose(self, key, value, span, attempt, taken) -> str:
        label = key[0]
        # New values come after every number this document's values ever had.
        first = self.memory.highest(label) + 1 if self.memory is not None else 1
        n = self._next.get(label, first)
        low = label.lower()
        while self._in_text(low, n) or placeholder_token(label, n).casefold() in taken:
            n += 1
        self._next[label] = n + 1
        return placeholder_token(label, n)


#: A stand-in number shares no run this long with the real one (the leak check's "part").
SHARED_DIGITS = 4
#: Draws that must also avoid parts of real values; later draws only avoid whole values
#: (a value space too small to avoid every part, such as a two-digit number).
_PART_ATTEMPTS = 50
_WORD = re.compile(r"[^\W\d_]{3,}")
_NAME_TYPES = frozenset({"PERSON", "NRP", "ORGANIZATION", "LOCATION", "STREET_ADDRESS",
                         "ADDRESS"})
_DIGIT_TYPES = frozenset({"CREDIT_CARD", "IBAN_CODE", "PHONE_NUMBER", "US_SSN", "US_ITIN",
                          "US_BANK_NUMBER", "BANK_ACCOUNT", "UK_NHS", "US_PASSPORT",
                          "US_DRIVER_LICENSE", "NATIONAL_ID", "ID_NUMBER"})


def _digit_runs(value: str) -> set[str]:
    """Every run of SHARED_DIGITS consecutive digits of ``value``, separators ignored."""
    digits = "".join(ch for ch in value if ch.isdigit())
    return {digits[i:i + SHARED_DIGITS] for i in range(len(digits) - SHARED_DIGITS + 1)}


@register("pseudonym")
class PseudonymOperator(_ReversibleOperator):
    """A realistic surrogate of the same type for every distinct value (Faker): names
    become names, emails become ``@example.*`` addresses, cards pass Luhn, IBANs pass
    mod-97, dates keep their format. ``params.seed`` makes the choice reproducible —
    keep that seed secret, since with it a guessed value can be checked against a
    surrogate. Surrogates never occur in the document and never repeat, and none carries a
    part of a real value: no word of a stand-in name, firm, place or address is a word of
    a protected value (a surname alone is a leak), and no run of :data:`SHARED_DIGITS` digits of a stand-in number is
    one of the real number's."""

    name = "pseudonym"
    kind = SURROGATE

    def _prepare(self, text: str, params: SanitizeParams) -> None:
        self._folded = text.casefold()
        self._seed = params.seed if params.seed is not None else secrets.randbits(64)
        self._faker = Faker("en_US")
        # one factor for every amount of money in the document: orders and ratios survive
        # ("a raise from $85,000 to $92,000" stays a raise), the amounts do not
        digest = hashlib.sha256(f"{self._seed}\x00amounts".encode()).digest()
        pick = random.Random(int.from_bytes(digest[:8], "big"))
        self._amount_scale = pick.choice((pick.uniform(0.55, 0.9), pick.uniform(1.1, 1.6)))

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        # the capitalized words of every protected value (its names, not "and" or
        # "Mrs"): no stand-in name may carry one
        self._real_words = frozenset(
            w.casefold() for s in spans for w in _WORD.findall(text[s.start:s.end])
            if w[0].isupper() and w.casefold() not in NAME_AFFIXES)
        # and every run of SHARED_DIGITS digits of a protected number: no stand-in (a
        # number, a date) may carry one
        self._real_runs = frozenset(
            run for s in spans if s.type in _DIGIT_TYPES
            for run in _digit_runs(text[s.start:s.end]))
        return super().sanitize(text, spans, params)

    def _choose(self, key, value, span, attempt, taken) -> str:
        for extra in range(1000):
            a = attempt + extra
            digest = hashlib.sha256(
                f"{self._seed}\x00{key[0]}\x00{key[1]}\x00{a}".encode("utf-8", "surrogatepass")
            ).digest()
            seed = int.from_bytes(digest[:8], "big")
            self._faker.seed_instance(seed)
            rng = random.Random(seed)
            # a collision (the scaled amount is already in the text) nudges the factor
            sur = surrogate_for(value, span.type, self._faker, rng,
                                amount_scale=self._amount_scale * (1 + 0.002 * a))
            if a >= 20:
                # Long collisions mean a tiny value space (a 1-letter value): widen it.
                sur += "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(a // 10))
            folded = sur.casefold()
            if (sur and folded not in self._folded and folded not in taken
                    and not (extra < _PART_ATTEMPTS and self._carries_part(value, sur, span))):
                return sur
        raise RuntimeError("no free surrogate")  # pragma: no cover

    def _usable(self, token: str) -> bool:
        return token.casefold() not in self._folded

    def _carries_part(self, value: str, sur: str, span: Span) -> bool:
        """Whether the stand-in ``sur`` repeats a part of a real value by chance: a word
        of a protected value in a stand-in name ("Burton-Roberts" for a firm when the
        document names Joseph Roberts), or a digit run of a protected number in any
        stand-in (a card's "2030" as a date's year)."""
        if span.type in _NAME_TYPES and any(
                w in self._real_words for w in _WORD.findall(sur.casefold())):
            return True
        return not self._real_runs.isdisjoint(_digit_runs(sur))

    def _glued(self, out: str, changes) -> set[str]:
        glued = set()
        for c in changes:
            tok = c.replacement
            if not tok:
                continue
            if (c.start > 0 and is_word_char(tok[0]) and is_word_char(out[c.start - 1])) or (
                c.end < len(out) and is_word_char(tok[-1]) and is_word_char(out[c.end])
            ):
                glued.add(tok)
        return glued
