"""Names written with an honorific before them or a qualification / generation after them
("Dr. Jane Roe", "Desiree Jacobson MD", "John Roe Jr."): generated from Faker's en_US
name formats that carry a prefix or a suffix, in greeting and signature contexts; and
roles addressed like persons ("Dear Customer") that must stay undetected."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.names import NameCueRecognizer

from pii_testutil import run

CONTEXTS = (
    "Dear {name},\n\nthank you for your letter of last week.",
    "Hi {name},\nthe files are attached.",
    "Hello {name}!\nWelcome aboard.",
    "The results are attached.\n\nBest regards,\n{name}\nAcme Widgets",
    "Please call me back.\n\nSincerely,\n{name}\n",
)
GENERIC = ("Dear Customer,\nyour order has shipped.", "Dear Sir or Madam,\nI am writing.",
           "Hi Team,\nquick update below.", "Dear Hiring Manager,\nplease find my CV.",
           "Dear Sir,\nthank you.", "Hello everyone,\nwelcome.",
           "Dear Valued Customer,\nwe have news.", "Hi All,\nsee below.")


def _affixed_names(count: int = 200, seed: int = 7) -> list[tuple[str, list[str]]]:
    """(full name, the words of its given and family name), from the en_US formats that
    carry a prefix or a suffix."""
    from faker import Faker
    from faker.providers.person.en_US import Provider

    formats = [f for f in Provider.formats if "prefix" in f or "suffix" in f]
    fake = Faker("en_US")
    fake.seed_instance(seed)
    out = []
    for i in range(count):
        fmt = formats[i % len(formats)]
        core = " ".join(p for p in fmt.split() if "first_name" in p or "last_name" in p)
        words = fake.parse(core).split()
        prefix = fake.parse(fmt.split()[0]) + " " if "prefix" in fmt else ""
        suffix = " " + fake.parse(fmt.split()[-1]) if "suffix" in fmt else ""
        out.append((prefix + " ".join(words) + suffix, words))
    return out


NAMES = _affixed_names()


def _uncovered(text: str, words: list[str], spans: list[tuple[int, int]]) -> list[str]:
    start = text.index(words[0])
    missing = []
    for word in words:
        at = text.index(word, start)
        if not any(s <= at and at + len(word) <= e for s, e in spans):
            missing.append(word)
        start = at + len(word)
    return missing


def test_the_generated_names_carry_affixes():
    assert sum(n.startswith(("Mr", "Ms", "Miss", "Dr")) for n, _ in NAMES) > 50
    assert sum(n.endswith(("MD", "PhD", "DDS", "DVM", "Jr.", "II", "IV", " V")) for n, _ in NAMES) > 50


@pytest.mark.parametrize("context", CONTEXTS)
def test_cue_rules_cover_affixed_names(context):
    recognizer = NameCueRecognizer()
    misses = []
    for name, words in NAMES:
        text = context.format(name=name)
        spans = [(r.start, r.end) for r in recognizer.analyze(text, None, None)
                 if r.entity_type == "PERSON"]
        if _uncovered(text, words, spans):
            misses.append(name)
    assert misses == []


@pytest.mark.parametrize("text,value", [
    ("Dear Desiree Jacobson MD,\nthanks", "Desiree Jacobson MD"),
    ("Hi Dr. Anna Lee,\nsee below", "Anna Lee"),
    ("Best regards,\nJohn Smith, Jr.\n", "John Smith, Jr."),
    ("Sincerely,\nMrs. Kelly Brown DDS\n", "Kelly Brown DDS"),
    ("Dear Robert Wilson V,\nhello", "Robert Wilson V"),
])
def test_affix_examples(text, value):
    assert ("PERSON", value) in run(NameCueRecognizer(), text)


def test_a_single_letter_numeral_only_where_the_name_ends():
    assert run(NameCueRecognizer(), "Meeting Dr. Jane Roe I think") == [("PERSON", "Jane Roe")]


@pytest.mark.parametrize("text", GENERIC)
def test_cue_rules_skip_roles_addressed_like_persons(text):
    assert run(NameCueRecognizer(), text) == []


@pytest.mark.slow
def test_detector_covers_affixed_names(real_detector):
    misses = []
    for i, (name, words) in enumerate(NAMES):
        text = CONTEXTS[i % len(CONTEXTS)].format(name=name)
        spans = [(s.start, s.end) for s in real_detector.detect(text) if s.type == "PERSON"]
        if _uncovered(text, words, spans):
            misses.append(text)
    assert misses == []


@pytest.mark.slow
@pytest.mark.parametrize("text", GENERIC)
def test_detector_finds_no_person_in_a_generic_greeting(real_detector, text):
    assert [s for s in real_detector.detect(text) if s.type == "PERSON"] == []


@pytest.mark.slow
def test_affixes_are_not_propagated_as_name_parts(real_detector):
    text = "Dear Kelly Brown DDS,\nthe DDS office and the PhD program reopen.\n\nRegards,\nDr. Paul Fox PhD\n"
    persons = [text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"]
    assert "DDS" not in persons and "PhD" not in persons
