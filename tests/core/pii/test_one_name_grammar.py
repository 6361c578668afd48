"""One grammar of a name word (:mod:`preflight.core.pii.name_shapes`) for every name
rule: a name the title, salutation, header and partnership rules read is the name the
census rules read ("McDonald", "Jean-loup", "D'Angelo", "Zhǎng", "Müller")."""

from __future__ import annotations

import re

import pytest

from preflight.core.pii.name_shapes import CASED_NAME_WORD, NAME_WORD
from preflight.core.pii.recognizers.names import MailHeaderNameRecognizer, NameCueRecognizer
from preflight.core.pii.recognizers.orgs import OrganizationCueRecognizer

from pii_testutil import run


@pytest.mark.parametrize("word", [
    "Kowalski", "McDonald", "MacArthur", "LaMont", "DeShawn", "O'Reilly", "D'Angelo",
    "d’Estaing", "al-Saud", "Jean-loup", "Williams-Johnston", "Zhǎng", "Петров", "Łukasz",
])
def test_a_written_name_word_is_one_in_both_cases(word):
    assert re.fullmatch(CASED_NAME_WORD, word) and re.fullmatch(NAME_WORD, word)


@pytest.mark.parametrize("word", ["DUPONT", "O’NEILL"])
def test_capitals_are_a_name_word_only_where_a_cue_vouches_for_them(word):
    assert re.fullmatch(NAME_WORD, word) and not re.fullmatch(CASED_NAME_WORD, word)


@pytest.mark.parametrize("text, name", [
    ("Dear Jean-loup Gailly,\nthanks for the patch.", "Jean-loup Gailly"),
    ("The claim was reviewed by Mr D'Angelo last week.", "D'Angelo"),
    ("Hi Zhǎng Wěi,\nthe invoice is attached.", "Zhǎng Wěi"),
    ("Minutes signed by Dr Omar al-Rashid on Friday.", "Omar al-Rashid"),
])
def test_the_cue_rules_read_every_written_name(text, name):
    assert ("PERSON", name) in run(NameCueRecognizer(), text)


def test_a_mail_header_reads_a_surname_with_its_particle():
    text = "From: Sean D'Angelo <sean.dangelo@example.org>\nSubject: rota"
    assert ("PERSON", "Sean D'Angelo") in run(MailHeaderNameRecognizer(), text)


@pytest.mark.parametrize("text, firm", [
    ("The tenancy is handled by Müller, Schäfer and Weiß in Bonn.", "Müller, Schäfer and Weiß"),
    ("Our counsel, McBride, O'Hara & Lund, replied.", "McBride, O'Hara & Lund"),
])
def test_a_partnership_of_surnames_in_any_cased_script(text, firm):
    assert ("ORGANIZATION", firm) in run(OrganizationCueRecognizer(), text)
