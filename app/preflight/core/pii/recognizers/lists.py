"""The user's deny-list: words that are always sensitive (codenames, client names)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.recognizers.base import make_result
from preflight.core.types import Evidence


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


class DenyListRecognizer(EntityRecognizer):
    """Every whole-word, case-insensitive occurrence of a deny-list term."""

    evidence = Evidence.RULE

    WHY = "On your deny-list"

    def __init__(self, terms: Iterable[str], entity: str = "DENY_LIST",
                 name: str | None = None) -> None:
        self.pattern = term_pattern(terms)
        self.entity = entity
        super().__init__(supported_entities=[entity], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        # Ad-hoc recognizers' entities are not in Presidio's "all entities" list: no filter.
        if self.pattern is None:
            return []
        return [make_result(self, self.entity, m.start(), m.end(), 1.0, self.WHY)
                for m in self.pattern.finditer(text)]
