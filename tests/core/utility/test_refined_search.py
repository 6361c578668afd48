"""The search that checks candidates with the local model (preflight_eval.refined_search,
the product's "Find best ε" before issue 47, kept for search_study and bench_utility):
the most private ε meeting the threshold, with few SLM calls."""

from __future__ import annotations

import pytest

from _utility_fakes import DOC, FakePrepared, LinearPredictor
from preflight.core.utility.assess import UtilityAssessor
from preflight_eval.refined_search import recommend_refined as recommend


def run(fake_slm, fake_embedder, min_u, offset=0.0, **kw):
    assessor = UtilityAssessor(fake_slm, fake_embedder, LinearPredictor(offset))
    prepared = FakePrepared(DOC)
    return recommend(DOC, prepared, assessor, min_u, **kw), prepared


def test_finds_the_smallest_passing_epsilon_with_one_refinement(fake_slm, fake_embedder):
    rec, _ = run(fake_slm, fake_embedder, 0.6)
    assert rec.decision == "send"
    # utility = share of unchanged words ≈ ε/100 in the fake: ε ≈ 60 is the answer
    assert 55.0 <= rec.epsilon <= 66.0
    assert rec.predicted_utility >= 0.6
    assert rec.slm_calls == 2                       # the original + one candidate
    assert rec.local_answer is None
    assert rec.sanitized is not None and rec.sanitized.epsilon == rec.epsilon


def test_pessimistic_refinement_moves_up_within_the_budget(fake_slm, fake_embedder):
    # the refined prediction is 0.15 below the fast one: the fast candidate fails
    rec, _ = run(fake_slm, fake_embedder, 0.6, offset=-0.15, max_refinements=4)
    assert rec.decision == "send"
    assert rec.predicted_utility >= 0.6
    assert rec.epsilon > 66.0
    assert rec.slm_calls <= 1 + 4


def test_a_constant_gap_is_corrected_in_one_step(fake_slm, fake_embedder):
    # refined = fast − 0.15: the first candidate (ε ≈ 60) fails by 0.15, so the second
    # aims where the instant curve clears 0.6 by that gap and SHIFT_MARGIN (0.04): ε ≈ 80,
    # just past the refined crossing (ε ≈ 75)
    rec, _ = run(fake_slm, fake_embedder, 0.6, offset=-0.15)
    refined = [p for p in rec.probes if p["stage"] == "refined"]
    assert rec.decision == "send" and rec.predicted_utility >= 0.6
    assert rec.slm_calls == 1 + 2 and len(refined) == 2
    assert 75.0 <= rec.epsilon <= 86.0
    assert refined[0]["epsilon"] < rec.epsilon < 100.0        # not the largest ε


def test_bisection_widening_spends_the_whole_budget_on_the_same_document(
        fake_slm, fake_embedder):
    shift, _ = run(fake_slm, fake_embedder, 0.6, offset=-0.15)
    bisect, _ = run(fake_slm, fake_embedder, 0.6, offset=-0.15, widen="bisect")
    assert bisect.decision == "send" and bisect.predicted_utility >= 0.6
    assert bisect.slm_calls == 1 + 3 > shift.slm_calls
    assert 100.0 in [p["epsilon"] for p in bisect.probes if p["stage"] == "refined"]


def test_a_gap_past_the_curves_top_goes_where_the_curve_stops_rising(fake_slm, fake_embedder):
    # refined = fast − 0.45: aiming at 0.6 + 0.45 + margin is past the curve's top (1.0,
    # reached at ε ≈ 99 in the fake), so the second check goes there, not further
    rec, _ = run(fake_slm, fake_embedder, 0.6, offset=-0.45)
    refined = [p["epsilon"] for p in rec.probes if p["stage"] == "refined"]
    assert 98.0 <= refined[1] <= 100.0 and refined[-1] == 100.0
    assert rec.decision == "keep_local" and rec.predicted_utility < 0.6


class _Plateau(LinearPredictor):
    """The instant curve stops rising at 0.7 (ε ≥ 70); refined is 0.08 lower."""

    def predict_fast(self, features, corrected=False):
        return min(super().predict_fast(features), 0.7)

    def predict(self, features, corrected=False):
        return self.predict_fast(features) - 0.08


def test_a_plateau_is_not_crossed_for_nothing(fake_slm, fake_embedder):
    # 0.6 + 0.08 + margin is above the plateau: the second check is where it starts
    # (ε ≈ 70, refined 0.62), not the largest ε, which the instant model says adds nothing
    assessor = UtilityAssessor(fake_slm, fake_embedder, _Plateau())
    rec = recommend(DOC, FakePrepared(DOC), assessor, 0.6)
    refined = [p["epsilon"] for p in rec.probes if p["stage"] == "refined"]
    assert rec.decision == "send" and len(refined) == 2
    assert 66.0 <= rec.epsilon <= 75.0 and rec.predicted_utility >= 0.6


class _FlatInstant(LinearPredictor):
    """The instant curve is flat (0.55 → 0.65 over the range); the refined one steep."""

    def predict_fast(self, features, corrected=False):
        return 0.55 + 0.1 * super().predict_fast(features)

    def predict(self, features, corrected=False):
        return min(1.0, 1.5 * super().predict_fast(features))


def test_a_wide_step_is_halved_once(fake_slm, fake_embedder):
    # the first candidate (ε ≈ 30, refined 0.45) fails; the gap sends the second check to
    # the curve's top (ε ≈ 99), which passes but is over twice the first: their midpoint
    # (ε ≈ 55, refined ≈ 0.8) passes too and is chosen — three checks, as a bisection
    assessor = UtilityAssessor(fake_slm, fake_embedder, _FlatInstant())
    rec = recommend(DOC, FakePrepared(DOC), assessor, 0.58)
    refined = [p["epsilon"] for p in rec.probes if p["stage"] == "refined"]
    assert len(refined) == 3 and refined[1] > 2 * refined[0]
    assert refined[2] == pytest.approx((refined[0] * refined[1]) ** 0.5, rel=1e-3)
    assert rec.decision == "send" and rec.epsilon == pytest.approx(refined[2], abs=1e-3)
    assert rec.epsilon < 60.0


class _WideningGap(LinearPredictor):
    """The refined prediction falls further below the fast one as ε grows."""

    def predict(self, features, corrected=False):
        fast = self.predict_fast(features)
        return fast - (0.15 if fast < 0.7 else 0.25)


def test_a_gap_that_grows_falls_back_to_the_largest_epsilon(fake_slm, fake_embedder):
    assessor = UtilityAssessor(fake_slm, fake_embedder, _WideningGap())
    rec = recommend(DOC, FakePrepared(DOC), assessor, 0.6)
    refined = [p["epsilon"] for p in rec.probes if p["stage"] == "refined"]
    assert len(refined) == 3 and refined[0] < refined[1] < refined[2] == 100.0
    assert rec.decision == "send" and rec.epsilon == 100.0


def test_an_unknown_widening_is_refused(fake_slm, fake_embedder):
    with pytest.raises(ValueError, match="widen"):
        run(fake_slm, fake_embedder, 0.6, widen="guess")


def test_unreachable_threshold_keeps_the_document_local(fake_slm, fake_embedder):
    rec, _ = run(fake_slm, fake_embedder, 0.95, offset=-0.3)
    assert rec.decision == "keep_local"
    assert rec.epsilon is None
    assert rec.local_answer == " ".join(DOC.split()[:12])   # the SLM's answer on the original
    assert rec.predicted_utility < 0.95
    assert rec.to_json()["decision"] == "keep_local"


def test_progress_is_reported_per_epsilon_evaluated(fake_slm, fake_embedder):
    import re

    from preflight.core.utility.recommend import CURVE_POINTS

    seen: list[tuple[float, str]] = []
    rec, prepared = run(fake_slm, fake_embedder, 0.6, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 0.5
    instant = [m for _, m in seen if m.startswith("instant estimate at ε")]
    assert len(instant) == CURVE_POINTS
    assert instant[2].endswith(f"(setting 3 of {CURVE_POINTS})")
    narrowing = [m for _, m in seen if m.startswith("narrowing down")]
    checks = [m for _, m in seen if m.startswith("checking ε")]
    assert len(checks) == rec.slm_calls - 1          # one message per local-model check
    # every ε the search evaluated was announced (the curve, bisection and checks)
    assert len(narrowing) == sum(p["stage"] == "fast" for p in rec.probes) > 0
    assert len(instant) + len(narrowing) + len(checks) == len(rec.probes)
    assert re.search(r"run 2 of at most \d", checks[0])
