"""Organizations the small NER model misses: names ending in a legal/company suffix
("Reid LLC", "Tucker and Sons") and partnership-style names ("Parks, Miller and Rosales")."""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer
from preflight.core.pii.recognizers.names import COMPANY_SUFFIX as _SUFFIX, PEOPLE_LINE

_FIRST_NOT = r"(?!(?:The|This|That|These|Those|Our|We|A|An|In|For|By|With|At|On|Of|And)\b)"
_WORD = r"[A-Z][\w&'’.-]*"
_SURNAME = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"


_PARTNERSHIP = Rule("ORGANIZATION", re.compile(
    rf"(?<![\w-]){_FIRST_NOT}{_SURNAME},[ \t]+{_SURNAME},?[ \t]+(?:and|&)[ \t]+{_SURNAME}"
    r"(?![\w-])"), 0.55, "A partnership-style firm name (Name, Name and Name)")


class OrganizationCueRecognizer(RuleRecognizer):
    """Capitalized names closed by a company suffix, and "A, B and C" firm names (not on
    a line that lists people: a memo's "To:", minutes' "Attendees:")."""

    RULES = (
        Rule("ORGANIZATION", re.compile(
            rf"(?<![\w-]){_FIRST_NOT}(?:{_WORD}[ \t]+){{0,3}}?{_WORD},?[ \t]+{_SUFFIX}(?![\w-])"),
            0.75, "Capitalized words ending in a company suffix (Inc, LLC, Ltd, Group…)"),
        _PARTNERSHIP,
    )

    def apply_rule(self, rule: Rule, text: str) -> list:  # noqa: D102
        results = super().apply_rule(rule, text)
        if rule is not _PARTNERSHIP:
            return results
        # on a line that lists people, "To: All staff, Fernandez, Harris and Webb" names
        # three people, not the firm "Fernandez, Harris and Webb"
        return [r for r in results
                if not PEOPLE_LINE.match(text, text.rfind("\n", 0, r.start) + 1)]
