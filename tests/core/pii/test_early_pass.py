"""The recognizers run before the entities are known (early_pass.py): on real text the
analyzer's results are exactly those of one ``analyze`` call — same spans, types, scores,
recognizers and order — and only the recognizer that reads entities waits for them."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

# text of several shapes (a judgment's opening, a mail header, config lines, a signature);
# the fixture adds the opening of a real TAB judgment
SENTENCES = [
    ("The applicant, Mr Piotr Wójcik, is a Polish national who was born in 1961 and lives "
     "in Gdańsk. He was represented by Ms M. Gąsiorowska, a lawyer practising in Warsaw."),
    ("From: Justin Mason <jm@jmason.org>\nDate: Mon, 26 Aug 2002 14:08:00 +0100\n"
     "Call me on +44 20 7946 0958 or write to 12 Baker Street, London NW1 6XE."),
    "DB_PASSWORD=Xk9#pq2LmZ\nhost: build-07.corp.example.local\nIBAN GB33BUKB20201555555555",
    "Best regards,\nAnna-Lena Schröder\nCase no. 2024/117/AB, policy number PN-448812",
]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    from preflight_eval.bench_detect import _default_tab

    line = _default_tab().read_text(encoding="utf-8").splitlines()[0]
    return SENTENCES + [json.loads(line)["text"][:3000]]


def described(results) -> list[tuple]:
    from presidio_analyzer import RecognizerResult

    key = RecognizerResult.RECOGNIZER_NAME_KEY
    return [(r.start, r.end, r.entity_type, round(r.score, 6),
             (r.recognition_metadata or {}).get(key)) for r in results]


def analyzed(analyzer, engine, text: str, early_pass: bool):
    """``analyze`` of ``text`` with the entities of this process's model, the recognizers
    that do not read them run first on the tokens alone when ``early_pass``."""
    from preflight.core.pii.early_pass import run_early

    full = next(a for _, a in engine.process_batch([text], "en"))
    if not early_pass:
        return described(analyzer.analyze(text=text, language="en", nlp_artifacts=full)), {}
    early = run_early(analyzer, text, engine.artifacts_with_entities(text, (), "en"))
    with early:
        results = analyzer.analyze(text=text, language="en", nlp_artifacts=full)
    return described(results), early.found


def test_results_are_those_of_one_analyze_call(real_detector, texts):
    analyzer = real_detector._engine()
    engine = analyzer.nlp_engine
    for text in texts:
        plain, _ = analyzed(analyzer, engine, text, early_pass=False)
        early, left = analyzed(analyzer, engine, text, early_pass=True)
        assert plain, text
        assert early == plain, text
        assert left == {}, "every result computed early was used"


def test_a_recognizer_that_reads_entities_is_not_run_early(real_detector, texts,
                                                           monkeypatch):
    # the check has teeth: run early on tokens alone, the NER recognizer finds nothing
    from preflight.core.pii import early_pass

    analyzer = real_detector._engine()
    engine = analyzer.nlp_engine
    text = texts[0]
    plain, _ = analyzed(analyzer, engine, text, early_pass=False)
    monkeypatch.setattr(early_pass, "reads_entities", lambda recognizer: False)
    wrong, _ = analyzed(analyzer, engine, text, early_pass=True)
    assert wrong != plain

    def places(found):
        return [text[s:e] for s, e, t, _, _ in found if t == "LOCATION"]
    assert "Warsaw" in places(plain)
    assert "Warsaw" not in places(wrong)


def test_results_computed_for_one_text_are_not_used_for_another(real_detector):
    from preflight.core.pii.early_pass import run_early

    analyzer = real_detector._engine()
    engine = analyzer.nlp_engine
    first = "Write to anna.berg@example.se before Friday."
    other = "Call Jonas on +46 8 123 456 78 tomorrow."
    early = run_early(analyzer, first, engine.artifacts_with_entities(first, (), "en"))
    full = next(a for _, a in engine.process_batch([other], "en"))
    with early:
        results = analyzer.analyze(text=other, language="en", nlp_artifacts=full)
    found = [other[r.start:r.end] for r in results]
    assert "anna.berg@example.se" not in found
    assert any("123 456 78" in f for f in found)
    assert early.found, "the first text's results were left unused"
