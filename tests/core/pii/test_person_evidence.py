"""Second look at PERSON spans: tickers and companies retyped, non-names dropped, names
kept (unit tests on hand-made spans, then the real model on news-style text)."""

from __future__ import annotations

import pytest

from preflight.core.pii.cleaning import DocTerms
from preflight.core.pii.person_evidence import (
    known_names, recheck_organizations, recheck_persons,
)
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Category, Evidence, Span


def _person(text: str, value: str, recognizer: str = "SpacyRecognizer",
            evidence: Evidence = NER_EVIDENCE) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                recognizer, "", evidence)


def _check(text: str, value: str, recognizer: str = "SpacyRecognizer", others=(),
           evidence: Evidence = NER_EVIDENCE):
    spans = [_person(text, value, recognizer, evidence), *others]
    out = recheck_persons(text, spans, DocTerms(text))
    mine = [s for s in out if text[s.start:s.end] == value]
    return mine[0].type if mine else None


@pytest.mark.parametrize("text,value", [
    ("AB Volvo <VOLV ST> said profits rose.", "VOLV ST"),
    ("Shares in ASTS ST fell 3 pct.", "ASTS ST"),
    ("Shares in ASTS ST fell 3 pct.", "ASTS"),
    ("IBM.N gained 2 pct in New York.", "IBM.N"),
])
def test_tickers_become_organizations(text, value):
    assert _check(text, value) == "ORGANIZATION"


@pytest.mark.parametrize("text,value", [
    ("Esselte AB said sales rose.", "Esselte"),
    ("He bought shares of Esselte last year.", "Esselte"),
    ("Esselte said in a statement that sales rose.", "Esselte"),
    ("Nippon Kokan KK said output fell.", "Nippon Kokan"),
])
def test_company_cues_retype_to_organization(text, value):
    assert _check(text, value) == "ORGANIZATION"


def test_same_text_tagged_organization_elsewhere_wins():
    text = "Esselte rose. Analysts like Esselte."
    org = Span(text.rindex("Esselte"), len(text) - 1, "ORGANIZATION",
               Category.QUASI_IDENTIFIER, 0.85, "SpacyRecognizer", "", NER_EVIDENCE)
    assert _check(text, "Esselte", others=[org]) == "ORGANIZATION"


def test_a_name_the_header_vouches_for_is_a_person_where_the_model_says_company():
    # "Thorkild" is on no name list; the header's display name makes it one, so neither the
    # model's ORGANIZATION copy nor "tagged ORGANIZATION elsewhere" keeps it a company
    # (a policy that keeps organizations would have sent the sender's first name).
    text = "From: Thorkild Thomsen <jt@x.net>\n\nThorkild here again.\n\nCheers,\nThorkild\n"
    header = _person(text, "Thorkild Thomsen", "MailHeaderNameRecognizer",
                     Evidence.PERSON_PROOF)
    body = text.index("Thorkild here")
    org = Span(body, body + 8, "ORGANIZATION", Category.QUASI_IDENTIFIER, 0.85,
               "SpacyRecognizer", "", NER_EVIDENCE)
    sign = text.rindex("Thorkild")
    model_person = Span(sign, sign + 8, "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                        "SpacyRecognizer", "", NER_EVIDENCE)
    out = recheck_organizations(text, recheck_persons(text, [header, org, model_person],
                                                      DocTerms(text)))
    assert [(s.start, s.type) for s in out] == [
        (header.start, "PERSON"), (body, "PERSON"), (sign, "PERSON")]
    # without the header the same text stays a company (the evidence is what decides)
    out = recheck_organizations(text, recheck_persons(text, [org, model_person],
                                                      DocTerms(text)))
    assert [s.type for s in out] == ["ORGANIZATION", "ORGANIZATION"]


@pytest.mark.parametrize("text,value", [
    ("-----BEGIN PGP SIGNATURE-----", "BEGIN PGP"),
    ("Encoded with XviD at 900 kbps.", "XviD"),
    # commands the model calls people (bash's README.Debian)
    ("the binding in the keymap vi for ESC", "keymap vi"),
    ("run chmod g-w ~/ first", "chmod g-w"),
])
def test_non_names_are_dropped(text, value):
    assert _check(text, value) is None


@pytest.mark.parametrize("text,value", [
    # no evidence either way: a word on no list is not proof of a non-name, so the
    # model's person stays a person (protected) rather than being dropped on a guess
    ("Java is for kiddies, he wrote.", "Java"),
    ("He joined Red Hat in May.", "Red Hat"),
    ("Sigma Designs makes the chip.", "Sigma Designs"),
    ("Kowalczyk signed the lease.", "Kowalczyk"),
    ("John Smith said in a statement that he would stay.", "John Smith"),
    ("JOHN SMITH signed the form.", "JOHN SMITH"),
    ("Nick Skorich coached. Later Skorich left.", "Skorich"),
    ("Mr Pes mounted the horse.", "Pes"),
    ("Tran Quoc Bao will attend.", "Tran Quoc Bao"),
    ("signed by tony mancill today", "tony mancill"),     # lower case, listed names
])
def test_names_are_kept(text, value):
    others = [_person(text, "Nick Skorich")] if "Nick" in text else []
    assert _check(text, value, others=others) == "PERSON"


def test_rule_found_names_are_not_rechecked():
    # a name a rule found with its own cue (here a title) is left as it is
    assert _check("Dear Java,", "Java", recognizer="NameCueRecognizer",
                  evidence=Evidence.RULE) == "PERSON"


def test_name_list_is_broad():
    names = known_names()
    assert len(names) > 30_000
    assert {"john", "smith", "maria", "nguyen", "kowalski", "novak", "garcia"} <= names
    # a word matches with or without its accents ("Müller", "José")
    assert all(w in names for w in ("müller", "josé", "muller", "jose"))
    # English words that are rare surnames are words first
    assert not {"red", "begin", "payment", "general"} & names


@pytest.mark.slow
def test_real_model_news_text(real_detector):
    text = ("STOCKHOLM, March 3 - AB Volvo <VOLV ST> said on Friday that profits rose. "
            "Esselte AB said in a statement that shares of Esselte rose, while ASTS ST "
            "fell. Anna Lindqvist, a spokeswoman, confirmed the figures.")
    spans = real_detector.detect(text)
    persons = [text[s.start:s.end] for s in spans if s.type == "PERSON"]
    assert persons == ["Anna Lindqvist"]


def test_a_date_cut_at_a_line_break_takes_its_day_back():
    from preflight.core.pii.date_spans import complete_dates
    from preflight.core.types import Category, Span

    text = "We met on\n3 March 2024 and on 12 4 May."
    cut = Span(text.index("March"), text.index("March") + 10, "DATE_TIME",
               Category.QUASI_IDENTIFIER, 0.85, "SpacyRecognizer", "", NER_EVIDENCE)
    may = Span(text.index("May"), text.index("May") + 3, "DATE_TIME",
               Category.QUASI_IDENTIFIER, 0.85, "SpacyRecognizer", "", NER_EVIDENCE)
    fixed = complete_dates(text, [cut, may])
    assert text[fixed[0].start:fixed[0].end] == "3 March 2024"
    assert text[fixed[1].start:fixed[1].end] == "4 May"
    other = Span(0, 2, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "x", "")
    assert complete_dates(text, [other]) == [other]
