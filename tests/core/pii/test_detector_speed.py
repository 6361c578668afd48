"""Where detection spends its time: the entity recognizer's matrix products run on numpy's
BLAS with one thread while it runs, and a batch hands back the texts it was given."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

PARAGRAPHS = [
    "Dear Mr Okafor, the hearing at the Leeds office is moved to 14 May.",
    "Signed on behalf of Harwick & Stone LLP by Priya Raman, partner.",
    "No names here, only a reminder to renew the parking permit.",
]


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_spacy_is_built_without_cython_profiling_hooks():
    """setup.sh builds spaCy with CYTHON_PROFILE=0. Its wheels for Python < 3.12 carry
    Cython's profiling hooks, and in the entity recognizer's nogil loop each hook takes and
    drops the GIL (more than half of the model's time); a compiled function with the hooks is
    seen by cProfile, one without them is not."""
    import cProfile
    import pstats

    import spacy

    doc = spacy.blank("en").make_doc("A few words to walk through.")
    profiler = cProfile.Profile()
    profiler.enable()
    words = [token.text for token in doc]
    profiler.disable()
    assert len(words) == 7                        # the walk ran through spaCy's Cython ...
    compiled = sorted({f"{path}:{name}" for path, _line, name in pstats.Stats(profiler).stats
                       if path.endswith((".pyx", ".pxd"))})
    assert compiled == []                         # ... and no compiled function was seen


def test_the_recognizer_runs_on_numpy_blas_not_blis(real_detector):
    from thinc.api import NumpyOps

    model = real_detector._engine().nlp_engine.nlp["en"].get_pipe("ner").model
    ops = {type(node.ops): getattr(node.ops, "use_blis", None) for node in model.walk()}
    assert ops == {NumpyOps: False}


def test_detection_runs_blas_on_one_thread_and_gives_the_threads_back(ner_path):
    import spacy
    from spacy.language import Language
    from threadpoolctl import threadpool_limits

    from preflight.core.pii.detector import PiiDetector, build_analyzer

    seen: list[list[int]] = []
    name = "preflight_test_blas_probe"
    if name not in Language.factories:
        @Language.component(name)
        def probe(doc):
            seen.append(_blas_threads())
            return doc

    nlp = spacy.blank("en")
    nlp.add_pipe(name)
    detector = PiiDetector(analyzer=build_analyzer(nlp))
    with threadpool_limits(limits=2, user_api="blas"):
        detector.detect("\n\n".join(PARAGRAPHS))
        after = _blas_threads()
    assert seen and all(threads and set(threads) == {1} for threads in seen)
    assert set(after) == {2}


def test_a_batch_gives_the_same_texts_and_entities_as_one_call_each(real_detector):
    engine = real_detector._engine().nlp_engine
    batch = list(engine.process_batch(PARAGRAPHS, "en", batch_size=len(PARAGRAPHS)))
    assert [text for text, _ in batch] == PARAGRAPHS
    for text, artifacts in batch:
        one = engine.process_text(text, "en")
        assert [(e.start_char, e.end_char, e.label_) for e in artifacts.entities] == [
            (e.start_char, e.end_char, e.label_) for e in one.entities]
        assert artifacts.lemmas == one.lemmas
        assert artifacts.tokens_indices == one.tokens_indices


def test_supported_entities_are_listed_once_until_the_recognizers_change(ner_path):
    import spacy
    from presidio_analyzer import Pattern, PatternRecognizer

    from preflight.core.pii.detector import build_analyzer

    analyzer = build_analyzer(spacy.blank("en"))
    asked = []
    listing = analyzer.registry.get_recognizers

    def spy(*args, **kwargs):
        asked.append(kwargs.get("all_fields"))
        return listing(*args, **kwargs)

    analyzer.registry.get_recognizers = spy
    for text in PARAGRAPHS:
        analyzer.analyze(text=text, language="en")
    # once per call to pick the recognizers, once in all for the entity list
    assert len(asked) == len(PARAGRAPHS) + 1
    before = set(analyzer.get_supported_entities("en"))
    analyzer.registry.add_recognizer(PatternRecognizer(
        supported_entity="PARKING_PERMIT", name="PermitRecognizer",
        patterns=[Pattern("permit", r"\bPP-\d{6}\b", 0.9)]))
    assert set(analyzer.get_supported_entities("en")) == before | {"PARKING_PERMIT"}
    found = analyzer.analyze(text="Permit PP-204518 expires in June.", language="en")
    assert "PARKING_PERMIT" in {r.entity_type for r in found}
