"""The user's deny-list: values that are always sensitive (codenames, client names, a
password the detector missed).

Saved entries hold no value (:mod:`preflight.core.pii.deny_store`): the recognizer finds
them by hashing every text window of an entry's shape — its word lengths, whole words,
any run of whitespace between them — and comparing keyed hashes. Values held in memory
only (the CLI's per-run ``--deny``, the window's "this document only") go the same way
under a key of this recognizer's own, so both kinds match alike: case-insensitive, whole
words. A secret-shaped value is found as a SECRET, anything else as DENY_LIST.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from presidio_analyzer import EntityRecognizer

from preflight.core.errors import ConfigError
from preflight.core.pii import deny_store
from preflight.core.pii.deny_store import DenyEntry
from preflight.core.pii.recognizers.base import make_result

WHY_TERM = "On your deny-list"
WHY_SECRET = "A secret you asked Preflight to protect (deny-list)"


def term_pattern(terms: Iterable[str]) -> re.Pattern[str] | None:
    """Case-insensitive whole-word alternation (longest first); None when empty.

    Whole-word means no letter/digit right before or after; a term's inner spaces match
    any run of whitespace.
    """
    cleaned = sorted({t.strip() for t in terms if t and t.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    alts = [r"\s+".join(re.escape(w) for w in t.split()) for t in cleaned]
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])", re.IGNORECASE)


def _shape_pattern(lengths: Sequence[int]) -> re.Pattern[str]:
    """Every window of these word lengths, whole words (overlapping: a lookahead)."""
    words = r"\s+".join(rf"\S{{{n}}}" for n in lengths)
    return re.compile(rf"(?=(?<![\w])({words})(?![\w]))")


class DenyListRecognizer(EntityRecognizer):
    """Every whole-word, case-insensitive occurrence of a deny-list value.

    ``terms``: values in clear, held in memory; ``entries``: saved entries, found through
    their key (a missing key is a ConfigError: those values would otherwise pass).
    """

    WHY = WHY_TERM

    def __init__(self, terms: Iterable[str] = (), entries: Iterable[DenyEntry] = (),
                 entity: str = "DENY_LIST", name: str | None = None) -> None:
        self.entity = entity
        # shape -> [(key, {digest: entity})]
        self._tables: dict[tuple[int, ...], list[tuple[bytes, dict[str, str]]]] = {}
        own_key = secrets.token_bytes(32)
        for term in terms:
            if term and term.strip():
                self._add(deny_store.make_entry(term, own_key), own_key)
        entries = list(entries)
        missing = 0
        for entry in entries:
            key = deny_store.key_for(entry.key_id)
            if key is None:
                missing += 1
                continue
            self._add(entry, key)
        if missing:
            raise ConfigError(
                f"The key of {missing} deny-list entr{'y' if missing == 1 else 'ies'} is "
                f"missing (it was in the OS keyring or {deny_store.key_file()}), so "
                f"{'it' if missing == 1 else 'they'} cannot be found in documents.",
                "Remove them in Settings → Policy and add them again.")
        self._patterns = {shape: _shape_pattern(shape) for shape in self._tables}
        super().__init__(supported_entities=[entity, "SECRET"], name=name,
                         supported_language="en")

    def _add(self, entry: DenyEntry, key: bytes) -> None:
        entity = entry.entity if entry.entity == "SECRET" else self.entity
        tables = self._tables.setdefault(tuple(entry.lengths), [])
        for k, table in tables:
            if k == key:
                table[entry.digest] = entity
                return
        tables.append((key, {entry.digest: entity}))

    @property
    def empty(self) -> bool:
        return not self._tables

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        # Ad-hoc recognizers' entities are not in Presidio's "all entities" list: no filter.
        out: list[Any] = []
        for shape, pattern in self._patterns.items():
            tables = self._tables[shape]
            for m in pattern.finditer(text):
                window = m.group(1)
                for key, table in tables:
                    entity = table.get(deny_store.digest(key, window))
                    if entity is not None:
                        why = WHY_SECRET if entity == "SECRET" else WHY_TERM
                        out.append(make_result(self, entity, m.start(1), m.end(1), 1.0, why))
                        break
        return sorted(out, key=lambda r: (r.start, -r.end))


def deny_recognizer(settings: Any) -> DenyListRecognizer | None:
    """The recognizer of ``settings``' deny-list (DetectionSettings; None: nothing listed)."""
    terms = list(getattr(settings, "deny_list", ()) or ())
    entries = list(getattr(settings, "deny_entries", ()) or ())
    if not terms and not entries:
        return None
    return DenyListRecognizer(terms, entries)


def deny_variant(settings: Any) -> tuple:
    """What detection results depend on in the deny-list (a cache key part)."""
    entries = getattr(settings, "deny_entries", ()) or ()
    return (tuple(getattr(settings, "deny_list", ()) or ()),
            tuple((e.digest, e.key_id, e.kind) for e in entries))
