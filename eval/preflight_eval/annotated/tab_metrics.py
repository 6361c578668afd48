"""TAB's evaluation of a masking (Pilán et al. 2022, "The Text Anonymization Benchmark"),
written here from the paper's definitions.

A system's output is the set of characters of the original it masked, with the entity
type it masked them as. Against people's annotations:

- a **mention** is masked when every one of its word tokens (``\\w+``) is masked, except
  tokens that carry nothing to hide: titles (Mr, Mrs, Dr, Prof, Herr, Mme...), function
  words (articles, prepositions, conjunctions, "no"), the ``s`` of a possessive; spaces
  and punctuation never count;
- an **entity** (all mentions sharing an ``entity_id``) is protected only when every one
  of its mentions that must be masked (DIRECT or QUASI) is masked: one missed mention
  leaves it exposed. Entity recall is reported apart for DIRECT and for QUASI entities
  (an entity is DIRECT when any of its mentions is), overall and per entity type;
- **mention recall** counts mentions that must be masked;
- **precision** (unweighted, token level): the masked text cut into ``\\w+`` tokens; a
  token is right when it lies inside a mention that must be masked. Tokens masked
  outside such mentions are text the annotators left visible. TAB's paper also weighs
  each token by its information content; this precision does not.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MASK_LEVELS = ("DIRECT", "QUASI")
_WORD = re.compile(r"\w+")

#: Honorifics and titles written before a name (English and the common European ones).
TITLES = frozenset({
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "dame", "madam", "mme", "mlle",
    "herr", "frau", "sr", "sra", "sig", "signora",
})
#: Words that carry no identifying content inside a mention ("the", "of", "between").
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "by", "for", "from", "to",
    "with", "into", "over", "since", "until", "about", "after", "before", "between",
    "during", "as", "no", "nr",
})


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    type: str            # PERSON, CODE, LOC, ORG, DEM, DATETIME, QUANTITY, MISC (TAB)
    identifier: str      # DIRECT, QUASI or NO_MASK
    entity_id: str

    @property
    def to_mask(self) -> bool:
        return self.identifier in MASK_LEVELS


@dataclass(frozen=True)
class AnnotatedDoc:
    doc_id: str
    text: str
    mentions: tuple[Mention, ...]


@dataclass(frozen=True)
class Masked:
    """Characters ``[start, end)`` of the original the system masked, as ``type``."""

    start: int
    end: int
    type: str


def ignorable(text: str, start: int, end: int) -> bool:
    """Whether the token ``text[start:end]`` may stay visible inside a masked mention."""
    word = text[start:end].casefold()
    if word in TITLES or word in FUNCTION_WORDS:
        return True
    return word == "s" and start > 0 and text[start - 1] in "'’"


def content_tokens(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The word tokens of ``text[start:end]`` that must be masked for it to be masked."""
    return [(start + m.start(), start + m.end()) for m in _WORD.finditer(text[start:end])
            if not ignorable(text, start + m.start(), start + m.end())]


def masked_chars(masks: Iterable[Masked]) -> set[int]:
    return {i for m in masks for i in range(m.start, m.end)}


def mention_masked(text: str, mention: Mention, chars: set[int]) -> bool:
    return all(all(i in chars for i in range(s, e))
               for s, e in content_tokens(text, mention.start, mention.end))


@dataclass
class Ratio:
    total: int = 0
    hit: int = 0

    def add(self, ok: bool) -> None:
        self.total += 1
        self.hit += ok

    @property
    def value(self) -> float | None:
        return self.hit / self.total if self.total else None

    def as_dict(self) -> dict:
        value = self.value
        return {"n": self.total, "hit": self.hit,
                "value": None if value is None else round(value, 4)}


@dataclass
class Entity:
    doc_id: str
    entity_id: str
    type: str
    level: str                          # DIRECT or QUASI
    mentions: list[Mention] = field(default_factory=list)


def entities(doc: AnnotatedDoc) -> list[Entity]:
    """The document's entities that must be masked, each with the mentions to mask."""
    grouped: dict[str, list[Mention]] = defaultdict(list)
    for m in doc.mentions:
        grouped[m.entity_id].append(m)
    out = []
    for entity_id, mentions in grouped.items():
        to_mask = [m for m in mentions if m.to_mask]
        if not to_mask:
            continue
        level = "DIRECT" if any(m.identifier == "DIRECT" for m in to_mask) else "QUASI"
        kind = Counter(m.type for m in to_mask).most_common(1)[0][0]
        out.append(Entity(doc.doc_id, entity_id, kind, level, to_mask))
    return out


@dataclass
class Score:
    """TAB's numbers for one system over a set of documents."""

    entity: dict[str, Ratio] = field(default_factory=lambda: {k: Ratio() for k in MASK_LEVELS})
    mention: dict[str, Ratio] = field(default_factory=lambda: {k: Ratio() for k in MASK_LEVELS})
    # entity type -> level -> entity recall
    entity_by_type: dict[str, dict[str, Ratio]] = field(
        default_factory=lambda: defaultdict(lambda: {k: Ratio() for k in MASK_LEVELS}))
    precision: Ratio = field(default_factory=Ratio)
    # the type the system masked as -> tokens masked, of them inside a mention to mask
    precision_by_masked_type: dict[str, Ratio] = field(default_factory=lambda: defaultdict(Ratio))
    missed: list[str] = field(default_factory=list)   # "LEVEL TYPE 'mention'" per miss

    def as_dict(self) -> dict:
        return {
            "entity_recall": {k: v.as_dict() for k, v in self.entity.items()},
            "mention_recall": {k: v.as_dict() for k, v in self.mention.items()},
            "entity_recall_by_type": {
                t: {k: r.as_dict() for k, r in levels.items() if r.total}
                for t, levels in sorted(self.entity_by_type.items())},
            "precision": self.precision.as_dict(),
            "precision_by_masked_type": {t: r.as_dict() for t, r in
                                         sorted(self.precision_by_masked_type.items())},
        }


def score(docs: Sequence[AnnotatedDoc], masks: Sequence[Sequence[Masked]]) -> Score:
    """TAB's recall and precision of ``masks`` (one list of disjoint ranges per document)
    on ``docs``."""
    out = Score()
    for doc, doc_masks in zip(docs, masks, strict=True):
        chars = masked_chars(doc_masks)
        for ent in entities(doc):
            ok = True
            for m in ent.mentions:
                hit = mention_masked(doc.text, m, chars)
                out.mention[ent.level].add(hit)
                if not hit:
                    ok = False
                    out.missed.append(f"{ent.level} {m.type} {doc.text[m.start:m.end]!r}")
            out.entity[ent.level].add(ok)
            out.entity_by_type[ent.type][ent.level].add(ok)
        to_mask = sorted((m.start, m.end) for m in doc.mentions if m.to_mask)
        for piece_start, piece_end, kind in masked_tokens(doc.text, doc_masks):
            inside = any(s <= piece_start and piece_end <= e for s, e in to_mask)
            out.precision.add(inside)
            out.precision_by_masked_type[kind].add(inside)
    return out


def masked_tokens(text: str, masks: Iterable[Masked]) -> list[tuple[int, int, str]]:
    """The masked text cut into word tokens, each with the type it was masked as."""
    return [(m.start + w.start(), m.start + w.end(), m.type) for m in masks
            for w in _WORD.finditer(text[m.start:m.end])]
