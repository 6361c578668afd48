"""The uncertainty band beside a prediction comes from the shipped regressor's own
held-out metrics (its conformal interval, else its held-out RMSE)."""

from __future__ import annotations

import pytest

from preflight.app.prediction import Prediction, held_out_rmse
from preflight.app.services import Services
from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import Settings
from preflight.core.utility.assess import Assessment


# --- the band ---------------------------------------------------------------------------
def test_shipped_bundle_has_a_held_out_rmse_for_both_models() -> None:
    from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

    metrics = UtilityPredictor.load(shipped_bundle_path(), prefer_user=False).metrics
    fast, full = held_out_rmse(metrics, "fast"), held_out_rmse(metrics, "full")
    assert fast is not None and full is not None
    # which one errs less is the held-out report's finding (eval_report.json), not a rule
    assert 0 < full < 1 and 0 < fast < 1


def test_rmse_matches_the_shipped_eval_report() -> None:
    import json

    from preflight.core import paths
    from preflight.core.utility.predictor import (
        UtilityPredictor, shipped_bundle_path, shipped_folder,
    )

    report = json.loads(paths.resource_path(*shipped_folder(), "eval_report.json").read_text())
    models = report["variants"]["plain"]["models"]
    metrics = UtilityPredictor.load(shipped_bundle_path(), prefer_user=False).metrics
    for label, model in (("fast (no model call)", "fast"), ("full (ABCD + extras)", "full")):
        assert held_out_rmse(metrics, model) == pytest.approx(models[label]["rmse"])


def test_real_doorway_prediction_carries_the_shipped_band() -> None:
    from preflight.core.types import SanitizedText

    class NoModels(Services):     # the instant stage needs no model: fail if one is built
        def slm(self):
            raise AssertionError("SLM built")

        def embedder(self):
            raise AssertionError("embedder built")

    door = WindowDoorway(services=NoModels(Settings()))
    assessor = door.services.assessor()
    text = "Jane Doe met Max Power in Berlin to discuss the merger."
    pred = door.predict_fast(text, SanitizedText(text, "redact"), [])
    metrics = assessor.predictor.metrics
    assert pred.rmse == held_out_rmse(metrics, "fast") is not None
    # the band is the bundle's split-conformal interval of the model that answered
    band = assessor.predictor.bundle["models"]["fast"]["interval"]
    assert pred.level == band["level"] == pytest.approx(0.8)
    assert pred.low == pytest.approx(max(-1.0, pred.value - band["radius"]))
    assert pred.high == pytest.approx(min(1.0, pred.value + band["radius"]))


def test_prediction_band_is_clipped() -> None:
    p = Prediction(Assessment({}, 0.95, 0.95), rmse=0.2)
    assert p.refined and p.high == 1.0 and p.low == pytest.approx(0.75)
    assert Prediction(Assessment({}, 0.3)).low is None


def test_the_band_is_read_from_the_keyed_metrics_not_the_labels() -> None:
    """A bundle's metrics say which model each held-out error belongs to by key; a report
    row whose label merely starts with the model's name is not read when the key is there."""
    metrics = {"held_out": {"plain": {"fast": {"rmse": 0.21}, "full": {"rmse": 0.17}},
                            "corrected": {"full": {"rmse": 0.15}}},
               "plain": {"fast (no model call)": {"rmse": 0.9}}}
    assert held_out_rmse(metrics, "fast") == 0.21
    assert held_out_rmse(metrics, "full", corrected=True) == 0.15
    assert held_out_rmse(metrics, "fast", corrected=True) is None    # none for that model


def test_an_older_bundle_keeps_its_band() -> None:
    """Bundles written before the keyed table (the shipped ones among them) still give
    the error of the model that answered: the first report row of its name."""
    old = {"plain": {"fast (no model call)": {"rmse": 0.25},
                     "full (ABCD + extras)": {"rmse": 0.2},
                     "full + sanitized-text perplexity": {"rmse": 0.3}}}
    assert held_out_rmse(old, "fast") == 0.25 and held_out_rmse(old, "full") == 0.2
    assert held_out_rmse(old, "full", corrected=True) == 0.2          # plain serves


def test_training_writes_the_keyed_table() -> None:
    from preflight_eval.eval_utility import FAST, FULL
    from preflight_eval.train_utility import held_out_table

    report = {"variants": {"plain": {"models": {FAST: {"rmse": 0.3, "r2": 0.1},
                                                FULL: {"rmse": 0.2, "r2": 0.4},
                                                "ABCD (paper)": {"rmse": 0.25}}}}}
    table = held_out_table(report)
    assert table == {"plain": {"fast": {"rmse": 0.3, "r2": 0.1},
                               "full": {"rmse": 0.2, "r2": 0.4}}}
    assert held_out_rmse({"held_out": table}, "full") == 0.2
