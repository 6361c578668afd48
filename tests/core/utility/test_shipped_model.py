"""The regressor shipped in resources/utility/ loads and predicts with no training step."""

from __future__ import annotations

import csv

import pytest

from preflight.core import paths
from preflight.core.config import ASSESSOR_SLMS
from preflight.core.utility.features import ALL_FEATURES, FAST_FEATURES
from preflight.core.utility.flow import read_training_rows, shipped_rows_path
from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path
from preflight.core.utility.slm_roles import shipped_folder


def test_the_regressor_is_shipped():
    assert shipped_bundle_path().is_file(), f"{shipped_bundle_path()} is missing"


def test_shipped_bundle_learned_from_answers_as_long_as_the_assessor_gives():
    """Features C and D depend on the SLM's answer cap: a bundle fitted on rows of another
    cap than ``ASSESSOR_ANSWER_TOKENS`` would read features unlike its training rows.
    (Bundles before the cap was recorded were fitted on 142-token answers.)"""
    from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS

    bundle = UtilityPredictor.load(prefer_user=False).bundle
    assert bundle.get("slm_answer_tokens", 142) == ASSESSOR_ANSWER_TOKENS


@pytest.mark.parametrize("role", ASSESSOR_SLMS)
def test_each_assessor_slm_has_a_bundle_learned_from_its_own_features(role):
    """C, D and the perplexities come from the assessor's SLM: choosing another one in
    Settings → Models must bring the regressor fitted on that SLM's features."""
    from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS

    path = shipped_bundle_path(role)
    assert path.is_file(), f"{path} is missing (python -m preflight_eval.train_utility " \
                           f"--slm-role {role})"
    predictor = UtilityPredictor.load(path)
    assert predictor.slm_role == role
    assert predictor.bundle.get("slm_answer_tokens", 142) == ASSESSOR_ANSWER_TOKENS
    assert predictor.has("full") and predictor.has("fast")


def _dx(frac_changed: float, eps: float) -> dict:
    import math

    f = {n: 0.0 for n in FAST_FEATURES}
    f.update(epsilon=eps, log_epsilon=math.log(eps), method_dx=1.0,
             frac_tokens_changed=frac_changed, frac_chars_changed=frac_changed,
             log_words=math.log(180), length_ratio=1.0, pii_total=3.0,
             pii_left=3.0 * (1 - frac_changed), frac_pii_left=1 - frac_changed)
    return f


def test_shipped_bundle_loads_without_training():
    pred = UtilityPredictor.load(prefer_user=False)
    assert pred.path == paths.resource_path(*shipped_folder(), "regressor.joblib")
    assert pred.slm_role == ASSESSOR_SLMS[0]            # the default SLM's bundle
    for name in ("baseline", "fast", "full"):
        assert pred.has(name)
    assert pred.metrics["acceptance"]["rule"]


def test_fast_prediction_falls_as_more_of_the_text_is_changed():
    pred = UtilityPredictor.load(prefer_user=False)
    barely = pred.predict_fast(_dx(0.02, 200.0))
    heavily = pred.predict_fast(_dx(0.95, 16.0))
    assert -1.0 <= heavily < barely <= 1.0
    assert barely - heavily > 0.15


def test_full_prediction_reads_the_slm_features():
    pred = UtilityPredictor.load(prefer_user=False)
    base = _dx(0.4, 60.0)
    good = dict(base, sim_sanitized=0.85, sim_slm_original=0.8, sim_slm_sanitized=0.78,
                slm_d_minus_c=-0.02, log_ppl_sanitized=3.5, log_ppl_ratio=0.3)
    bad = dict(base, sim_sanitized=0.2, sim_slm_original=0.8, sim_slm_sanitized=0.1,
               slm_d_minus_c=-0.7, log_ppl_sanitized=7.5, log_ppl_ratio=4.3)
    assert pred.predict(good) > pred.predict(bad) + 0.1


def test_shipped_training_rows_hold_numbers_only():
    path = shipped_rows_path()
    rows = read_training_rows(path)
    assert len(rows) >= 100
    with path.open(encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert set(ALL_FEATURES) <= set(header)
    assert not {"text", "sanitized", "answer"} & set(header)
