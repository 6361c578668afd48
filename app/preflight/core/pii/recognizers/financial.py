"""Card numbers and IBANs written with or without spaces/dashes (checksum-validated), and
bank account / routing numbers given in context."""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer
from stdnum import iban
from stdnum.us import rtn

from preflight.core.pii.recognizers.base import Rule, RuleRecognizer, context_regex, make_result
from preflight.core.pii.recognizers.validators import card_ok, digits, iban_length
from preflight.core.types import Evidence

# digit groups joined by at most one space or dash (also a run without separators)
_DIGIT_GROUPS = re.compile(r"(?<![\d.,])\d+(?:[ -]\d+)*(?![\d])")
_CARD_CONTEXT = context_regex(["card", "credit", "debit", "visa", "mastercard", "amex",
                               "cc", "payment", "expires", "cvv"])


class CardNumberRecognizer(EntityRecognizer):
    """Payment card numbers: 12–19 digits, any grouping, known issuer range and Luhn."""

    evidence = Evidence.RULE

    WHY = "Matches a card number (issuer range and length) and passes the Luhn checksum"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["CREDIT_CARD"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "CREDIT_CARD" not in entities:
            return []
        out = []
        for m in _DIGIT_GROUPS.finditer(text):
            run = m.group()
            if sum(c.isdigit() for c in run) < 12:
                continue
            groups = [g for g in re.finditer(r"\d+", run)]
            i = 0
            while i < len(groups):
                found = None
                # the longest Luhn-valid card starting at group i wins
                for j in range(len(groups) - 1, i - 1, -1):
                    s, e = groups[i].start(), groups[j].end()
                    n = sum(c.isdigit() for c in run[s:e])
                    if 12 <= n <= 19 and card_ok(run[s:e]):
                        found = (s, e, j)
                        break
                if found is None:
                    i += 1
                    continue
                s, e, j = found
                out.append(make_result(self, "CREDIT_CARD", m.start() + s, m.start() + e,
                                       1.0, self.WHY))
                i = j + 1
        return out


_IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})")


class IbanChecksumRecognizer(EntityRecognizer):
    """IBANs in any grouping (spaces or dashes), checked by stdnum: the country's length
    and layout in the IBAN registry, and mod-97. (The country's own bank-code checks are
    left out: a mistyped bank code still names an account.)"""

    evidence = Evidence.RULE

    WHY = "Matches an IBAN (country length) and passes the mod-97 checksum"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["IBAN_CODE"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "IBAN_CODE" not in entities:
            return []
        out = []
        for m in _IBAN_START.finditer(text):
            length = iban_length(m.group(1))
            if length is None:
                continue
            pos, count, n = m.end(), 4, len(text)
            while count < length and pos < n:
                ch = text[pos]
                if ch.isascii() and ch.isalnum():
                    count += 1
                    pos += 1
                elif ch in " -" and pos + 1 < n and text[pos + 1].isascii() \
                        and text[pos + 1].isalnum():
                    pos += 1
                else:
                    break
            if count != length or (pos < n and text[pos].isascii() and text[pos].isalnum()):
                continue
            if iban.is_valid(text[m.start():pos], check_country=False):
                out.append(make_result(self, "IBAN_CODE", m.start(), pos, 1.0, self.WHY))
        return out


_I = re.IGNORECASE


def _routing_ok(value: str) -> bool:
    """An ABA routing number (stdnum's 3-7-1 check), not a form's nine zeros."""
    return value.strip("0") != "" and rtn.is_valid(value)


class BankAccountRecognizer(RuleRecognizer):
    """Account and routing numbers introduced as such (DePrompt's payment/asset codes)."""

    evidence = Evidence.RULE

    RULES = (
        Rule("BANK_ACCOUNT", re.compile(
            r"\b(?:account|acct|a/c|checking|savings)\.?[ \t]*(?:number|no\.?|num|nr|#)?"
            r"[ \t]*[:#]?[ \t]*(\d(?:[ -]?\d){5,16})(?![\d])", _I), 0.75,
            "A number introduced as a bank account number", group=1),
        Rule("BANK_ACCOUNT", re.compile(
            r"\b(?:routing|ABA|RTN|transit)[ \t]*(?:number|no\.?|num|#)?[ \t]*[:#]?[ \t]*"
            r"(\d{9})(?!\d)", _I), 0.9,
            "A routing number that passes the ABA checksum", group=1, validate=_routing_ok),
        Rule("BANK_ACCOUNT", re.compile(r"\bsort[ \t]*code[ \t]*[:#]?[ \t]*(\d{2}-\d{2}-\d{2})\b",
                                        _I), 0.85,
             "A UK bank sort code", group=1),
    )


__all__ = ["CardNumberRecognizer", "IbanChecksumRecognizer", "BankAccountRecognizer", "digits"]
