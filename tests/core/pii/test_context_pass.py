"""The faster context pass (no deep copy, results grouped by recognizer) gives Presidio's
results, and Presidio's own enhancer still copies when used elsewhere."""

from __future__ import annotations

import pytest

TEXT = ("Call me on 212-555-0147 or my mobile 07700 900123. SSN 078-05-1120, "
        "card 4111 1111 1111 1111. Jane Roe of Acme Corp lives at 12 Elm Street, Boston. "
        "Her date of birth: 03/04/1981.")


def test_presidio_enhancer_still_deep_copies_outside_ours():
    import preflight.core.pii.context  # noqa: F401 - installs the copy stand-in
    from presidio_analyzer.context_aware_enhancers import lemma_context_aware_enhancer as m

    items = [{"score": 0.5}]
    copied = m.copy.deepcopy(items)
    assert copied == items and copied[0] is not items[0]


@pytest.mark.slow
def test_fast_context_pass_matches_presidio(real_detector):
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    from preflight.core.pii.context import grouped_context_pass

    product = real_detector._engine()
    # the product's engine without its one deliberate difference (rule_evidence_wins)
    ours = grouped_context_pass(AnalyzerEngine, rule_ties=False)(
        registry=product.registry, nlp_engine=product.nlp_engine, supported_languages=["en"],
        context_aware_enhancer=product.context_aware_enhancer)
    plain = AnalyzerEngine(registry=ours.registry, nlp_engine=ours.nlp_engine,
                           supported_languages=["en"],
                           context_aware_enhancer=LemmaContextAwareEnhancer())
    assert type(ours) is not AnalyzerEngine

    def key(results):
        return sorted((r.start, r.end, r.entity_type, round(r.score, 6)) for r in results)

    got = key(ours.analyze(TEXT, language="en"))
    assert got == key(plain.analyze(TEXT, language="en"))
    assert any(t == "PHONE_NUMBER" for _, _, t, _ in got)


@pytest.mark.slow
def test_a_rule_keeps_its_finding_where_the_model_found_the_same_span(real_detector):
    # "R. A. Hettinga" in a From: header: the header rule and the NER model find the same
    # span; Presidio's de-duplication keeps one. The product keeps the rule's (its score
    # just above the model's), whose evidence the later checks of model guesses respect.
    # A title before an office is no name: "Mr. Speaker" is not a person.
    from presidio_analyzer import RecognizerResult

    text = 'From: "R. A. Hettinga" <rah@shipwright.com>\n\nSee the article below.'
    name = RecognizerResult.RECOGNIZER_NAME_KEY
    persons = [r for r in real_detector._engine().analyze(text, language="en")
               if r.entity_type == "PERSON"]
    assert [(text[r.start:r.end], r.recognition_metadata[name]) for r in persons] == [
        ("R. A. Hettinga", "MailHeaderNameRecognizer")]
    text = "So, I say, Mr. Speaker, God bless you.\n\nThe speaker pro tempore."
    assert "Speaker" not in [text[r.start:r.end] for r in real_detector.detect(text)
                             if r.type == "PERSON"]

