"""Identifiers a word or a sign marks: an SSN-shaped number next to "SSN" / "social
security", and user handles, which their "@" marks ("thanks @jdoe" in a chat export or
an issue thread). Codes after an invoice, ticket, case (…) label are
:mod:`.reference_numbers`; national identifiers with check digits :mod:`.national_ids`.

Presidio's SSN recognizer drops numbers its validator calls invalid (the famous sample
078-05-1120, the sequence 123-45-6789); next to an SSN word the number is protected
whatever its digits, since a real SSN written there is what matters. Without a label
nothing matches: "version 2.0.1", "room 204", years and prices stay prose.
"""

from __future__ import annotations

import re

from presidio_analyzer.predefined_recognizers import NhsRecognizer

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex
from preflight.core.types import Evidence

_I = re.IGNORECASE

_SSN_WORDS = context_regex([
    "ssn", "ssns", "ss#", "ss no", "ssn#", "social security", "social security number",
    "social security no", "social sec", "soc sec", "soc. sec.", "social insurance number",
])


def _not_blank_form(value: str) -> bool:
    """"SSN: 000-00-0000" is a form's example, not a number."""
    return any(c.isdigit() and c != "0" for c in value)


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
    Rule("USERNAME", _HANDLE, 0.7,
         "A user handle (@name), as written in a chat export or an issue thread",
         validate=_handle),
)


class LabeledIdentifierRecognizer(RuleRecognizer):
    """SSNs next to their word and user handles."""

    evidence = Evidence.RULE

    RULES = IDENTIFIER_RULES


class ContextualNhsRecognizer(NhsRecognizer):
    """Presidio's UK NHS number with its checksum as a filter, not as proof: one 10-digit
    number in eleven passes it, so "+1 415 555 0199" was an NHS number at full
    confidence and beat the phone number around it. A passing number keeps the
    pattern's 0.5, raised by an NHS word nearby (Presidio's context words); a failing
    one is dropped. Registered under Presidio's name, so its "why" stays."""

    evidence = Evidence.RULE

    def __init__(self) -> None:
        super().__init__(name="NhsRecognizer")

    def validate_result(self, pattern_text: str) -> bool | None:  # noqa: D102 (Presidio API)
        return None if super().validate_result(pattern_text) else False
