"""Two-stage assessment with fake models: caching, correction, cancellation."""

from __future__ import annotations

import threading

import pytest

from _utility_fakes import DOC, FakeSLM, LinearPredictor, dx_like
from preflight.core.errors import Cancelled
from preflight.core.types import SanitizedText
from preflight.core.utility.assess import UtilityAssessor, correction_task
from preflight.core.utility.features import ALL_FEATURES, FAST_FEATURES


def make(fake_slm, fake_embedder, offset=0.0):
    return UtilityAssessor(fake_slm, fake_embedder, LinearPredictor(offset))


def test_fast_stage_runs_no_model(fake_slm, fake_embedder):
    a = make(fake_slm, fake_embedder).fast(DOC, dx_like(DOC, 70.0))
    assert fake_slm.calls == []
    assert set(a.features.as_dict()) == set(FAST_FEATURES)
    assert a.predicted is None and a.best == a.predicted_fast
    assert a.predicted_fast == pytest.approx(0.7, abs=0.05)


def test_refine_computes_abcd_and_caches_the_original_answer(fake_slm, fake_embedder):
    assessor = make(fake_slm, fake_embedder, offset=0.01)
    first = assessor.refine(DOC, dx_like(DOC, 60.0))
    assert set(first.features.as_dict()) == set(ALL_FEATURES)
    assert [k for k, _ in fake_slm.calls] == ["summarize", "summarize"]   # original + sanitized
    assert first.predicted == pytest.approx(first.predicted_fast + 0.01)
    # C compares the original with the SLM answer on the original (first 12 words)
    assert first.features.C == pytest.approx(
        fake_embedder.similarity(DOC, " ".join(DOC.split()[:12])), abs=1e-5)
    # more noise → lower similarity of the sanitized text (B) and of the SLM answer (D)
    noisy = assessor.refine(DOC, dx_like(DOC, 10.0))
    assert noisy.features.B < first.features.B
    assert noisy.features.ppl_sanitized > first.features.ppl_sanitized
    # the original's answer was computed once for both ε
    assert [k for k, _ in fake_slm.calls].count("summarize") == 3
    assert assessor.slm_calls == 3


def test_a_text_already_measured_is_predicted_again_without_the_slm(fake_slm, fake_embedder):
    # "Find best ε" refines its candidate; the window then refines the same text at that ε
    assessor = make(fake_slm, fake_embedder, offset=0.01)
    first = assessor.refine(DOC, dx_like(DOC, 60.0))
    calls = len(fake_slm.calls)
    assessor.predictor.refined_offset = 0.05         # the regressor learned meanwhile
    again = assessor.refine(DOC, dx_like(DOC, 60.0))
    assert len(fake_slm.calls) == calls and assessor.slm_calls == calls
    assert again.features == first.features and again.slm_answer == first.slm_answer
    assert again.predicted == pytest.approx(first.predicted + 0.04)   # predicted anew
    # another ε, the repair option or other spans are other measurements
    assessor.refine(DOC, dx_like(DOC, 61.0))
    assessor.refine(DOC, dx_like(DOC, 60.0), correct=True)
    assert [k for k, _ in fake_slm.calls[calls:]] == ["summarize", "correct", "summarize"]


def test_a_cancelled_refinement_is_not_remembered(fake_slm, fake_embedder):
    assessor = make(fake_slm, fake_embedder)
    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        assessor.refine(DOC, dx_like(DOC, 60.0), cancel=stop)
    assessor.refine(DOC, dx_like(DOC, 60.0))
    assert [k for k, _ in fake_slm.calls].count("summarize") == 2   # measured for real


def test_correction_repairs_dx_text_before_the_slm_reads_it(fake_slm, fake_embedder):
    assessor = make(fake_slm, fake_embedder)
    res = assessor.refine(DOC, dx_like(DOC, 50.0), correct=True)
    assert res.corrected
    kinds = [k for k, _ in fake_slm.calls]
    assert kinds == ["summarize", "correct", "summarize"]
    assert "zz" not in res.text                      # the fake correction dropped the noise
    assert fake_slm.calls[2][1] == res.text          # the SLM summarized the repaired text


def test_correction_is_skipped_for_operators(fake_slm, fake_embedder):
    assessor = make(fake_slm, fake_embedder)
    san = SanitizedText(DOC.replace("Alice Martin", "<PERSON_1>"), "placeholder", ())
    res = assessor.refine(DOC, san, correct=True)
    assert not res.corrected
    assert "correct" not in [k for k, _ in fake_slm.calls]


def test_cancel_stops_before_any_generation(fake_slm, fake_embedder):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        make(fake_slm, fake_embedder).refine(DOC, dx_like(DOC, 50.0), cancel=cancel)
    assert fake_slm.calls == []


def test_correction_budget_follows_document_length():
    short = correction_task("one two three")
    long = correction_task("word " * 400)
    assert short.kind == "correct" and short.max_tokens < long.max_tokens <= 1024


def test_realized_utility_is_the_similarity_to_the_original(fake_slm, fake_embedder):
    a = make(fake_slm, fake_embedder)
    assert a.realized_utility(DOC, DOC) == pytest.approx(1.0, abs=1e-5)
    assert a.realized_utility(DOC, "qqq rrr") < 0.2


def test_missing_collaborator_is_a_clear_error(fake_slm, fake_embedder):
    with pytest.raises(TypeError, match="needs its slm"):
        UtilityAssessor(None, fake_embedder, LinearPredictor())
    with pytest.raises(TypeError, match="needs its embedder"):
        UtilityAssessor(fake_slm, None, LinearPredictor())


def test_fakes_match_the_ports(fake_slm, fake_embedder):
    """The fakes stand in for the core's ports: same methods, same parameters."""
    import inspect

    from _utility_fakes import FakeEmbedder, FakeSLM
    from preflight.core.ports import Embedder, LanguageModel

    for fake, port in ((FakeSLM, LanguageModel), (FakeEmbedder, Embedder)):
        for name in ("run", "perplexity") if port is LanguageModel else ("embed", "similarity"):
            want = list(inspect.signature(getattr(port, name)).parameters)
            assert list(inspect.signature(getattr(fake, name)).parameters) == want, name
    assert isinstance(fake_slm, LanguageModel) and isinstance(fake_embedder, Embedder)


LONG = " ".join(f"{DOC} Section {i} adds detail number {i}." for i in range(200))  # ~7k words


def test_long_document_is_assessed_on_a_bounded_excerpt(fake_slm, fake_embedder):
    from preflight.core.utility.excerpt import EXCERPT_WORDS

    assessor = make(fake_slm, fake_embedder)
    res = assessor.refine(LONG, dx_like(LONG, 60.0))
    assert "sampled" in res.meta
    # the SLM never read more than the excerpt (plus the passage separators)
    assert all(len(text.split()) <= EXCERPT_WORDS + 10 for _, text in fake_slm.calls)
    assert res.text == dx_like(LONG, 60.0).text      # what is sent is still the whole text
    # the excerpt spans the document: its last passage comes from the end
    assert "Section 199" in fake_slm.calls[0][1]


def test_short_document_is_its_own_excerpt(fake_slm, fake_embedder):
    res = make(fake_slm, fake_embedder).refine(DOC, dx_like(DOC, 60.0))
    assert res.meta == {}
    assert fake_slm.calls[0][1] == DOC


def test_correction_of_a_long_document_is_skipped_not_truncated(fake_slm, fake_embedder):
    res = make(fake_slm, fake_embedder).refine(LONG, dx_like(LONG, 50.0), correct=True)
    assert not res.corrected and "correction_skipped" in res.meta
    assert "correct" not in [k for k, _ in fake_slm.calls]
    assert res.text == dx_like(LONG, 50.0).text


def test_every_slm_call_comes_before_the_first_embedding(fake_slm, fake_embedder):
    """`preflight assess` frees the SLM at ``slm_done`` so the two models are never
    loaded together: no SLM call may come after it, no embedding before it."""
    events: list[str] = []

    class LoggedSLM:
        def run(self, task, text, on_token=None, cancel=None):
            events.append("slm")
            return fake_slm.run(task, text, on_token, cancel)

        def perplexity(self, text):
            events.append("slm")
            return fake_slm.perplexity(text)

    class LoggedEmbedder:
        def embed(self, texts):
            events.append("embed")
            return fake_embedder.embed(texts)

        def similarity(self, a, b):
            events.append("embed")
            return fake_embedder.similarity(a, b)

    plain = make(fake_slm, fake_embedder).refine(DOC, dx_like(DOC, 50.0), correct=True)
    logged = UtilityAssessor(LoggedSLM(), LoggedEmbedder(), LinearPredictor()).refine(
        DOC, dx_like(DOC, 50.0), correct=True, slm_done=lambda: events.append("done"))
    assert events.count("done") == 1
    cut = events.index("done")
    assert set(events[:cut]) == {"slm"} and len(events[:cut]) == 5   # 3 answers, 2 ppl
    assert set(events[cut + 1:]) == {"embed"}
    assert logged.features.as_dict() == plain.features.as_dict()


class _ReadsNoSanitizedPerplexity(LinearPredictor):
    def reads(self, feature):
        return feature not in ("log_ppl_sanitized", "log_ppl_ratio")


def test_the_sanitized_perplexity_pass_runs_only_when_something_reads_it(fake_embedder):
    """The shipped full model no longer reads the sanitized text's perplexity: the refined
    step skips that pass (a quarter of its time); the training-set builder
    (``all_features``) and a bundle that reads it still get it."""
    scored: list[str] = []

    class CountingSLM(FakeSLM):
        def perplexity(self, text):
            scored.append(text)
            return super().perplexity(text)

    sanitized = dx_like(DOC, 50.0)
    res = UtilityAssessor(CountingSLM(), fake_embedder, _ReadsNoSanitizedPerplexity()).refine(
        DOC, sanitized)
    assert scored == [DOC]                       # the original's only (a document feature)
    assert res.features.as_dict()["log_ppl_sanitized"] != res.features.as_dict()[
        "log_ppl_sanitized"]                    # NaN: not computed
    assert res.predicted is not None
    for assessor in (
        UtilityAssessor(CountingSLM(), fake_embedder, _ReadsNoSanitizedPerplexity(),
                        all_features=True),
        UtilityAssessor(CountingSLM(), fake_embedder, LinearPredictor()),
    ):
        scored.clear()
        feats = assessor.refine(DOC, sanitized).features.as_dict()
        assert scored == [DOC, sanitized.text]
        assert feats["log_ppl_sanitized"] == feats["log_ppl_sanitized"]


def _placeholder_payload():
    """A document whose names became placeholders, and the vault that restores them."""
    from preflight.core.sanitize.vault import PLACEHOLDER, Vault, VaultEntry

    doc = ("Maria Lopez met Daniel Okafor in Lisbon to sign the supply contract; Maria "
           "Lopez will pay the first instalment in March and Daniel Okafor ships in May.")
    vault = Vault()
    for token, name in (("<PERSON_1>", "Maria Lopez"), ("<PERSON_2>", "Daniel Okafor")):
        vault.add(VaultEntry(token, "PERSON", name, PLACEHOLDER))
    text = doc.replace("Maria Lopez", "<PERSON_1>").replace("Daniel Okafor", "<PERSON_2>")
    return doc, SanitizedText(text, "placeholder"), vault


def test_d_compares_the_local_answer_restored_as_the_cloud_answer_is(fake_slm, fake_embedder):
    # issue 47: the cloud's answer is scored after restoration; D compared the local
    # answer with its placeholders still in, which pulled placeholder payloads down
    doc, sanitized, vault = _placeholder_payload()
    bare = make(FakeSLM(), fake_embedder).refine(doc, sanitized)
    restored = make(FakeSLM(), fake_embedder).refine(doc, sanitized, vault=vault)
    assert "<PERSON_1>" in restored.slm_answer          # the SLM's own answer is kept
    assert restored.features.D == pytest.approx(fake_embedder.similarity(
        doc, restored.slm_answer.replace("<PERSON_1>", "Maria Lopez")
        .replace("<PERSON_2>", "Daniel Okafor")), abs=1e-5)
    assert restored.features.D > bare.features.D + 0.05
    assert restored.features.B == pytest.approx(bare.features.B)   # B reads the payload


def test_secrets_stay_placeholders_in_the_answer_d_compares(fake_slm, fake_embedder):
    from preflight.core.sanitize.vault import PLACEHOLDER, Vault, VaultEntry

    doc = "Use the key sk-live-4242abcd to call the billing service before the end of June."
    vault = Vault()
    vault.add(VaultEntry("<API_KEY_1>", "API_KEY", "sk-live-4242abcd", PLACEHOLDER))
    sanitized = SanitizedText(doc.replace("sk-live-4242abcd", "<API_KEY_1>"), "placeholder")
    bare = make(FakeSLM(), fake_embedder).refine(doc, sanitized)
    with_vault = make(FakeSLM(), fake_embedder).refine(doc, sanitized, vault=vault)
    assert with_vault.features.D == pytest.approx(bare.features.D)


def test_another_vault_is_another_measurement(fake_slm, fake_embedder):
    doc, sanitized, vault = _placeholder_payload()
    assessor = make(fake_slm, fake_embedder)
    first = assessor.refine(doc, sanitized)
    second = assessor.refine(doc, sanitized, vault=vault)
    assert second.features.D > first.features.D
