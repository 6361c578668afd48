"""Fitting the utility bundle: monotone regressors, cross-conformal bands, the
unsanitized-utility models and the data-derived default minimum.

* **Monotone in ε.** Every model is a ``HistGradientBoostingRegressor`` with
  ``monotonic_cst``: +1 on the features that grow with ε (ε, log ε, B = sim(original,
  sanitized), D and D − C, share of PII left), −1 on those that fall with it (shares of
  tokens/characters changed, the SLM's perplexity on the sanitized text, the share of the
  text under d_X noise). For one document, policy and seed all of them move the same way
  as ε rises, so the fast model's prediction cannot fall with ε; the curve that is shown
  is made non-decreasing as well (:mod:`preflight.core.utility.curve`), because refined
  features are noisy and an excerpt can flip a tie.
* **Cross-conformal band.** Rows are split *by document* (``group``) into fit,
  calibration and test parts (or the caller passes them). The band's radius ``q`` is the
  ⌈(n+1)·level⌉-th smallest absolute *out-of-fold* residual over the fit and calibration
  documents: the model is refitted ``CV_FOLDS`` times, each time without one fold of
  whole documents, and every row's residual comes from the fit that never saw its
  document. ``prediction ± q`` then holds the realized utility with probability about
  ``level`` for a new document like these, and ``q`` rests on every non-test document
  rather than on the few calibration ones, so its coverage varies less from one set of
  new documents to the next (measured over redrawn document splits when it was chosen).
  The model scored on the test documents is fitted on fit + calibration, and its measured
  coverage there is stored. The shipped model and ``q`` then use every document, test
  included. With too few documents for the folds the calibration documents alone give
  ``q`` (plain split conformal).
* **Unsanitized utility.** A second family of models predicts, from document features
  only, the utility of sending the original text (see :func:`unsanitized_targets`).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from typing import Any, Mapping, Sequence

import numpy as np

from preflight.core.utility.features import (
    BASELINE_FEATURES,
    DOCUMENT_FEATURES,
    DOCUMENT_REFINED_FEATURES,
    FAST_MODEL_FEATURES,
    FULL_MODEL_FEATURES,
    vector,
)

BUNDLE_FORMAT = 2
MODEL_FEATURES: dict[str, tuple[str, ...]] = {
    "baseline": BASELINE_FEATURES,
    "fast": FAST_MODEL_FEATURES,
    "full": FULL_MODEL_FEATURES,
}
UNSANITIZED_MODELS: dict[str, tuple[str, ...]] = {
    "unsanitized": DOCUMENT_FEATURES,
    "unsanitized_full": DOCUMENT_FEATURES + DOCUMENT_REFINED_FEATURES,
}
MONOTONE: dict[str, int] = {
    "epsilon": 1, "log_epsilon": 1, "sim_sanitized": 1, "sim_slm_sanitized": 1,
    "slm_d_minus_c": 1, "frac_pii_left": 1,
    "frac_tokens_changed": -1, "frac_chars_changed": -1, "log_ppl_sanitized": -1,
    "log_ppl_ratio": -1, "dx_share": -1,
}
LEVEL = 0.8                      # nominal coverage of the interval
SPLIT = (0.70, 0.15, 0.15)       # fit / calibration / test share of the documents
NEAR_IDENTITY = 0.1              # old rows: ≤ 10 % of tokens changed counts as "unaltered"
KEEP_FRACTION = 0.8              # default minimum = this share of the typical unsanitized E
MIN_ROWS = 20
CV_FOLDS = 5                     # folds of documents for the out-of-fold residuals


# The trees' settings (min_samples_leaf aside, which follows the row count unless given).
TREE_PARAMS: dict[str, Any] = {
    "learning_rate": 0.05, "max_iter": 150, "max_depth": 3, "l2_regularization": 1.0,
}


def default_leaf(n_rows: int) -> int:
    """The smallest leaf when no caller sets one: a twelfth of the rows, from 3 to 15."""
    return max(3, min(15, n_rows // 12))


def make_regressor(n_rows: int, seed: int = 0, monotonic_cst: Sequence[int] | None = None,
                   min_leaf: int | None = None, params: Mapping[str, Any] | None = None
                   ) -> Any:
    """The paper's best regressor, kept shallow: a few hundred noisy rows from a few dozen
    documents do not support deep trees. ``params`` overrides :data:`TREE_PARAMS` (the
    study that chose them: :mod:`preflight_eval.tree_study`)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    settings = {**TREE_PARAMS, **(params or {})}
    if min_leaf:
        settings["min_samples_leaf"] = min_leaf
    settings.setdefault("min_samples_leaf", default_leaf(n_rows))
    return HistGradientBoostingRegressor(
        **settings,
        random_state=seed,
        monotonic_cst=None if monotonic_cst is None else list(monotonic_cst),
    )


def one_thread() -> Any:
    """Run scikit-learn's OpenMP code on one thread: the data are small, and on a busy
    2-core laptop extra threads only spin (measured: 56 s instead of 2 s for one fit)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="openmp")


def matrix(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> np.ndarray:
    return np.asarray([vector(r, names) for r in rows], dtype=float).reshape(len(rows),
                                                                             len(names))


def fit_model(rows: Sequence[Mapping[str, Any]], names: Sequence[str], seed: int = 0,
              target: str = "target", min_leaf: int | None = None,
              params: Mapping[str, Any] | None = None) -> Any:
    """Fit one monotone regressor on ``rows`` (feature dicts with a ``target`` key; an
    optional ``weight`` key is the row's sample weight, e.g. a user's own send weighing
    several shipped rows, :class:`~preflight.core.utility.flow.FlowLearner`)."""
    X = matrix(rows, names)
    y = np.asarray([float(r[target]) for r in rows], dtype=float)
    w = np.asarray([float(r.get("weight", 1.0)) for r in rows], dtype=float)
    # A column with no value at all (e.g. ε when only operators are present) breaks the
    # histogram binning; a constant column is simply never split on.
    X[:, np.isnan(X).all(axis=0)] = 0.0
    model = make_regressor(len(rows), seed, [MONOTONE.get(n, 0) for n in names], min_leaf,
                           params)
    with one_thread():
        model.fit(X, y, sample_weight=None if np.all(w == 1.0) else w)
    return model


def predict_rows(model: Any, rows: Sequence[Mapping[str, Any]], names: Sequence[str]
                 ) -> np.ndarray:
    with one_thread():
        return np.clip(model.predict(matrix(rows, names)), -1.0, 1.0)


# ---------------------------------------------------------------- splits
def group_split(rows: Sequence[Mapping[str, Any]], shares: tuple[float, float, float] = SPLIT
                ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]],
                           list[Mapping[str, Any]]]:
    """(fit, calibration, test) rows. A row's own ``split`` ("train", "calibration",
    "test": the data set's document split) wins; the other documents (``group``) are
    ordered by a hash of their id and cut in the ``shares`` proportions, so one document
    never straddles two parts and the parts have the stated sizes even for few documents."""
    parts: dict[str, list[Mapping[str, Any]]] = {"train": [], "calibration": [], "test": []}
    loose: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("split") in parts:
            parts[r["split"]].append(r)
        else:
            loose.setdefault(str(r.get("group", "")), []).append(r)
    docs = sorted(loose, key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    n = len(docs)
    n_test = round(n * shares[2]) if n >= 3 else 0
    n_cal = round(n * shares[1]) if n >= 3 else 0
    if n >= 3:
        n_test, n_cal = max(1, n_test), max(1, n_cal)
    for i, doc in enumerate(docs):
        split = "test" if i < n_test else "calibration" if i < n_test + n_cal else "train"
        parts[split] += loose[doc]
    return parts["train"], parts["calibration"], parts["test"]


def _folds(rows: Sequence[Mapping[str, Any]], k: int, seed: int) -> list[int] | None:
    """Each row's fold: documents ordered by a hash of their id, dealt round-robin; None
    when there are fewer than two documents per fold."""
    docs = sorted({str(r.get("group", "")) for r in rows},
                  key=lambda g: hashlib.sha256(f"{seed}|{g}".encode()).hexdigest())
    if len(docs) < 2 * k:
        return None
    fold = {g: i % k for i, g in enumerate(docs)}
    return [fold[str(r.get("group", ""))] for r in rows]


def out_of_fold_residuals(rows: Sequence[Mapping[str, Any]], names: Sequence[str],
                          seed: int = 0, folds: int = CV_FOLDS, min_leaf: int | None = None,
                          params: Mapping[str, Any] | None = None) -> np.ndarray | None:
    """Each row's residual (realized − predicted) from a model fitted without its fold of
    documents; None when the rows hold fewer than two documents per fold."""
    fold = _folds(rows, folds, seed)
    if fold is None:
        return None
    out = np.zeros(len(rows))
    for k in range(folds):
        inside = [r for r, f in zip(rows, fold) if f != k]
        idx = [i for i, f in enumerate(fold) if f == k]
        out[idx] = _residuals(fit_model(inside, names, seed, min_leaf=min_leaf, params=params),
                              [rows[i] for i in idx], names)
    return out


def conformal_quantile(residuals: Sequence[float], level: float) -> float:
    """The split-conformal radius: the ⌈(n+1)·level⌉-th smallest absolute residual (the
    whole similarity scale when there are too few residuals for that level)."""
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    k = math.ceil((len(r) + 1) * level)
    return float(r[k - 1]) if 0 < k <= len(r) else 2.0


# ---------------------------------------------------------------- unsanitized
def unsanitized_targets(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per document, the realized utility of sending it unaltered.

    Rows of the new data set carry ``target_original`` (E of the cloud answer on the
    unsanitized text). Older rows do not: there it is the mean E of the document's plain
    d_X rows that changed at most ``NEAR_IDENTITY`` of the tokens (the highest ε tried),
    or failing that E of its highest-ε plain d_X row.
    """
    by_doc: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(str(r.get("group", "")), []).append(r)
    out: dict[str, float] = {}
    for doc, rs in by_doc.items():
        given = [float(r["target_original"]) for r in rs
                 if _finite(r.get("target_original"))]
        if given:
            out[doc] = statistics.fmean(given)
            continue
        dx = [r for r in rs if r.get("variant", "plain") == "plain"
              and _finite(r.get("epsilon")) and _finite(r.get("frac_tokens_changed"))]
        if not dx:
            continue
        near = [float(r["target"]) for r in dx
                if float(r["frac_tokens_changed"]) <= NEAR_IDENTITY]
        out[doc] = statistics.fmean(near) if near else \
            float(max(dx, key=lambda r: float(r["epsilon"]))["target"])
    return out


def document_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per document: its document features and its unsanitized utility."""
    targets = unsanitized_targets(rows)
    out = []
    for doc, target in targets.items():
        rs = [r for r in rows if str(r.get("group", "")) == doc
              and r.get("variant", "plain") == "plain"] or \
            [r for r in rows if str(r.get("group", "")) == doc]
        row: dict[str, Any] = {"group": doc, "target": target}
        for name in DOCUMENT_FEATURES + DOCUMENT_REFINED_FEATURES:
            vals = [_document_value(r, name) for r in rs]
            vals = [v for v in vals if _finite(v)]
            row[name] = statistics.fmean(vals) if vals else math.nan
        out.append(row)
    return out


def _document_value(row: Mapping[str, Any], name: str) -> float:
    value = row.get(name)
    if name == "log_ppl_original" and not _finite(value):
        s, ratio = row.get("log_ppl_sanitized"), row.get("log_ppl_ratio")
        if _finite(s) and _finite(ratio):
            return float(s) - float(ratio)
    return float(value) if _finite(value) else math.nan


def _finite(value: Any) -> bool:
    try:
        return value is not None and value != "" and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------- one model, calibrated
def fit_calibrated(fit: Sequence[Mapping[str, Any]], cal: Sequence[Mapping[str, Any]],
                   test: Sequence[Mapping[str, Any]], names: Sequence[str], *, seed: int,
                   level: float, per_document: bool = False) -> dict[str, Any]:
    """A model entry: the estimator, its medians (for explanations), its band and, when
    test rows exist, the band's coverage measured on them by a model and radius that never
    read a test document.
    ``per_document``: one row per document (a few dozen rows), so every leaf must hold a
    quarter of them — smaller leaves memorized single documents."""
    def leaf(rows: Sequence[Mapping[str, Any]]) -> int | None:
        return max(5, len(rows) // 4) if per_document else None

    names = list(names)
    entry: dict[str, Any] = {"features": names,
                             "monotonic": {n: MONOTONE[n] for n in names if n in MONOTONE}}
    if test:
        trial, _rows, band = calibrated(fit, cal, names, seed, level, leaf)
        if band is not None:
            inside = np.abs(_residuals(trial, test, names)) <= band["radius"]
            entry["coverage"] = {"level": level, "radius": round(band["radius"], 4),
                                 "method": band["method"], "test_rows": len(test),
                                 "covered": round(float(inside.mean()), 4)}
    estimator, rows, band = calibrated(list(fit) + list(test), cal, names, seed, level, leaf)
    entry["estimator"] = estimator
    X = matrix(rows, names)
    entry["medians"] = {n: (float(np.nanmedian(X[:, i])) if np.isfinite(X[:, i]).any()
                            else math.nan) for i, n in enumerate(names)}
    if band is not None:
        entry["interval"] = {"level": level, **band}
    return entry


def calibrated(fit: Sequence[Mapping[str, Any]], cal: Sequence[Mapping[str, Any]],
               names: Sequence[str], seed: int, level: float,
               leaf: Any = lambda rows: None, cross: bool = True,
               ) -> tuple[Any, list[Mapping[str, Any]], dict[str, Any] | None]:
    """(model, the rows it was fitted on, its band). Cross-conformal over fit + cal when
    they hold enough documents for the folds (and ``cross``); else a model of ``fit`` with
    the split-conformal radius of the ``cal`` rows (no band without them)."""
    rows = list(fit) + list(cal)
    oof = out_of_fold_residuals(rows, names, seed, min_leaf=leaf(rows)) if cross else None
    if oof is not None:
        return fit_model(rows, names, seed, min_leaf=leaf(rows)), rows, {
            "method": "cross", "radius": conformal_quantile(oof, level),
            "calibration_rows": len(rows), "folds": CV_FOLDS}
    model = fit_model(fit, names, seed, min_leaf=leaf(fit))
    if not cal:
        return model, list(fit), None
    return model, list(fit), {"method": "split", "calibration_rows": len(cal),
                              "radius": conformal_quantile(_residuals(model, cal, names),
                                                           level)}


def _residuals(model: Any, rows: Sequence[Mapping[str, Any]], names: Sequence[str]
               ) -> np.ndarray:
    y = np.asarray([float(r["target"]) for r in rows], dtype=float)
    return y - predict_rows(model, rows, names)


def fit_models(
    rows: Sequence[Mapping[str, Any]], *, calibration: Sequence[Mapping[str, Any]] | None,
    test: Sequence[Mapping[str, Any]] | None, seed: int, level: float, measure: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every model the rows allow, and the coverage table for the bundle's metrics.
    Without a given split, ``measure`` holds test documents out to measure the band's
    coverage on; ``measure=False`` fits every row and measures nothing (a refit on the
    user's own sends: half the model fits, and no card reads the coverage)."""
    whole = (list(rows), [], [])
    if calibration is None and test is None:
        fit, calibration, test = group_split(rows) if measure else whole
    else:
        fit, calibration, test = list(rows), list(calibration or ()), list(test or ())
    models: dict[str, Any] = {}
    coverage: dict[str, Any] = {}
    for variant, suffix in (("plain", ""), ("corrected", "_corrected")):
        def part(rs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
            return [r for r in rs if r.get("variant", "plain") == variant]

        f, c, t = part(fit), part(calibration), part(test)
        if len(f) + len(t) < MIN_ROWS:
            continue
        for name, feats in MODEL_FEATURES.items():
            entry = fit_calibrated(f, c, t, feats, seed=seed, level=level)
            models[name + suffix] = entry
            if "coverage" in entry:
                coverage[name + suffix] = entry["coverage"]
    if "fast" not in models:
        raise ValueError(f"need at least {MIN_ROWS} plain rows to fit the utility regressor")
    docs = document_rows(list(fit) + list(calibration) + list(test))
    if len(docs) >= 3:
        doc_fit, doc_cal, doc_test = group_split(docs) if measure else (docs, [], [])
        for name, feats in UNSANITIZED_MODELS.items():
            # a document feature no row has (rows written before it existed) is left out,
            # so the model does not wait for a value its training never saw
            feats = tuple(n for n in feats if any(_finite(d.get(n)) for d in docs)) or feats
            models[name] = fit_calibrated(doc_fit, doc_cal, doc_test, feats, seed=seed,
                                          level=level, per_document=True)
    return models, {"conformal": coverage, "unsanitized_documents": len(docs)}


def default_min_utility(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The default minimum utility, from the data: ``KEEP_FRACTION`` of the median
    unsanitized utility over the training documents (the realized one, see
    :func:`unsanitized_targets`)."""
    targets = list(unsanitized_targets(rows).values())
    if not targets:
        return {}
    median = statistics.median(targets)
    return {
        "min_utility": round(KEEP_FRACTION * median, 2),
        "keep_fraction": KEEP_FRACTION,
        "unsanitized_median": round(median, 4),
        "documents": len(targets),
        "derivation": (f"{KEEP_FRACTION:.0%} of the median utility of sending the "
                       f"unsanitized text ({median:.3f}, over {len(targets)} training "
                       "documents)"),
    }
