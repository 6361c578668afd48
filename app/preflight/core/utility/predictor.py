"""The regressor that predicts the cloud answer's utility E from the features.

A *bundle* (one joblib file) holds several fitted scikit-learn
``HistGradientBoostingRegressor`` models, each with the feature names it reads:

* ``baseline`` — ε and the method indicator only (the paper's "feature A" row),
* ``fast`` — every feature that needs no model call (instant slider feedback),
* ``full`` — fast + B, C, D + SLM perplexity (after the SLM has run),
* ``fast_corrected`` / ``full_corrected`` — the same when the SLM first repairs the
  sanitized text's grammar and both models then work on the repaired text.

Each assessor SLM has a shipped bundle under ``resources/utility/`` (see
:func:`shipped_bundle_path`); a bundle refitted on the user's own
history (see :mod:`preflight.core.utility.flow`) lives in the data folder and wins.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from preflight.core import paths
from preflight.core.fsutil import atomic_write_bytes, atomic_write_text, open_regular
from preflight.core.utility.defaults import DEFAULTS_NAME
from preflight.core.errors import ModelUnavailableError
from preflight.core.utility.features import (
    REFINED_FEATURES,
    Features,
    as_mapping,
    vector,
)
from preflight.core.utility.slm_roles import BASE_SLM_ROLE, DEFAULT_SLM_ROLE, shipped_folder
from preflight.core.utility.fitting import (
    BUNDLE_FORMAT,
    LEVEL,
    MODEL_FEATURES,
    default_min_utility,
    fit_models,
    make_regressor,
    one_thread,
)

log = logging.getLogger(__name__)
_one_thread = one_thread        # the name the evaluation scripts import

__all__ = ["BUNDLE_FORMAT", "MODEL_FEATURES", "make_regressor", "fit_model", "fit_bundle",
           "load_bundle", "save_bundle", "UtilityPredictor", "Estimate", "Driver"]

BUNDLE_NAME = "regressor.joblib"
READABLE_FORMATS = (1, BUNDLE_FORMAT)   # format 1: no intervals, medians or unsanitized model
WASTE_MARGIN = 0.1   # the paper's tolerance on the similarity scale
DRIVERS = 3          # features named per prediction
DRIVER_MIN_EFFECT = 0.005


def shipped_bundle_path(slm_role: str = DEFAULT_SLM_ROLE) -> Path:
    """The shipped bundle for the assessor's SLM ``slm_role``: features C, D and the
    perplexities come from that SLM, so each SLM has a regressor of its own — SmolLM2's
    (:data:`BASE_SLM_ROLE`) in ``resources/utility/``, another's in a sub-folder named
    by its role."""
    return paths.resource_path(*shipped_folder(slm_role), BUNDLE_NAME)


def user_bundle_path() -> Path:
    return paths.data_dir() / "utility" / BUNDLE_NAME


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
    """Fit one (monotone) regressor on ``rows`` (feature dicts with a ``target`` key)."""
    from preflight.core.utility.fitting import fit_model as _fit

    return _fit(rows, names, seed)


def fit_bundle(
    rows: Sequence[Mapping[str, Any]],
    *,
    metrics: Mapping[str, Any] | None = None,
    source: str = "",
    seed: int = 0,
    calibration: Sequence[Mapping[str, Any]] | None = None,
    test: Sequence[Mapping[str, Any]] | None = None,
    level: float = LEVEL,
    measure: bool = True,
) -> dict[str, Any]:
    """Fit every model the rows allow. Rows carry ``variant`` "plain" or "corrected" and
    ``group`` (the document id).

    ``test`` rows (other documents) measure the conformal band's coverage; without a
    given split ``rows`` are split by document
    (:func:`preflight.core.utility.fitting.group_split`), or, with ``measure=False``,
    all fitted on. ``level``: nominal coverage.
    """
    import sklearn

    models, extra = fit_models(rows, calibration=calibration, test=test, seed=seed,
                               level=level, measure=measure)
    all_rows = [*rows, *(calibration or ()), *(test or ())]
    merged = dict(metrics or {})
    merged.update(extra)
    return {
        "format": BUNDLE_FORMAT,
        "sklearn_version": sklearn.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "n_rows": len(all_rows),
        "source": source,
        "level": level,
        "metrics": merged,
        "defaults": default_min_utility(all_rows),
        "models": models,
    }


def save_bundle(bundle: Mapping[str, Any], path: Path) -> None:
    import joblib

    buf = io.BytesIO()      # in memory, then atomically: no fixed temporary name to follow
    joblib.dump(dict(bundle), buf, compress=3)
    atomic_write_bytes(path, buf.getvalue())
    if bundle.get("defaults"):
        atomic_write_text(path.with_name(DEFAULTS_NAME),
                          json.dumps(bundle["defaults"], indent=2) + "\n")


def load_bundle(path: Path) -> dict[str, Any]:
    import joblib
    import sklearn

    if not path.is_file():
        raise ModelUnavailableError(
            f"The utility regressor is missing: {path}.",
            "Reinstall Preflight, or rebuild it with `python -m preflight_eval.train_utility`.",
        )
    try:
        # A shipped bundle may be a link (an app bundle's resources); a FIFO or device
        # is refused on the descriptor instead of blocking the unpickler.
        with open_regular(path, "rb", follow_symlinks=True) as fh:
            bundle = joblib.load(fh)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means the same thing
        raise ModelUnavailableError(
            f"The utility regressor {path.name} could not be read ({type(exc).__name__}).",
            "Reinstall Preflight, or rebuild it with `python -m preflight_eval.train_utility`.",
        ) from None
    if not isinstance(bundle, dict) or bundle.get("format") not in READABLE_FORMATS:
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
@dataclass(frozen=True)
class Driver:
    """One feature behind a prediction: its value, the training median, and how much the
    prediction moves when the feature is set to that median (``effect`` > 0: this
    feature raised the prediction)."""

    feature: str
    value: float
    median: float
    effect: float

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "value": round(self.value, 4),
                "median": round(self.median, 4), "effect": round(self.effect, 4)}


@dataclass(frozen=True)
class Estimate:
    """A prediction and what it means: the band, what sending the unsanitized text
    would be expected to give, and the features that drove it."""

    value: float
    model: str
    low: float | None = None
    high: float | None = None
    level: float | None = None
    unsanitized: float | None = None
    drivers: tuple[Driver, ...] = ()

    @property
    def kept_share(self) -> float | None:
        """The prediction as a share of the unsanitized expectation (None if unknown)."""
        if self.unsanitized is None or self.unsanitized <= 0:
            return None
        return self.value / self.unsanitized


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

    @property
    def slm_role(self) -> str:
        """The assessor SLM whose features the bundle learned from (manifest role)."""
        return str(self._bundle.get("slm_role", BASE_SLM_ROLE))

    @property
    def defaults(self) -> Mapping[str, Any]:
        """The data-derived defaults (``min_utility`` and how it was derived)."""
        return self._bundle.get("defaults", {})

    def has(self, name: str) -> bool:
        return name in self._models

    def reads(self, feature: str) -> bool:
        """Whether any model of the bundle reads ``feature`` (the assessor skips the work
        behind a feature nothing reads)."""
        return any(feature in entry["features"] for entry in self._models.values())

    def predict_with(self, name: str, features: Features | Mapping[str, float]) -> float:
        return float(self.predict_many(name, [features])[0])

    def predict_many(self, name: str,
                     rows: Iterable[Features | Mapping[str, float]]) -> np.ndarray:
        entry = self._models[name]
        X = np.asarray([vector(r, entry["features"]) for r in rows], dtype=float)
        return self._predict_matrix(entry, X)

    @staticmethod
    def _predict_matrix(entry: Mapping[str, Any], X: np.ndarray) -> np.ndarray:
        with one_thread():
            return np.clip(entry["estimator"].predict(X), -1.0, 1.0)

    def model_name(self, features: Features | Mapping[str, float], refined: bool = True,
                   corrected: bool = False) -> str:
        """The model that answers: ``full`` once B, C and D exist, else ``fast``."""
        features = as_mapping(features)
        base = "full" if refined and not any(
            _missing(features.get(n)) for n in REFINED_FEATURES[:3]) else "fast"
        return base + "_corrected" if corrected and self.has(base + "_corrected") else base

    def predict_fast(self, features: Features | Mapping[str, float],
                     corrected: bool = False) -> float:
        """Instant prediction from features that need no model call."""
        return self.predict_with(self.model_name(features, False, corrected), features)

    def predict(self, features: Features | Mapping[str, float],
                corrected: bool = False) -> float:
        """Refined prediction; falls back to the fast one if B, C or D are missing."""
        return self.predict_with(self.model_name(features, True, corrected), features)

    def interval(self, name: str, value: float) -> tuple[float, float, float] | None:
        """(low, high, level) of the conformal band around ``value`` from model ``name``
        (None for a bundle without calibration)."""
        band = self._models[name].get("interval")
        if not band:
            return None
        q = float(band["radius"])
        return max(-1.0, value - q), min(1.0, value + q), float(band["level"])

    def unsanitized(self, features: Features | Mapping[str, float]) -> float | None:
        """Expected utility of sending the original text, from its document features
        (with the SLM's C and perplexity when they exist)."""
        features = as_mapping(features)
        for name in ("unsanitized_full", "unsanitized"):
            if not self.has(name):
                continue
            needed = self._models[name]["features"]
            if all(not _missing(features.get(n)) for n in needed):
                return self.predict_with(name, features)
        return None

    def drivers(self, name: str, features: Features | Mapping[str, float],
                limit: int = DRIVERS) -> tuple[Driver, ...]:
        """The features that moved this prediction most: each one in turn is set to its
        training median and the change of the prediction is its effect."""
        entry = self._models[name]
        medians: Mapping[str, float] = entry.get("medians") or {}
        names = entry["features"]
        x = np.asarray(vector(features, names), dtype=float)
        swaps, rows = [], [x]
        for i, n in enumerate(names):
            med = medians.get(n, math.nan)
            if math.isfinite(x[i]) and math.isfinite(med) and x[i] != med:
                row = x.copy()
                row[i] = med
                swaps.append((n, float(x[i]), float(med)))
                rows.append(row)
        if not swaps:
            return ()
        preds = self._predict_matrix(entry, np.vstack(rows))
        found = [Driver(n, v, m, float(preds[0] - p))
                 for (n, v, m), p in zip(swaps, preds[1:])]
        found = [d for d in found if abs(d.effect) >= DRIVER_MIN_EFFECT]
        found.sort(key=lambda d: -abs(d.effect))
        return tuple(found[:limit])

    def estimate(self, features: Features | Mapping[str, float], *, refined: bool = True,
                 corrected: bool = False, explain: bool = True) -> Estimate:
        """The prediction with its band; with ``explain`` also the unsanitized
        expectation and the drivers."""
        name = self.model_name(features, refined, corrected)
        value = self.predict_with(name, features)
        band = self.interval(name, value)
        low, high, level = band if band else (None, None, None)
        if not explain:
            return Estimate(value, name, low, high, level)
        return Estimate(value, name, low, high, level, self.unsanitized(features),
                        self.drivers(name, features))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
