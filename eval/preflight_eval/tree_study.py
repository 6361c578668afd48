"""Which tree settings the utility regressors should use, chosen out of fold — never on
the test split.

The settings of :data:`preflight.core.utility.fitting.TREE_PARAMS` were fixed when the
data set held 41 documents. This study scores a grid of ``HistGradientBoostingRegressor``
settings (learning rate, number of trees, depth, smallest leaf) on the plain TRAIN and
CALIBRATION rows only: five folds of whole documents, each row predicted by a model that
never read its document, repeated over ``--seeds`` fold assignments. For each model it
ranks the settings by their mean out-of-fold Failed (RMSE breaks ties) and prints the best
ones beside the shipped settings. The TEST documents are not read at all, so the
committed split stays an honest check of whatever is chosen here.

    python -m preflight_eval.tree_study --rows 1222 --seeds 3
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import BASELINE_FEATURES, FULL_MODEL_FEATURES
from preflight.core.utility.fitting import TREE_PARAMS, default_leaf, out_of_fold_residuals
from preflight.core.utility.predictor import cost_metrics
from preflight_eval.utility_data.rows import seeded_study_main

MODELS = {"ε-only baseline": BASELINE_FEATURES, "full": FULL_MODEL_FEATURES}
GRID: dict[str, Sequence[Any]] = {
    "learning_rate": (0.03, 0.05, 0.1),
    "max_iter": (100, 150, 300),
    "max_depth": (2, 3, 5),
    "min_samples_leaf": (8, 15, 30),
}
FOLDS = 5


def grid() -> list[dict[str, Any]]:
    keys = list(GRID)
    return [dict(zip(keys, values)) for values in itertools.product(*GRID.values())]


def shipped(n_rows: int) -> dict[str, Any]:
    """The settings the bundle uses today on the grid's axes (the others, such as the L2
    penalty, stay at :data:`TREE_PARAMS` for every candidate), its leaf rule spelled out."""
    return {key: TREE_PARAMS[key] for key in GRID if key in TREE_PARAMS} | {
        "min_samples_leaf": default_leaf(n_rows)}


def out_of_fold(rows: Sequence[dict[str, Any]], names: Sequence[str],
                params: dict[str, Any], seed: int) -> tuple[float, float]:
    """(Failed %, RMSE) of ``params`` over ``rows``, out of fold by document."""
    resid = out_of_fold_residuals(rows, names, seed, FOLDS, params=params)
    if resid is None:
        raise SystemExit("too few documents for the folds")
    y = np.asarray([r["target"] for r in rows], dtype=float)
    m = cost_metrics(y, y - resid)
    return m.failed, m.rmse


def study(rows: Sequence[dict[str, Any]], seeds: int = 3,
          candidates: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    rows = [r for r in rows if r.get("split") != "test"]     # the honest check stays unread
    candidates = list(candidates or grid())
    base = shipped(len(rows) * (FOLDS - 1) // FOLDS)
    if base not in candidates:
        candidates.append(base)
    out: dict[str, Any] = {"rows": len(rows), "documents": len({r["group"] for r in rows}),
                           "seeds": seeds, "shipped": base, "models": {}}
    for model, names in MODELS.items():
        scored = []
        for params in candidates:
            runs = [out_of_fold(rows, names, params, s) for s in range(seeds)]
            scored.append({"params": params,
                           "failed": [round(f, 2) for f, _r in runs],
                           "failed_mean": round(statistics.fmean(f for f, _r in runs), 2),
                           "rmse_mean": round(statistics.fmean(r for _f, r in runs), 4)})
        scored.sort(key=lambda s: (s["failed_mean"], s["rmse_mean"]))
        out["models"][model] = scored
    return out


def format_study(result: dict[str, Any], top: int = 5) -> str:
    def text(s: dict[str, Any]) -> str:
        p = s["params"]
        return (f"lr {p['learning_rate']:<5g} trees {p['max_iter']:<4} depth "
                f"{p['max_depth']} leaf {p['min_samples_leaf']:<3} Failed "
                f"{s['failed_mean']:5.1f} % ({' / '.join(f'{f:.1f}' for f in s['failed'])})"
                f" RMSE {s['rmse_mean']:.4f}")

    lines = [f"out of fold over {result['rows']} plain train + calibration rows, "
             f"{result['documents']} documents, {result['seeds']} fold assignments "
             f"(test documents not read):"]
    for model, scored in result["models"].items():
        rank = next(i for i, s in enumerate(scored) if s["params"] == result["shipped"])
        lines.append(f"  {model}:")
        lines += [f"    {i + 1:>2}. {text(s)}" for i, s in enumerate(scored[:top])]
        lines.append(f"    shipped (rank {rank + 1} of {len(scored)}): {text(scored[rank])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return seeded_study_main(argv, __doc__, study, format_study)


if __name__ == "__main__":
    raise SystemExit(main())
