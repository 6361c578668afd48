"""What a provider's refit changed, measured on the user's own sends to it.

A refit (:meth:`~preflight.core.utility.flow.FlowLearner.refit`) is fitted on the shipped
rows and the user's pairs; the window says how many of them calibrate the provider and
what that changed. :func:`effect` scores, on those pairs, the instant prediction — the
value both faces show (:mod:`preflight.app.refinement`) — of the shipped prior and of the
refit *out of fold*: each pair predicted by a refit that never saw it (``FOLDS`` folds of
pairs, each fold's model fitted on the shipped rows and the other folds' pairs, with their
sample weight). Plain sends only (a grammar-repaired send has models of its own), and only
with :data:`MIN_PAIRS` of them: a handful of sends is no measurement.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from preflight.core.utility.features import FAST_MODEL_FEATURES
from preflight.core.utility.fitting import fit_model, predict_rows
from preflight.core.utility.predictor import cost_metrics

FOLDS = 5
MIN_PAIRS = 10


def effect(prior: Any, shipped: Sequence[Mapping[str, Any]],
           user_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``{"pairs", "failed_prior_pct", "failed_refit_pct"}`` on the plain ``user_rows``
    (the refit's rows built from the user's pairs: features, ``target``, ``weight``), or
    None with fewer than :data:`MIN_PAIRS` of them or no prior."""
    mine = [r for r in user_rows if r.get("variant", "plain") == "plain"]
    if prior is None or len(mine) < MIN_PAIRS:
        return None
    base = [r for r in shipped if r.get("variant", "plain") == "plain"]
    names = list(FAST_MODEL_FEATURES)
    refit = [math.nan] * len(mine)
    for k in range(FOLDS):
        held = [i for i in range(len(mine)) if i % FOLDS == k]
        if not held:
            continue
        rest = [r for i, r in enumerate(mine) if i % FOLDS != k]
        model = fit_model(base + rest, names)
        for i, value in zip(held, predict_rows(model, [mine[i] for i in held], names)):
            refit[i] = float(value)
    y = [float(r["target"]) for r in mine]
    shipped_pred = [prior.predict_fast(_features(r)) for r in mine]
    return {"pairs": len(mine),
            "failed_prior_pct": round(cost_metrics(y, shipped_pred).failed, 1),
            "failed_refit_pct": round(cost_metrics(y, refit).failed, 1)}


def _features(row: Mapping[str, Any]) -> dict[str, float]:
    return {k: v for k, v in row.items() if k not in ("target", "variant", "group", "weight")}
