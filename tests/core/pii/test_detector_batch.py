"""The NER model reads a document's paragraphs as one batch, each distinct paragraph once
(also when the units the recognizers read join it to different neighbours), and the lean
NLP artifacts give Presidio's context enhancer what it read before: the spans are those of
one analysis per paragraph."""

from __future__ import annotations

import pytest

from preflight.core.pii.paragraphs import paragraph_units

pytestmark = pytest.mark.slow

THREAD = [
    "From: Ingrid Holm <ingrid.holm@nordvik-logistics.example>\nTo: claims team",
    "Hello,\n\nPlease find attached the claim for the damaged pallets. The driver, "
    "Marek Nowak, reported it on 3 March at the Gdansk depot.",
    "Kind regards,\nIngrid Holm\nNordvik Logistics AB\n+46 31 555 0142",
    "Reply: thanks Ingrid, we booked it. Call me on 0044 20 7946 0321 if the insurer "
    "(policy number 88213-XK) asks for photos.",
    "Kind regards,\nIngrid Holm\nNordvik Logistics AB\n+46 31 555 0142",
]


class _CountingEngine:
    """The real NLP engine, recording every text handed to the model."""

    def __init__(self, engine) -> None:
        self._engine = engine
        self.batches: list[list[str]] = []
        self.single: list[str] = []

    def process_batch(self, texts, language, **kw):
        self.batches.append(list(texts))
        return self._engine.process_batch(texts, language, **kw)

    def process_text(self, text, language):
        self.single.append(text)
        return self._engine.process_text(text, language)

    def __getattr__(self, name):
        return getattr(self._engine, name)


class _WithoutEngine:
    """The analyzer seen through its ``analyze`` alone (as a test double is)."""

    def __init__(self, analyzer) -> None:
        self._analyzer = analyzer

    def analyze(self, text, **kwargs):
        return self._analyzer.analyze(text=text, **kwargs)


@pytest.fixture
def fresh(real_detector):
    from preflight.core.pii.detector import PiiDetector

    def make(analyzer):
        return PiiDetector(real_detector.settings, analyzer=analyzer)
    return make


def test_one_batch_per_document_each_paragraph_once(real_detector, fresh):
    analyzer = real_detector._engine()
    counting = _CountingEngine(analyzer.nlp_engine)
    analyzer.nlp_engine, original = counting, analyzer.nlp_engine
    try:
        text = "\n\n".join(THREAD)
        fresh(analyzer).detect(text)
    finally:
        analyzer.nlp_engine = original
    paragraphs = [text[a:b] for a, b in paragraph_units(text)]
    assert counting.single == []
    (batch,) = counting.batches
    assert len(paragraphs) == 6 and len(set(paragraphs)) == 5
    assert sorted(batch) == sorted(set(paragraphs))   # the repeated signature once


def test_batched_spans_equal_one_analysis_per_paragraph(real_detector, fresh):
    text = "\n\n".join(THREAD)
    batched = fresh(real_detector._engine()).detect(text)
    one_by_one = fresh(_WithoutEngine(real_detector._engine())).detect(text)
    assert batched == one_by_one
    values = {text[s.start:s.end] for s in batched}
    assert {"Ingrid Holm", "Marek Nowak", "+46 31 555 0142"} <= values


def test_lean_artifacts_carry_what_presidio_built(real_detector):
    from presidio_analyzer.nlp_engine import NlpArtifacts

    engine = real_detector._engine().nlp_engine
    text = "Our account numbers: 4521-88, held by Ms. O'Brien since 2019."
    art = engine.process_text(text, "en")
    doc = art.tokens
    assert art.tokens_indices == [t.idx for t in doc]
    assert art.lemmas == [t.text.lower() for t in doc]
    assert art.keywords == NlpArtifacts.set_keywords(engine, art.lemmas, "en")


def test_an_edit_has_the_model_read_the_edited_paragraph_alone(real_detector, fresh):
    analyzer = real_detector._engine()
    counting = _CountingEngine(analyzer.nlp_engine)
    analyzer.nlp_engine, original = counting, analyzer.nlp_engine
    try:
        detector = fresh(analyzer)
        text = "\n\n".join(THREAD)
        detector.detect_incremental(text)
        counting.batches.clear()
        edited_para = THREAD[1].replace("Marek Nowak", "Zofia Wrona")
        edited = "\n\n".join([THREAD[0], edited_para, *THREAD[2:]])
        spans = detector.detect_incremental(edited)
        # the recognizers read the edited paragraph's unit again; the model its paragraph
        assert [p for batch in counting.batches for p in batch] == [
            edited_para.split("\n\n")[1]]
        counting.batches.clear()
        assert fresh(analyzer).detect(edited) == spans   # a full pass reads them all
        assert len({p for batch in counting.batches for p in batch}) == 5
    finally:
        analyzer.nlp_engine = original
    assert "Zofia Wrona" in {edited[s.start:s.end] for s in spans}
