""""Find best ε" as the product runs it (preflight.core.utility.recommend): the smallest ε
where the document's non-decreasing instant curve, read as the window reads it, reaches
the minimum — no local model runs."""

from __future__ import annotations

import pytest

from _utility_fakes import DOC, FakePrepared, LinearPredictor
from preflight.core.errors import ConfigError
from preflight.core.utility.assess import UtilityAssessor
from preflight.core.utility.curve import read_curve
from preflight.core.utility.recommend import CURVE_POINTS, recommend


def run(fake_slm, fake_embedder, min_u, fast_offset=0.0, **kw):
    assessor = UtilityAssessor(fake_slm, fake_embedder, LinearPredictor(-0.3, fast_offset))
    prepared = FakePrepared(DOC)
    return recommend(DOC, prepared, assessor, min_u, **kw), prepared


def test_the_choice_is_what_the_curve_reads(fake_slm, fake_embedder):
    """The chosen ε is where the curve the window draws first reaches the minimum: the
    number shown there is at least the minimum and a slightly smaller ε falls short; the
    local model never runs (its refined value, 0.3 lower here, plays no part)."""
    rec, _ = run(fake_slm, fake_embedder, 0.6)
    assert rec.decision == "send" and rec.slm_calls == 0 and rec.refined is False
    assert rec.local_answer is None and fake_slm.calls == []
    shown = read_curve(rec.curve.points, rec.epsilon)
    assert shown.utility >= 0.6 and rec.predicted_utility == pytest.approx(shown.utility)
    assert rec.assessment.predicted_fast == pytest.approx(shown.utility)
    assert read_curve(rec.curve.points, rec.epsilon * 0.97).utility < 0.6
    assert rec.sanitized is not None and rec.sanitized.epsilon == rec.epsilon
    assert 55.0 <= rec.epsilon <= 66.0        # utility ≈ ε/100 in the fake


def test_a_minimum_the_curve_never_reaches_keeps_the_document_local(fake_slm, fake_embedder):
    rec, _ = run(fake_slm, fake_embedder, 0.9, fast_offset=-0.5)
    assert rec.decision == "keep_local" and rec.epsilon is None and rec.slm_calls == 0
    assert rec.predicted_utility == pytest.approx(rec.curve[-1][1]) and rec.predicted_utility < 0.9
    assert rec.to_json()["decision"] == "keep_local" and rec.to_json()["refined"] is False


def test_policy_bounds_are_respected(fake_slm, fake_embedder):
    rec, prepared = run(fake_slm, fake_embedder, 0.2, epsilon_min=40.0, epsilon_max=80.0)
    assert rec.decision == "send" and rec.epsilon == pytest.approx(40.0)
    assert min(prepared.calls) >= 40.0 and max(prepared.calls) <= 80.0


def test_invalid_bounds_are_a_user_error(fake_slm, fake_embedder):
    with pytest.raises(ConfigError):
        run(fake_slm, fake_embedder, 0.5, epsilon_min=50.0, epsilon_max=10.0)


def test_progress_is_reported_per_epsilon_evaluated(fake_slm, fake_embedder):
    seen: list[tuple[float, str]] = []
    run(fake_slm, fake_embedder, 0.6, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    instant = [m for _, m in seen if m.startswith("instant estimate at ε")]
    assert len(instant) == CURVE_POINTS
    assert instant[2].endswith(f"(setting 3 of {CURVE_POINTS})")


def test_a_cancelled_search_says_so(fake_slm, fake_embedder):
    import threading

    from preflight.core.errors import Cancelled

    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        run(fake_slm, fake_embedder, 0.6, cancel=stop)
