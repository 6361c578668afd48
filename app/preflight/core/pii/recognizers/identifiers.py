"""Identifiers a label names: an SSN-shaped number next to "SSN" / "social security",
employee, customer, contract (…) numbers after their label ("employee ID NW-204871",
"Customer No. 4471-220", "contract ref CT-2024-0193"), and user handles, which their "@"
marks ("thanks @jdoe" in a chat export or an issue thread).

Presidio's SSN recognizer drops numbers its validator calls invalid (the famous sample
078-05-1120, the sequence 123-45-6789); next to an SSN word the number is protected
whatever its digits, since a real SSN written there is what matters. Without a label
nothing matches: "version 2.0.1", "room 204", years and prices stay prose.
"""

from __future__ import annotations

import re

from presidio_analyzer.predefined_recognizers import NhsRecognizer

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


# A handle: not an address's "@" (a word character before it), not a domain after it.
_HANDLE = re.compile(
    r"(?<![\w.@/+=:-])@[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,37}[A-Za-z0-9_])?"
    r"(?![\w@(-]|\.\w)"
    # a decorator or annotation line above a definition is code
    r"(?![^\S\n]*\r?\n[ \t]*(?:@|def\b|class\b|async\b|public\b|private\b|"
    r"protected\b|static\b|function\b|export\b|fun\b|override\b))")
#: "@" words of code and chat that are no person's handle: doc-comment tags, decorators,
#: annotations, CSS and Sass at-rules, Objective-C keywords, chat broadcasts.
CODE_AT_WORDS = frozenset({
    "param", "return", "returns", "throws", "throw", "exception", "raises", "type",
    "rtype", "see", "since", "deprecated", "override", "author", "version", "link",
    "inheritdoc", "property", "staticmethod", "classmethod", "abstractmethod",
    "dataclass", "media", "import", "font-face", "keyframes", "charset", "supports",
    "page", "namespace", "include", "mixin", "extend", "if", "else", "each", "function",
    "use", "forward", "apply", "tailwind", "layer", "container", "interface",
    "implementation", "end", "synthesize", "protocol", "optional", "required",
    "selector", "autoreleasepool", "test", "before", "after", "beforeeach", "aftereach",
    "component", "injectable", "input", "output", "nonnull", "nullable",
    "suppresswarnings", "functionalinterface", "safevarargs", "retention", "target",
    "documented", "inherited", "todo", "fixme", "note", "here", "channel", "everyone",
    "all", "example", "code", "brief", "details", "file", "class", "var", "const"})


def _handle(value: str) -> bool:
    name = value[1:]
    return any(c.isalpha() for c in name) and name.casefold() not in CODE_AT_WORDS


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
    Rule("USERNAME", _HANDLE, 0.7,
         "A user handle (@name), as written in a chat export or an issue thread",
         validate=_handle),
)


class LabeledIdentifierRecognizer(RuleRecognizer):
    """SSNs next to their word, labelled employee/customer/contract identifiers and
    user handles."""

    RULES = IDENTIFIER_RULES


class ContextualNhsRecognizer(NhsRecognizer):
    """Presidio's UK NHS number with its checksum as a filter, not as proof: one 10-digit
    number in eleven passes it, so "+1 415 555 0199" was an NHS number at full
    confidence and beat the phone number around it. A passing number keeps the
    pattern's 0.5, raised by an NHS word nearby (Presidio's context words); a failing
    one is dropped. Registered under Presidio's name, so its "why" stays."""

    def __init__(self) -> None:
        super().__init__(name="NhsRecognizer")

    def validate_result(self, pattern_text: str) -> bool | None:  # noqa: D102 (Presidio API)
        return None if super().validate_result(pattern_text) else False
