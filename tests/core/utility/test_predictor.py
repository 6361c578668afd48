"""Regressor bundle: fitting, metrics, save/load, version pin, fast fallback."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from preflight.core.errors import ModelUnavailableError
from preflight.core.utility.predictor import (
    UtilityPredictor,
    cost_metrics,
    fit_bundle,
    load_bundle,
    save_bundle,
)


def synthetic_rows(n_docs: int = 30, seed: int = 0, variant: str = "plain") -> list[dict]:
    """E depends on the unchanged share and on a per-document difficulty that only the
    SLM-based feature D reveals, so the full model must beat the fast one."""
    rng = random.Random(seed)
    rows = []
    for d in range(n_docs):
        difficulty = rng.uniform(-0.25, 0.25)
        for k in range(8):
            eps = 1.0 + k * 14.0
            changed = max(0.0, 1.0 - eps / 100.0)
            e = 0.1 + 0.7 * (1 - changed) + difficulty * (1 - changed)
            rows.append({
                "epsilon": eps, "log_epsilon": math.log(eps), "method_dx": 1.0,
                "frac_tokens_changed": changed, "frac_chars_changed": changed,
                "sim_sanitized": 1 - changed, "sim_slm_original": 0.7,
                "sim_slm_sanitized": 0.1 + 0.6 * (1 - changed) + difficulty * (1 - changed),
                "target": e, "variant": variant, "group": f"d{d}",
            })
    return rows


def test_cost_metrics_counts_the_paper_categories():
    m = cost_metrics([0.5, 0.5, 0.5, 0.5], [0.7, 0.55, 0.3, 0.5])
    assert m.n == 4
    assert m.wasted_money == 25.0       # 0.7 > 0.5 + 0.1
    assert m.wasted_epsilon == 25.0     # 0.3 < 0.5 − 0.1
    assert m.failed == 50.0
    assert math.isclose(m.rmse, math.sqrt((0.04 + 0.0025 + 0.04) / 4))


def test_bundle_round_trip_and_full_model_uses_slm_features(tmp_path):
    rows = synthetic_rows() + synthetic_rows(variant="corrected", seed=1)
    bundle = fit_bundle(rows, metrics={"note": 1})
    assert {"baseline", "fast", "full", "fast_corrected", "full_corrected"} <= set(bundle["models"])
    path = tmp_path / "regressor.joblib"
    save_bundle(bundle, path)
    pred = UtilityPredictor(load_bundle(path), path)
    test = synthetic_rows(n_docs=10, seed=99)
    y = np.array([r["target"] for r in test])
    fast = np.array([pred.predict_fast(r) for r in test])
    full = np.array([pred.predict(r) for r in test])
    assert np.abs(full - y).mean() < np.abs(fast - y).mean()
    assert pred.metrics["note"] == 1 and set(pred.metrics["conformal"]) >= {"fast", "full"}


def test_predict_falls_back_to_fast_without_slm_features():
    pred = UtilityPredictor(fit_bundle(synthetic_rows()))
    row = dict(synthetic_rows(n_docs=1)[3])
    del row["sim_slm_sanitized"]
    assert pred.predict(row) == pred.predict_fast(row)
    row["sim_slm_sanitized"] = float("nan")
    assert pred.predict(row) == pred.predict_fast(row)


def test_predictions_are_clipped_to_the_similarity_scale():
    rows = synthetic_rows()
    for r in rows:
        r["target"] = 5.0 * r["target"]
    pred = UtilityPredictor(fit_bundle(rows))
    assert pred.predict(rows[-1]) <= 1.0


def test_bundle_from_another_sklearn_version_is_refused_with_a_hint(tmp_path):
    bundle = fit_bundle(synthetic_rows())
    bundle["sklearn_version"] = "0.0.1"
    save_bundle(bundle, tmp_path / "r.joblib")
    with pytest.raises(ModelUnavailableError) as err:
        load_bundle(tmp_path / "r.joblib")
    assert "train_utility" in err.value.hint


def test_missing_or_damaged_bundle_is_a_user_error(tmp_path):
    with pytest.raises(ModelUnavailableError):
        load_bundle(tmp_path / "nope.joblib")
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(ModelUnavailableError):
        load_bundle(bad)


def test_too_few_rows_cannot_fit():
    with pytest.raises(ValueError):
        fit_bundle(synthetic_rows(n_docs=1))
