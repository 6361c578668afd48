"""The contextual reconstruction attack: can the local SLM put the original back?

The local model is asked to restore the original document from the payload (what the
cloud would read), and its answer is scored against the ground truth the sanitization
knows — the values it replaced:

- *protected values*: every value an operator replaced (placeholder, pseudonym, mask,
  generalization…) and every detected value d_X changed. One counts as **recovered** when
  the reconstruction writes it again, verbatim or after normalization (case, punctuation
  and spacing; digits only for numbers); a person's name counts as **partial** when only
  one of its words comes back. For placeholders this catches the context that gives a
  person away (a name the detector missed elsewhere, a title and a town).
- *changed words*: every word inside a change. The share **restored** is how many of
  them the reconstruction writes beyond the copies the payload already holds (a multiset
  count, so copying the payload restores nothing). For d_X this is the noise the model
  sees through.

The attack runs the SLM once, within a bounded budget: it reads at most
:data:`MAX_ATTACK_WORDS` words of the payload (only values inside that window are scored)
and writes at most :data:`MAX_ATTACK_TOKENS` tokens. It reports progress per step (waiting
for the model, then each token written) and stops at once when its cancel event is set
(the local model checks it between tokens and inside a batch). Its typical duration is
measured by ``preflight_eval.bench_privacy --reconstruct``. It is an on-demand
measurement, never part of the live preview.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from preflight.core.ports import LanguageModel, Progress
from preflight.core.sanitize.policy import effective_type
from preflight.core.tasks import Task
from preflight.core.types import Change, SanitizedText, Span

#: Payload words the SLM reads (its answer must fit the context, and a small model loses
#: track of a long text: the window keeps the measurement about inference, not memory).
MAX_ATTACK_WORDS = 250
#: Tokens the SLM may write: about 1.3 tokens a word restores the window's words, with room
#: for placeholders spelled out; the cap bounds the time on a slow or busy machine.
MAX_ATTACK_TOKENS = 448
TOKENS_PER_WORD = 1.6

_WORD = re.compile(r"\w+", re.UNICODE)
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
_NUMBER_RUN = re.compile(r"\d[\d\s().+/-]*\d|\d")
_NAME_KINDS = {"PERSON": "name"}
_ADDRESS_TYPES = {"STREET_ADDRESS", "LOCATION", "EMAIL_ADDRESS", "IP_ADDRESS", "URL"}
_DATE_TYPES = {"DATE_TIME", "PARTIAL_DATE", "RELATIVE_DATE", "DATE_OF_BIRTH", "AGE"}

_ALTERATIONS = {
    "placeholder": "names and other details were replaced by numbered placeholders such "
                   "as <PERSON_1>",
    "stand-in": "some names, places, numbers and dates were replaced by made-up stand-ins "
                "or by coarser values",
    "masked": "some details were masked with * or [REDACTED], or removed",
    "dx": "many words were swapped at random for other, similar words",
}


@dataclass(frozen=True)
class ReconstructTask(Task):
    """The attack's request to the SLM (a :class:`Task`, so any LanguageModel runs it)."""

    alterations: tuple[str, ...] = ()

    def instruction(self) -> str:
        how = "; ".join(_ALTERATIONS[a] for a in self.alterations) or "some details changed"
        return ("The document below is a copy of a private text that was altered before it "
                f"was shared: {how}. Reconstruct the original text as exactly as you can. "
                "Replace every placeholder, stand-in or swapped word with the real value or "
                "word it most likely hid, using every clue in the text (a name written "
                "elsewhere, a job title, a place, a date). Output only the reconstructed "
                "text.")

    def completion_prompt(self, document: str) -> str:
        return f"{self.instruction()}\n\n{document.strip()}\n\nOriginal:"


@dataclass(frozen=True)
class ProtectedValue:
    """One value the sanitization replaced, and whether the reconstruction brought it back."""

    type: str
    kind: str              # "name", "number", "address", "date", "organization", "other"
    value: str
    match: str | None      # "exact", "normalized", "partial" (a name's word) or None
    in_payload: bool       # the payload itself still writes it somewhere (a missed mention)

    @property
    def recovered(self) -> bool:
        return self.match in ("exact", "normalized")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "kind": self.kind, "value": self.value,
                "match": self.match, "recovered": self.recovered,
                "in_payload": self.in_payload}


@dataclass(frozen=True)
class ReconstructionReport:
    values: tuple[ProtectedValue, ...]
    words_changed: int
    words_restored: int
    reconstruction: str
    attacked_words: int            # payload words the SLM read
    payload_words: int
    notes: tuple[str, ...] = field(default=())

    @property
    def values_recovered(self) -> int:
        return sum(v.recovered for v in self.values)

    @property
    def restored_share(self) -> float | None:
        return self.words_restored / self.words_changed if self.words_changed else None

    def by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for v in self.values:
            row = out.setdefault(v.kind, {"total": 0, "recovered": 0, "partial": 0})
            row["total"] += 1
            row["recovered"] += v.recovered
            row["partial"] += v.match == "partial"
        return out

    def to_json(self) -> dict[str, Any]:
        share = self.restored_share
        return {
            "values_total": len(self.values), "values_recovered": self.values_recovered,
            "by_kind": self.by_kind(), "values": [v.to_json() for v in self.values],
            "words_changed": self.words_changed, "words_restored": self.words_restored,
            "restored_share": None if share is None else round(share, 4),
            "attacked_words": self.attacked_words, "payload_words": self.payload_words,
            "reconstruction": self.reconstruction, "notes": list(self.notes),
        }


class ReconstructionAttack:
    """Runs the attack with the local model it is given (a
    :class:`~preflight.core.ports.LanguageModel`; the composition root passes the real one)."""

    def __init__(self, slm: LanguageModel, max_words: int = MAX_ATTACK_WORDS,
                 max_tokens: int = MAX_ATTACK_TOKENS) -> None:
        self._slm = slm
        self.max_words = max_words
        self.max_tokens = max_tokens

    def run(self, original: str, sanitized: SanitizedText, spans: Sequence[Span] = (), *,
            cancel: threading.Event | None = None, progress: Progress | None = None
            ) -> ReconstructionReport:
        window = attack_window(sanitized.text, self.max_words)
        payload = sanitized.text[:window]
        changes = [c for c in sanitized.changes if c.end <= window and _altered(c)]
        if not changes:
            return score(original, sanitized, spans, "", window,
                         notes=("Nothing in the payload was changed: there is nothing to "
                                "reconstruct.",))
        budget = min(self.max_tokens,
                     int(len(_WORD.findall(payload)) * TOKENS_PER_WORD) + 32)
        task = ReconstructTask("reconstruct", max_tokens=budget,
                               alterations=alterations(changes))
        seen = [0]
        if progress is not None:
            progress(0.0, "waiting")

        def on_token(_piece: str) -> None:
            seen[0] += 1
            if progress is not None:
                progress(min(0.99, seen[0] / budget), "writing")

        answer = self._slm.run(task, payload, on_token=on_token, cancel=cancel)
        if progress is not None:
            progress(1.0, "reconstructed")
        return score(original, sanitized, spans, answer, window)


def attack_window(payload: str, max_words: int) -> int:
    """The payload prefix the attack reads: up to ``max_words`` words, ended at the line
    or sentence after the last one when that is near (offset of its end)."""
    words = list(_WORD.finditer(payload))
    if len(words) <= max_words:
        return len(payload)
    cut = words[max_words - 1].end()
    stop = re.compile(r"[.!?](?=\s)|\n").search(payload, cut, cut + 200)
    return stop.end() if stop else cut


def alterations(changes: Sequence[Change]) -> tuple[str, ...]:
    """Which kinds of alteration the payload shows (they shape the attack's prompt)."""
    found = []
    for c in changes:
        if c.type == "TOKEN":
            kind = "dx"
        elif _PLACEHOLDER.fullmatch(c.replacement.strip()):
            kind = "placeholder"
        elif not c.replacement.strip() or "*" in c.replacement or "REDACTED" in c.replacement:
            kind = "masked"
        else:
            kind = "stand-in"
        if kind not in found:
            found.append(kind)
    return tuple(found)


def score(original: str, sanitized: SanitizedText, spans: Sequence[Span],
          reconstruction: str, window: int | None = None,
          notes: tuple[str, ...] = ()) -> ReconstructionReport:
    """Score ``reconstruction`` against what the sanitization changed in the payload's
    first ``window`` characters (None: all of it)."""
    window = len(sanitized.text) if window is None else window
    payload = sanitized.text[:window]
    changes = [c for c in sanitized.changes if c.end <= window and _altered(c)]
    values = _protected_values(original, spans, changes)
    recon_norm = f" {_norm(reconstruction)} "
    recon_numbers = {_digits(m.group(0)) for m in _NUMBER_RUN.finditer(reconstruction)}
    recon_words = Counter(w.casefold() for w in _WORD.findall(reconstruction))
    payload_norm = f" {_norm(sanitized.text)} "
    scored = tuple(
        ProtectedValue(t, _kind(t, v), v,
                       _match(t, v, reconstruction, recon_norm, recon_numbers, recon_words),
                       f" {_norm(v)} " in payload_norm)
        for t, v in values)
    changed = Counter(w.casefold() for c in changes for w in _WORD.findall(c.original))
    in_payload = Counter(w.casefold() for w in _WORD.findall(payload))
    restored = sum(min(n, max(0, recon_words[w] - in_payload[w])) for w, n in changed.items())
    return ReconstructionReport(scored, sum(changed.values()), restored, reconstruction,
                                len(_WORD.findall(payload)),
                                len(_WORD.findall(sanitized.text)), notes)


def _altered(c: Change) -> bool:
    return c.replacement.casefold() != c.original.casefold()


def _protected_values(original: str, spans: Sequence[Span], changes: Sequence[Change]
                      ) -> list[tuple[str, str]]:
    """(type, original value) of every value replaced inside the window, each once."""
    found: list[tuple[int, str, str]] = []
    for c in changes:
        if c.type != "TOKEN" and c.original.strip():
            found.append((c.source_start, c.type, c.original.strip()))
    tokens = [c for c in changes if c.type == "TOKEN"]
    for s in spans:
        value = original[s.start:s.end]
        # (the token changes are the window's, so a span they touch is in the window)
        if any(c.source_start < s.end and c.source_end > s.start for c in tokens):
            found.append((s.start, effective_type(s, value), value.strip()))
    found.sort()
    seen: set[tuple[str, str]] = set()
    out = []
    for _pos, t, v in found:
        key = (t, _norm(v))
        if key not in seen and key[1]:
            seen.add(key)
            out.append((t, v))
    return out


def _norm(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _numeric(value: str) -> bool:
    digits = len(_digits(value))
    return digits >= 3 and digits * 2 >= sum(ch.isalnum() for ch in value)


def _kind(etype: str, value: str) -> str:
    if etype in _NAME_KINDS:
        return _NAME_KINDS[etype]
    if etype in _ADDRESS_TYPES:
        return "address"
    if etype in _DATE_TYPES:
        return "date"
    if etype == "ORGANIZATION":
        return "organization"
    return "number" if _numeric(value) else "other"


def _match(etype: str, value: str, recon: str, recon_norm: str, recon_numbers: set[str],
           recon_words: Counter) -> str | None:
    if re.search(rf"(?<!\w){re.escape(value)}(?!\w)", recon):
        return "exact"
    if f" {_norm(value)} " in recon_norm:
        return "normalized"
    if _numeric(value) and _digits(value) in recon_numbers:
        return "normalized"
    if etype == "PERSON":
        parts = [w.casefold() for w in _WORD.findall(value) if len(w) >= 3]
        if len(parts) > 1 and any(recon_words[p] for p in parts):
            return "partial"
    return None
