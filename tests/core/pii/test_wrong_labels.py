"""Labels that damage the text (issue 15, item 10): a given name the NER model calls an
organization or a group is a person, a generic office word is no organization, and a
real nationality or religion stays what it is. Unit tests on hand-made NER spans, then
the real model on e-mail style sentences."""

from __future__ import annotations

import pytest

from preflight.core.pii.cleaning import DocTerms, plausible_ner
from preflight.core.pii.person_evidence import given_name_gender, recheck_organizations
from preflight.core.types import Category, Span


def _ner(text: str, value: str, type_: str) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), type_, Category.QUASI_IDENTIFIER, 0.85,
                "SpacyRecognizer", "")


@pytest.mark.parametrize("text,value,type_", [
    ("Priya and Rahul reviewed the contract with Anjali.", "Anjali", "ORGANIZATION"),
    ("Thanks to Priya for the numbers.", "Priya", "NRP"),
    ("Ask Heidi before Friday.", "Heidi", "ORGANIZATION"),
])
def test_a_lone_given_name_is_a_person(text, value, type_):
    (span,) = recheck_organizations(text, [_ner(text, value, type_)])
    assert (span.type, span.category) == ("PERSON", Category.DIRECT_IDENTIFIER)
    assert value not in span.why


@pytest.mark.parametrize("text,value,type_", [
    ("The Christian community met on Sunday.", "Christian", "NRP"),   # a group, also a name
    ("Chinese customers like it.", "Chinese", "NRP"),
    ("Mercedes AG said sales rose.", "Mercedes", "ORGANIZATION"),      # company cue
    ("He bought shares of Sofia last year.", "Sofia", "ORGANIZATION"),
])
def test_groups_and_companies_stay(text, value, type_):
    (span,) = recheck_organizations(text, [_ner(text, value, type_)])
    assert span.type == type_


@pytest.mark.parametrize("value,text", [
    ("Customer", "Customer asked to change the plan."),
    ("Update", "Update: the vendor signed."),
    ("Password", "Password reset is handled by IT."),
    ("ref", "See contract ref CT-2024-0193."),
    ("Renewal", "Renewal of the renewal clause is due."),       # written in lower case too
])
def test_a_generic_word_is_no_organization(value, text):
    assert not plausible_ner("ORGANIZATION", value, DocTerms(text))


@pytest.mark.parametrize("value", ["IBM", "Volvo", "eBay", "Acme Corp", "VPN Partners"])
def test_real_organizations_are_plausible(value):
    assert plausible_ner("ORGANIZATION", value, DocTerms(f"{value} said sales rose."))


@pytest.mark.parametrize("name,gender", [
    ("Priya", "female"), ("Maria", "female"), ("John", "male"), ("Arjun", "male"), ("Pierre", "male"),
    ("Alex", None), ("Smith", None),
])
def test_given_name_gender(name, gender):
    assert given_name_gender(name) == gender


@pytest.mark.slow
def test_real_model_labels(real_detector):
    text = ("Priya and Rahul reviewed the contract with Anjali. Update: the Customer "
            "wants a discount. Password reset is handled by IT. The Dutch team met.")
    found = {(text[s.start:s.end], s.type) for s in real_detector.detect(text)}
    assert ("Anjali", "PERSON") in found
    assert not {v for v, t in found if t == "ORGANIZATION"} & {"Update", "Customer",
                                                               "Password"}
    assert ("Dutch", "NRP") in found
