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
from preflight.core.types import Evidence

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


_RUN = re.compile(r"(?<![\w])(?=(\S+))")
_WORD_CHAR = re.compile(r"\w")


def _rest_pattern(lengths: Sequence[int]) -> re.Pattern[str]:
    """The words after the first: whitespace, then words of these lengths, whole words."""
    return re.compile("".join(rf"\s+\S{{{n}}}" for n in lengths) + r"(?![\w])")


class DenyListRecognizer(EntityRecognizer):
    """Every whole-word, case-insensitive occurrence of a deny-list value.

    ``terms``: values in clear, held in memory; ``entries``: saved entries, found through
    their key (a missing key is a ConfigError: those values would otherwise pass).
    """

    evidence = Evidence.RULE

    WHY = WHY_TERM

    def __init__(self, terms: Iterable[str] = (), entries: Iterable[DenyEntry] = (),
                 entity: str = "DENY_LIST", name: str | None = None) -> None:
        self.entity = entity
        # shape -> [(keyed hasher, {digest: entity})]
        self._tables: dict[tuple[int, ...], list[tuple[Any, dict[bytes, str]]]] = {}
        self._hashers: dict[bytes, Any] = {}
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
        self._single = {shape[0]: tables for shape, tables in self._tables.items()
                        if len(shape) == 1}
        self._several: dict[int, list[tuple[re.Pattern[str], list]]] = {}
        for shape, tables in self._tables.items():
            if len(shape) > 1:
                self._several.setdefault(shape[0], []).append((_rest_pattern(shape[1:]),
                                                               tables))
        super().__init__(supported_entities=[entity, "SECRET"], name=name,
                         supported_language="en")

    def _add(self, entry: DenyEntry, key: bytes) -> None:
        entity = entry.entity if entry.entity == "SECRET" else self.entity
        hasher = self._hashers.setdefault(key, deny_store.hasher(key))
        tables = self._tables.setdefault(tuple(entry.lengths), [])
        for h, table in tables:
            if h is hasher:
                table[bytes.fromhex(entry.digest)] = entity
                return
        tables.append((hasher, {bytes.fromhex(entry.digest): entity}))

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        # Ad-hoc recognizers' entities are not in Presidio's "all entities" list: no filter.
        out: list[Any] = []

        def check(start: int, end: int, tables, one_word: bool = False) -> None:
            window = text[start:end]
            # one word needs no whitespace folding: the same bytes as deny_store.encoded
            msg = (window.casefold().encode("utf-8", "surrogatepass") if one_word
                   else deny_store.encoded(window))
            for hasher, table in tables:
                h = hasher.copy()
                h.update(msg)
                entity = table.get(h.digest())
                if entity is not None:
                    why = WHY_SECRET if entity == "SECRET" else WHY_TERM
                    out.append(make_result(self, entity, start, end, 1.0, why))
                    return

        # One pass: from each place a word may start, the run of non-space characters.
        # A one-word window is the run cut at its end or at a non-word character (a run
        # of word characters only at its end); the first word of several is the whole
        # run (whitespace follows it), and the rest is matched right after it.
        single, several = self._single, self._several
        for m in _RUN.finditer(text):
            run, start = m.group(1), m.start(1)
            size = len(run)
            if run.isalnum():
                if size in single:
                    check(start, start + size, single[size], one_word=True)
            elif single:
                for n in single:
                    if n == size or (n < size and not _WORD_CHAR.match(run, n)):
                        check(start, start + n, single[n], one_word=True)
            for rest, tables in several.get(size, ()):
                tail = rest.match(text, start + size)
                if tail is not None:
                    check(start, tail.end(), tables)
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
