"""Identifiers a label names: an SSN-shaped number next to "SSN" / "social security",
and employee, customer, contract (…) numbers after their label ("employee ID NW-204871",
"Customer No. 4471-220", "contract ref CT-2024-0193").

Presidio's SSN recognizer drops numbers its validator calls invalid (the famous sample
078-05-1120, the sequence 123-45-6789); next to an SSN word the number is protected
whatever its digits, since a real SSN written there is what matters. Without a label
nothing matches: "version 2.0.1", "room 204", years and prices stay prose.
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex

_I = re.IGNORECASE

_SSN_WORDS = context_regex([
    "ssn", "ssns", "ss#", "ss no", "ssn#", "social security", "social security number",
    "social security no", "social sec", "soc sec", "soc. sec.", "social insurance number",
])


def _not_blank_form(value: str) -> bool:
    """"SSN: 000-00-0000" is a form's example, not a number."""
    return any(c.isdigit() and c != "0" for c in value)


_LABEL = (r"\b(?:employee|staff|personnel|payroll|badge|customer|client|member(?:ship)?|"
          r"patient|student|contract|policy(?:holder)?|claim|subscriber|loyalty|supplier|"
          r"vendor|tenant|case)")
_MARKER = (r"[ \t]*(?:id\b|identifier\b|no\b\.?|nr\b\.?|num\b\.?|number\b|#|ref\b\.?|"
           r"reference\b|code\b)")
_LINK = r"[ \t]*(?:is[ \t]+|[:#=][ \t]*)?"
_ID = r"([A-Z0-9](?:[A-Z0-9/_.-]{1,28})[A-Z0-9])(?![\w-])"
_CODE = r"((?-i:[A-Z]{1,5})[-/]?\d[\d/-]{2,20}[A-Z0-9]*)(?![\w-])"     # NW-204871, CT-2024-0193

_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
_YEAR = re.compile(r"(?:19|20)\d\d")


def _id_like(value: str) -> bool:
    """An identifier, not a date, a year or a decimal number."""
    digits = sum(c.isdigit() for c in value)
    if digits < 3 or _DATE.fullmatch(value) or _YEAR.fullmatch(value):
        return False
    return not re.fullmatch(r"\d+[.,]\d+", value)      # "policy no. 2.5" is a version


IDENTIFIER_RULES: tuple[Rule, ...] = (
    Rule("US_SSN", re.compile(r"(?<![\d-])\d{3}([- ]?)\d{2}\1\d{4}(?![\d-])"), 0.85,
         "An SSN-shaped number next to the word SSN or social security",
         validate=_not_blank_form, context=_SSN_WORDS, require_context=True,
         window=40, after=25, context_why=""),
    Rule("ID_NUMBER", re.compile(_LABEL + _MARKER + _LINK + _ID, _I), 0.8,
         "A number after an employee, customer, contract or similar ID label", group=1,
         validate=_id_like),
    Rule("ID_NUMBER", re.compile(_LABEL + r"[ \t]+" + _CODE, _I), 0.7,
         "A letter-and-digit code right after an employee, customer or contract label",
         group=1, validate=_id_like),
)


class LabeledIdentifierRecognizer(RuleRecognizer):
    """SSNs next to their word and labelled employee/customer/contract identifiers."""

    RULES = IDENTIFIER_RULES
