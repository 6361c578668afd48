"""What a prediction means: its conformal band, the unsanitized expectation, its drivers,
the policy features and the data-derived default minimum."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from _utility_fakes import DOC
from preflight.core.types import Category, Span
from preflight.core.utility.features import fast_features, vector
from preflight.core.utility.fitting import (
    KEEP_FRACTION,
    conformal_quantile,
    group_split,
    out_of_fold_residuals,
    unsanitized_targets,
)
from preflight.core.utility.predictor import (
    UtilityPredictor,
    fit_bundle,
    load_bundle,
    save_bundle,
)


def noisy_rows(n_docs: int, seed: int, noise: float = 0.08) -> list[dict]:
    """E = 0.2 + 0.6·(unchanged share) + per-document level + noise; the document's level
    is visible in its length (log_words), as a real document's difficulty might be."""
    rng = random.Random(seed)
    rows = []
    for d in range(n_docs):
        level = rng.uniform(-0.1, 0.1)
        words = 100 + 200 * (level + 0.1) / 0.2
        for k in range(6):
            eps = 5.0 * 2 ** k
            changed = max(0.0, 1.0 - eps / 160.0)
            e = 0.2 + 0.6 * (1 - changed) + level + rng.gauss(0, noise)
            rows.append({"epsilon": eps, "log_epsilon": math.log(eps), "method_dx": 1.0,
                         "frac_tokens_changed": changed, "frac_chars_changed": changed,
                         "length_ratio": 1.0, "log_words": math.log1p(words),
                         "pii_total": 3.0, "target": e, "variant": "plain",
                         "group": f"s{seed}-d{d}"})
    return rows


@pytest.fixture(scope="module")
def bundle():
    return fit_bundle(noisy_rows(60, seed=1))


def test_split_keeps_each_document_in_one_part_and_honours_a_given_split():
    rows = noisy_rows(20, seed=2)
    fit, cal, test = group_split(rows)
    docs = [{r["group"] for r in part} for part in (fit, cal, test)]
    assert not (docs[0] & docs[1]) and not (docs[0] & docs[2]) and not (docs[1] & docs[2])
    assert (len(docs[0]), len(docs[1]), len(docs[2])) == (14, 3, 3)
    rows[0]["split"] = "test"
    assert rows[0] in group_split(rows)[2]


def test_conformal_radius_is_the_finite_sample_quantile():
    assert conformal_quantile([0.1, -0.5, 0.3, 0.2], 0.6) == 0.3   # ⌈5·0.6⌉ = 3rd of 4
    assert conformal_quantile([0.1], 0.8) == 2.0                   # too few: whole scale


def test_band_holds_the_nominal_share_of_new_documents(bundle):
    pred = UtilityPredictor(bundle)
    assert bundle["metrics"]["conformal"]["fast"]["level"] == 0.8
    fresh = noisy_rows(80, seed=7)
    inside = []
    for r in fresh:
        est = pred.estimate(r, refined=False, explain=False)
        assert est.low <= est.value <= est.high and est.level == 0.8
        inside.append(est.low <= r["target"] <= est.high)
    assert 0.7 <= float(np.mean(inside)) <= 0.95


def test_band_radius_is_the_quantile_of_out_of_fold_residuals_over_every_document():
    rows = noisy_rows(40, seed=31)
    fit, cal, test = group_split(rows)
    bundle = fit_bundle(fit, calibration=cal, test=test)
    band = bundle["models"]["fast"]["interval"]
    names = bundle["models"]["fast"]["features"]
    oof = out_of_fold_residuals(fit + test + cal, names)
    assert band["method"] == "cross" and band["calibration_rows"] == len(rows)
    assert band["radius"] == pytest.approx(conformal_quantile(oof, 0.8))
    # the coverage stored for the test documents comes from a model and radius of the
    # other documents only
    held = bundle["metrics"]["conformal"]["fast"]
    assert held["method"] == "cross" and held["test_rows"] == len(test)
    assert held["radius"] == pytest.approx(conformal_quantile(
        out_of_fold_residuals(fit + cal, names), 0.8), abs=1e-4)
    assert held["radius"] != pytest.approx(band["radius"], abs=1e-6)


def test_a_refit_that_measures_nothing_fits_every_row():
    rows = noisy_rows(30, seed=33)
    bundle = fit_bundle(rows, measure=False)          # learning on the flow's refit
    band = bundle["models"]["fast"]["interval"]
    assert band["method"] == "cross" and band["calibration_rows"] == len(rows)
    assert bundle["metrics"]["conformal"] == {}
    assert bundle["models"]["unsanitized"]["interval"]["calibration_rows"] == 30


def test_too_few_documents_for_the_folds_fall_back_to_split_conformal():
    rows = noisy_rows(8, seed=32)              # 8 documents < 2 per fold × 5 folds
    fit, cal, test = group_split(rows)
    bundle = fit_bundle(fit, calibration=cal, test=test)
    band = bundle["models"]["fast"]["interval"]
    assert band["method"] == "split" and band["calibration_rows"] == len(cal)
    pred = UtilityPredictor(bundle)            # fitted without the calibration rows
    resid = [r["target"] - pred.predict_fast(r) for r in cal]
    assert band["radius"] == pytest.approx(conformal_quantile(resid, 0.8))


def test_unsanitized_target_uses_the_cloud_answer_on_the_original_when_given():
    rows = noisy_rows(2, seed=3)
    derived = unsanitized_targets(rows)
    doc = rows[0]["group"]
    near = [r["target"] for r in rows if r["group"] == doc and r["frac_tokens_changed"] <= 0.1]
    assert derived[doc] == pytest.approx(sum(near) / len(near))
    for r in rows:
        r["target_original"] = 0.9
    assert unsanitized_targets(rows)[doc] == pytest.approx(0.9)


def test_estimate_says_what_the_unsanitized_text_would_give_and_what_drove_it(bundle):
    pred = UtilityPredictor(bundle)
    long_doc = dict(noisy_rows(1, seed=11)[1], log_words=math.log1p(300))
    short_doc = dict(long_doc, log_words=math.log1p(100))
    assert pred.unsanitized(long_doc) > pred.unsanitized(short_doc)
    heavy = dict(long_doc, frac_tokens_changed=0.95, frac_chars_changed=0.95,
                 epsilon=5.0, log_epsilon=math.log(5.0))
    est = pred.estimate(heavy, refined=False)
    assert 0 < est.kept_share < 1 and est.unsanitized == pred.unsanitized(heavy)
    assert est.drivers, "a heavily changed text must name what lowered its prediction"
    top = est.drivers[0]
    assert top.feature in {"frac_tokens_changed", "frac_chars_changed", "epsilon"}
    assert top.effect < 0                 # setting it to the median would raise the value
    # the effect is the honest difference of two predictions
    again = dict(heavy, **{top.feature: top.median})
    assert top.effect == pytest.approx(est.value - pred.predict_fast(again), abs=1e-9)


def test_default_minimum_is_a_stated_share_of_the_unsanitized_median(bundle):
    d = bundle["defaults"]
    assert d["keep_fraction"] == KEEP_FRACTION
    assert d["min_utility"] == pytest.approx(KEEP_FRACTION * d["unsanitized_median"], abs=0.005)


def test_shipped_defaults_feed_the_settings():
    from preflight.core.config import Settings
    from preflight.core.utility.defaults import shipped_defaults

    shipped = UtilityPredictor.load(prefer_user=False).defaults
    assert shipped_defaults()["min_utility"] == shipped["min_utility"]
    assert Settings().policy.min_utility == shipped["min_utility"]


def test_a_format_1_bundle_still_loads_without_a_band(tmp_path, bundle):
    old = dict(bundle, format=1)
    old["models"] = {k: {"features": v["features"], "estimator": v["estimator"]}
                     for k, v in bundle["models"].items() if not k.startswith("unsanitized")}
    save_bundle(old, tmp_path / "r.joblib")
    pred = UtilityPredictor(load_bundle(tmp_path / "r.joblib"))
    est = pred.estimate(noisy_rows(1, seed=5)[2], refined=False)
    assert est.low is None and est.unsanitized is None and est.drivers == ()


def _span(text: str, value: str, typ: str) -> Span:
    start = text.index(value)
    return Span(start, start + len(value), typ, Category.DIRECT_IDENTIFIER, 0.9, "test", "t")


def test_policy_output_maps_to_policy_features():
    from preflight.core.sanitize.policy_apply import PolicyMechanism
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.sanitize.policy import Action, Policy

    spans = [_span(DOC, "Alice Martin", "PERSON"), _span(DOC, "Bob Stone", "PERSON"),
             _span(DOC, "Paris", "LOCATION")]
    policy = Policy(name="t", title="t", fallback=Action.PLACEHOLDER,
                    by_type={"LOCATION": Action.KEEP})
    out = PolicyMechanism(policy).sanitize(DOC, spans, SanitizeParams(seed=1))
    f = fast_features(DOC, out, spans).as_dict()
    assert f["method_placeholder"] == 1.0 and f["dx_share"] == 0.0
    assert f["spans_replaced_share"] == pytest.approx(2 / 3) and f["spans_kept"] == 1.0
    # a row written before the policy features existed gets them from its method
    old_dx = {"method_dx": 1.0, "epsilon": 30.0}
    assert vector(old_dx, ["dx_share", "spans_replaced_share", "spans_kept"]) == [1.0, 0.0, 0.0]
    old_op = {"method_redact": 1.0}
    assert vector(old_op, ["dx_share", "spans_replaced_share"]) == [0.0, 1.0]
