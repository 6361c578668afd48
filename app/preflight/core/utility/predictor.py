"""The regressor that predicts the cloud answer's utility E from the features.

A *bundle* (one joblib file) holds several fitted scikit-learn
``HistGradientBoostingRegressor`` models, each with the feature names it reads:

* ``baseline`` — ε and the method indicator only (the paper's "feature A" row),
* ``fast`` — every feature that needs no model call (instant slider feedback),
* ``full`` — fast + B, C, D + SLM perplexity (after the SLM has run),
* ``fast_corrected`` / ``full_corrected`` — the same when the SLM first repairs the
  sanitized text's grammar and both models then work on the repaired text.

The shipped bundle lives in ``resources/utility/``; a bundle refitted on the user's own
history (see :mod:`preflight.core.utility.flow`) lives in the data folder and wins.
"""

from __future__ import annotations

import datetime as _dt
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from preflight.core import paths
from preflight.core.errors import ModelUnavailableError
from preflight.core.utility.features import (
    ALL_FEATURES,
    BASELINE_FEATURES,
    FAST_MODEL_FEATURES,
    REFINED_FEATURES,
    Features,
    as_mapping,
    vector,
)

log = logging.getLogger(__name__)

BUNDLE_FORMAT = 1
BUNDLE_NAME = "regressor.joblib"
MODEL_FEATURES: dict[str, tuple[str, ...]] = {
    "baseline": BASELINE_FEATURES,
    "fast": FAST_MODEL_FEATURES,
    "full": ALL_FEATURES,
}
WASTE_MARGIN = 0.1   # the paper's tolerance on the similarity scale


def shipped_bundle_path() -> Path:
    return paths.resource_path("utility", BUNDLE_NAME)


def user_bundle_path() -> Path:
    return paths.data_dir() / "utility" / BUNDLE_NAME


def make_regressor(n_rows: int, seed: int = 0) -> Any:
    """The paper's best regressor, kept shallow: a few hundred noisy rows from a few dozen
    documents do not support deep trees (deeper settings raised held-out RMSE for the
    ε-only baseline and the full model alike)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        learning_rate=0.05,
        max_iter=150,
        max_depth=3,
        min_samples_leaf=max(3, min(15, n_rows // 12)),
        l2_regularization=1.0,
        random_state=seed,
    )


# ---------------------------------------------------------------- metrics
@dataclass(frozen=True)
class CostMetrics:
    """Table-2 metrics of the paper, percentages in 0–100."""

    n: int
    r2: float
    rmse: float
    wasted_money: float     # predicted > realized + 0.1: sent, but the answer is poor
    wasted_epsilon: float   # predicted < realized − 0.1: privacy given up for nothing
    failed: float

    def to_json(self) -> dict[str, float]:
        return {
            "n": self.n,
            "r2": round(self.r2, 4),
            "rmse": round(self.rmse, 4),
            "wasted_money_pct": round(self.wasted_money, 2),
            "wasted_epsilon_pct": round(self.wasted_epsilon, 2),
            "failed_pct": round(self.failed, 2),
        }


def cost_metrics(realized: Sequence[float], predicted: Sequence[float]) -> CostMetrics:
    y = np.asarray(realized, dtype=float)
    p = np.asarray(predicted, dtype=float)
    n = len(y)
    if n == 0:
        nan = float("nan")
        return CostMetrics(0, nan, nan, nan, nan, nan)
    resid = p - y
    ss_res = float(np.sum(resid**2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    money = 100.0 * float(np.mean(resid > WASTE_MARGIN))
    eps = 100.0 * float(np.mean(resid < -WASTE_MARGIN))
    return CostMetrics(n, r2, math.sqrt(ss_res / n), money, eps, money + eps)


# ---------------------------------------------------------------- fitting
def fit_model(rows: Sequence[Mapping[str, Any]], names: Sequence[str], seed: int = 0) -> Any:
    """Fit one regressor on ``rows`` (feature dicts with a ``target`` key)."""
    X = np.asarray([vector(r, names) for r in rows], dtype=float)
    y = np.asarray([float(r["target"]) for r in rows], dtype=float)
    # A column with no value at all (e.g. ε when only operators are present) breaks the
    # histogram binning; a constant column is simply never split on.
    X[:, np.isnan(X).all(axis=0)] = 0.0
    model = make_regressor(len(rows), seed)
    with _one_thread():
        model.fit(X, y)
    return model


def _one_thread() -> Any:
    """Run scikit-learn's OpenMP code on one thread: the data are small, and on a busy
    2-core laptop extra threads only spin (measured: 56 s instead of 2 s for one fit)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="openmp")


def fit_bundle(
    rows: Sequence[Mapping[str, Any]],
    *,
    metrics: Mapping[str, Any] | None = None,
    source: str = "",
    seed: int = 0,
) -> dict[str, Any]:
    """Fit every model the rows allow. Rows carry ``variant`` "plain" or "corrected"."""
    import sklearn

    models: dict[str, Any] = {}
    for variant, suffix in (("plain", ""), ("corrected", "_corrected")):
        subset = [r for r in rows if r.get("variant", "plain") == variant]
        if len(subset) < 20:
            continue
        for name, feats in MODEL_FEATURES.items():
            models[name + suffix] = {"features": list(feats), "estimator": fit_model(subset, feats, seed)}
    if "fast" not in models:
        raise ValueError("need at least 20 plain rows to fit the utility regressor")
    return {
        "format": BUNDLE_FORMAT,
        "sklearn_version": sklearn.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "n_rows": len(rows),
        "source": source,
        "metrics": dict(metrics or {}),
        "models": models,
    }


def save_bundle(bundle: Mapping[str, Any], path: Path) -> None:
    import joblib

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    joblib.dump(dict(bundle), tmp, compress=3)
    tmp.replace(path)


def load_bundle(path: Path) -> dict[str, Any]:
    import joblib
    import sklearn

    if not path.is_file():
        raise ModelUnavailableError(
            f"The utility regressor is missing: {path}.",
            "Reinstall Preflight, or rebuild it with `python -m preflight_eval.train_utility`.",
        )
    try:
        bundle = joblib.load(path)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means the same thing
        raise ModelUnavailableError(
            f"The utility regressor {path.name} could not be read ({type(exc).__name__}).",
            "Reinstall Preflight, or rebuild it with `python -m preflight_eval.train_utility`.",
        ) from None
    if not isinstance(bundle, dict) or bundle.get("format") != BUNDLE_FORMAT:
        raise ModelUnavailableError(
            f"The utility regressor {path.name} has an unknown format.",
            "Reinstall Preflight, or rebuild it with `python -m preflight_eval.train_utility`.",
        )
    if bundle.get("sklearn_version") != sklearn.__version__:
        # Pickled estimators are only guaranteed to load in the version that wrote them.
        raise ModelUnavailableError(
            f"The utility regressor was built with scikit-learn {bundle.get('sklearn_version')}"
            f" but {sklearn.__version__} is installed.",
            "Install the scikit-learn version pinned in pyproject.toml, or retrain with "
            "`python -m preflight_eval.train_utility`.",
        )
    return bundle


# ---------------------------------------------------------------- prediction
class UtilityPredictor:
    """Predicts E (cosine similarity of the cloud answer to the original, −1…1)."""

    def __init__(self, bundle: Mapping[str, Any], path: Path | None = None) -> None:
        self._bundle = bundle
        self._models: Mapping[str, Any] = bundle["models"]
        self.path = path

    @classmethod
    def load(cls, path: Path | None = None, *, prefer_user: bool = True) -> "UtilityPredictor":
        """The user's refitted bundle when present and readable, else the shipped one."""
        if path is None and prefer_user:
            user = user_bundle_path()
            if user.is_file():
                try:
                    return cls(load_bundle(user), user)
                except ModelUnavailableError as err:
                    log.warning("ignoring the refitted utility model: %s", err.message)
        path = path or shipped_bundle_path()
        return cls(load_bundle(path), path)

    @property
    def bundle(self) -> Mapping[str, Any]:
        return self._bundle

    @property
    def metrics(self) -> Mapping[str, Any]:
        return self._bundle.get("metrics", {})

    def has(self, name: str) -> bool:
        return name in self._models

    def predict_with(self, name: str, features: Features | Mapping[str, float]) -> float:
        return float(self.predict_many(name, [features])[0])

    def predict_many(self, name: str,
                     rows: Iterable[Features | Mapping[str, float]]) -> np.ndarray:
        entry = self._models[name]
        X = np.asarray([vector(r, entry["features"]) for r in rows], dtype=float)
        with _one_thread():
            return np.clip(entry["estimator"].predict(X), -1.0, 1.0)

    def predict_fast(self, features: Features | Mapping[str, float],
                     corrected: bool = False) -> float:
        """Instant prediction from features that need no model call."""
        name = "fast_corrected" if corrected and self.has("fast_corrected") else "fast"
        return self.predict_with(name, features)

    def predict(self, features: Features | Mapping[str, float],
                corrected: bool = False) -> float:
        """Refined prediction; falls back to the fast one if B, C or D are missing."""
        features = as_mapping(features)
        if any(_missing(features.get(n)) for n in REFINED_FEATURES[:3]):
            return self.predict_fast(features, corrected)
        name = "full_corrected" if corrected and self.has("full_corrected") else "full"
        return self.predict_with(name, features)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
