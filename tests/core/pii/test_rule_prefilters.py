"""A rule's ``needs`` (recognizers/base.py) only skips texts the rule finds nothing in:
with and without it, every rule gives the same results, on a text written to set each
rule off and on real judgments; and the trie-built word lists match what the sorted
alternations they replace matched."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

# one text per rule that has a ``needs`` (the values are made up, in real shapes)
EXAMPLES = [
    "OPENAI_API_KEY=sk-proj-Qw8rT2yZ9xLm4NvB7kJ3hF6dS1aP0oIu",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "git remote set-url origin https://ghp_R2d2C3poX9y8W7v6U5t4S3r2Q1p0O9n8M7l6@github.com/x",
    "GH_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopQRSTU",
    "CI_JOB_TOKEN: glpat-xY9zAbCdEfGh12345678",
    "SLACK_BOT_TOKEN=xoxb-1234567890-abcdefghij",
    "key=AIzaSyD3v7Qx9Lm2Nb8Vc4Xz1As5Df6Gh7Jk8Lp",
    "stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'",
    "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz123456",
    "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Zx\n-----END RSA PRIVATE KEY-----",
    ("token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "Authorization: Bearer abcdEFGH1234ijklMNOP5678",
    "password: Tr0ub4dor&3x",
    "api_key = 'f3b9c2d8e7a1b4c6'",
    "DATABASE_URL=postgres://admin:s3cretPass@db.example.com/app",
    "Dear Robert Harley,\nthank you for your letter.",
    "Name: Robert Harley\nDepartment: Finance",
    "Robert Harley\nTel: +1 415 555 0134",
    "Best regards,\nRobert Harley\n",
    "Robert Harley wrote:\n> the meeting is at noon",
    "From: Robert Harley <rh@example.com>",
    "Signed-off-by: Dmitry Shachnev <ds@example.org>",
    "Andrew Burgess                      aab@example.com",
    "Robert Harley - https://example.org/~rharley",
    "From: rah@example.com (Robert Harley)",
    "She is allergic to penicillin and latex.",
    "He was diagnosed with diabetes in 2019.",
    "Her blood pressure was 140/90 at the visit.",
    "He was prescribed Lisinopril 10 mg daily.",
    "She holds 1,200 shares of Acme Corp.",
    "Reach me on +44 20 7946 0958 (mobile).",
    "Telefon: (030) 1234 5678, phone",
]


@pytest.fixture(scope="module")
def rules():
    """(recognizer, rule) for every rule with a ``needs`` in the detector's analyzer."""
    from preflight.core.pii.detector import PiiDetector
    from preflight.core.pii.recognizers.base import RuleRecognizer

    analyzer = PiiDetector(nlp_model_path=None)._engine()
    found = [(r, rule) for r in analyzer.registry.recognizers if isinstance(r, RuleRecognizer)
             for rule in r.rules if rule.needs is not None]
    assert len(found) >= 25, "the rules with a prefilter are not registered"
    return found


@pytest.fixture(scope="module")
def judgments() -> list[str]:
    from preflight_eval.bench_detect import _default_tab

    lines = _default_tab().read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:10] if line.strip()]


def spans(results) -> list[tuple]:
    return [(r.start, r.end, r.entity_type, r.score) for r in results]


def test_each_prefiltered_rule_finds_the_same_with_and_without_its_prefilter(rules):
    silent = []
    for recognizer, rule in rules:
        bare = dataclasses.replace(rule, needs=None)
        hits = 0
        for text in EXAMPLES:
            with_needs = spans(recognizer.apply_rule(rule, text))
            assert with_needs == spans(recognizer.apply_rule(bare, text)), (
                f"{type(recognizer).__name__}: needs={rule.needs.pattern!r} hides a match "
                f"in {text!r}")
            hits += len(with_needs)
        if not hits:
            silent.append((type(recognizer).__name__, rule.why))
    # a rule no example sets off would make the comparison above say nothing about it
    assert not silent, f"no example sets these rules off: {silent}"


def test_prefilters_change_nothing_on_real_judgments(rules, judgments):
    for recognizer, rule in rules:
        bare = dataclasses.replace(rule, needs=None)
        for text in judgments:
            assert spans(recognizer.apply_rule(rule, text)) == spans(
                recognizer.apply_rule(bare, text)), type(recognizer).__name__


def _sorted_alternation(words, flags=0) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(sorted(map(re.escape, words), key=len,
                                              reverse=True)) + ")", flags)


@pytest.mark.parametrize("words", [
    ["dollar", "dollars", "euro", "euros", "eur", "d"],
    ["USD", "EUR", "GBP", "SEK", "SE"],
    ["heart attack", "heart", "hear", "attack"],
])
def test_a_trie_matches_what_the_longest_first_alternation_matches(words):
    from preflight.core.pii.propagate import trie_regex

    text = ("She paid 200 dollars, then 15 euros (EUR), then SEK 1,800 and SE 12; the "
            "heart attack was heard by the heart surgeon, a hearty hearing attacker. d")
    trie = re.compile("(?:" + trie_regex(words, fold=False, literal=True) + ")")
    expected = [m.span() for m in _sorted_alternation(words).finditer(text)]
    assert expected, "the text holds none of the words"
    assert [m.span() for m in trie.finditer(text)] == expected
    # and with a boundary after the word, which makes the engine back up to a shorter one
    bounded = re.compile(trie.pattern + r"(?![a-z])")
    expected = [m.span() for m in re.compile(_sorted_alternation(words).pattern + r"(?![a-z])")
                .finditer(text)]
    assert [m.span() for m in bounded.finditer(text)] == expected


def test_amounts_and_health_terms_found_as_before():
    """The money pattern (a trie of ISO codes behind a first-character test) and the
    health and medication term lists (tries) on sentences of each form."""
    from preflight.core.pii.recognizers.amounts import amount_pattern
    from preflight.core.pii.recognizers.confidential import HEALTH_RULES, MEDICAL_RULES

    text = ("He was awarded EUR 12,500 and $120,000, SEK 1,800 and 1,250.00 EUR; the "
            "fine of 50,000,000 Turkish liras (TRL) and TRL 1,500,000,000 too. 425,000 "
            "pounds sterling. She has asthma and type 2 diabetes, takes metformin and "
            "had a kidney transplant after a heart attack.")
    amounts = [text[a:b] for a, b in (m.span() for m in amount_pattern().finditer(text))]
    assert amounts == ["EUR 12,500", "$120,000", "SEK 1,800", "1,250.00 EUR",
                       "50,000,000 Turkish liras (TRL)", "TRL 1,500,000,000",
                       "425,000 pounds sterling"]
    health = [text[a:b] for a, b in (m.span() for m in HEALTH_RULES[0].pattern.finditer(text))]
    assert "asthma" in health and any("diabetes" in h for h in health)
    assert "heart attack" in health
    drugs = [m.group() for m in MEDICAL_RULES[0].pattern.finditer(text)]
    assert "metformin" in drugs


# shapes without a digit that other recognizers do take (hex ids, MAC and IPv6 addresses,
# codes in capitals, month abbreviations)
DIGIT_FREE = [
    "deadbeef-dead-beef-dead-beefdeadbeef", "ab:cd:ef:ab:cd:ef", "fe80::abcd", "ABCDEFGHIJKLMNOP",
    "GB AB CD EF GH", "bcqxyzabcdefghjkmnpqrstuvwxyzabcd", "ABCDEFGHJ", "JAN-MAR DEC-NOV",
    "Ref. AB-CD/EF", "XX-XXX-XXXX", "card ****-****-****-****", "call FLOWERS-NOW",
    "phone: +(ab) cde-fghi",
]


def test_recognizers_skipped_without_a_digit_find_nothing_there(judgments):
    """Presidio's recognizers that skip a text without a digit find nothing in real
    judgments whose digits are taken out, nor in digit-free codes, when run in full."""
    from preflight.core.pii.detector import PiiDetector
    from preflight.core.pii.recognizers.base import DIGIT_PATTERN_RECOGNIZERS

    analyzer = PiiDetector(nlp_model_path=None)._engine()
    guarded = [r for r in analyzer.registry.recognizers
               if type(r).__name__ in DIGIT_PATTERN_RECOGNIZERS]
    assert {type(r).__name__ for r in guarded} == DIGIT_PATTERN_RECOGNIZERS
    texts = [re.sub(r"\d", "", t) for t in judgments] + DIGIT_FREE
    for recognizer in guarded:
        assert "analyze" in vars(recognizer), f"{type(recognizer).__name__} is not guarded"
        for text in texts:
            full = type(recognizer).analyze(recognizer, text=text,
                                            entities=recognizer.supported_entities)
            assert full == [], (type(recognizer).__name__, [text[r.start:r.end] for r in full])
        # and with digits, the guard lets the text through
        sample = ("SSN 078-05-1120, card 4111 1111 1111 1111, IBAN GB33BUKB20201555555555, "
                  "licence A1234567, on 12/05/2021, call (415) 555-0134")
        assert spans(recognizer.analyze(text=sample, entities=recognizer.supported_entities)) \
            == spans(type(recognizer).analyze(recognizer, text=sample,
                                              entities=recognizer.supported_entities))
