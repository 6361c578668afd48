"""Evaluate the utility regressor on held-out DOCUMENTS (Table-2-style report).

Rows come from ``utility_dataset.py``. Every model is scored by 5-fold GroupKFold with
the document as the group, so no text is in both the training and the test part (the
paper's reference code split by row and leaked the same document into both). Reported
per model: R², RMSE, Wasted $ (% predicted > realized + 0.1), Wasted ε (% predicted <
realized − 0.1) and Failed (their sum), without and with the SLM's grammar correction.

    python -m preflight_eval.eval_utility                      # eval-data/utility/rows.jsonl
    python -m preflight_eval.eval_utility --rows PATH --json report.json
    python -m preflight_eval.eval_utility --rows resources/utility/training_features.csv

Acceptance (issue 4): the full model makes ≥ 5 points fewer Failed predictions than the
ε-only baseline on held-out documents (plain variant, all methods).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import (
    ALL_FEATURES,
    BASELINE_FEATURES,
    FAST_MODEL_FEATURES,
    METHODS,
    PAPER_FEATURES,
)
from preflight.core.utility.predictor import _one_thread, cost_metrics, fit_model
from preflight_eval.utility_common import read_jsonl, training_rows

DEFAULT_ROWS = Path("eval-data/utility/rows.jsonl")

CONFIGS: dict[str, tuple[str, ...]] = {
    "A (ε + method): baseline": BASELINE_FEATURES,
    "ABCD (paper)": PAPER_FEATURES + tuple(f"method_{m}" for m in METHODS),
    "fast (no model call)": FAST_MODEL_FEATURES,
    "full (ABCD + extras)": ALL_FEATURES,
}
BASELINE = "A (ε + method): baseline"
FULL = "full (ABCD + extras)"
ACCEPT_POINTS = 5.0


def out_of_fold(rows: Sequence[dict[str, Any]], names: Sequence[str], folds: int,
                seed: int = 0, split_seed: int | None = None) -> np.ndarray:
    """Predictions for every row from a model that never saw that row's document.

    ``split_seed`` shuffles which documents share a fold (None: sklearn's default split).
    """
    from sklearn.model_selection import GroupKFold

    groups = np.asarray([r["group"] for r in rows])
    n_groups = len(set(groups.tolist()))
    k = max(2, min(folds, n_groups))
    pred = np.zeros(len(rows))
    splitter = (GroupKFold(n_splits=k) if split_seed is None
                else GroupKFold(n_splits=k, shuffle=True, random_state=split_seed))
    for train_idx, test_idx in splitter.split(rows, groups=groups):
        model = fit_model([rows[i] for i in train_idx], names, seed)
        X = np.asarray([[rows[i].get(n, np.nan) for n in names] for i in test_idx], dtype=float)
        with _one_thread():
            pred[test_idx] = np.clip(model.predict(X), -1.0, 1.0)
    return pred


def evaluate(raw_rows: list[dict[str, Any]], folds: int = 5, repeats: int = 5) -> dict[str, Any]:
    """Cross-validated metrics per variant, configuration and method subset.

    The table uses sklearn's default GroupKFold; ``repeats`` more splits with shuffled
    document-to-fold assignment show how much the Failed gap depends on the split.
    """
    rows = training_rows(raw_rows)
    report: dict[str, Any] = {"folds": folds, "repeats": repeats, "variants": {}}
    for variant in ("plain", "corrected"):
        subset = [r for r in rows if r["variant"] == variant]
        if len(subset) < 20 or len({r["group"] for r in subset}) < 4:
            continue
        y = np.asarray([r["target"] for r in subset])
        is_dx = np.asarray([r["method"] == "dx" for r in subset])
        entry: dict[str, Any] = {
            "rows": len(subset), "documents": len({r["group"] for r in subset}),
            "dx_rows": int(is_dx.sum()), "target_mean": round(float(y.mean()), 4),
            "models": {},
        }
        for name, feats in CONFIGS.items():
            pred = out_of_fold(subset, feats, folds)
            entry["models"][name] = {
                "all": cost_metrics(y, pred).to_json(),
                "dx_only": cost_metrics(y[is_dx], pred[is_dx]).to_json(),
            }
        base = entry["models"][BASELINE]["all"]["failed_pct"]
        full = entry["models"][FULL]["all"]["failed_pct"]
        entry["failed_reduction_points"] = round(base - full, 2)
        gaps = []
        for r in range(repeats):
            pb = out_of_fold(subset, CONFIGS[BASELINE], folds, split_seed=r)
            pf = out_of_fold(subset, CONFIGS[FULL], folds, split_seed=r)
            gaps.append(cost_metrics(y, pb).failed - cost_metrics(y, pf).failed)
        if gaps:
            entry["failed_reduction_shuffled_splits"] = {
                "mean": round(float(np.mean(gaps)), 2), "min": round(float(np.min(gaps)), 2),
                "max": round(float(np.max(gaps)), 2), "splits": repeats,
            }
        report["variants"][variant] = entry
    plain = report["variants"].get("plain")
    report["acceptance"] = {
        "rule": f"full model Failed ≤ baseline Failed − {ACCEPT_POINTS:g} points "
                "(held-out documents, plain variant)",
        "met": bool(plain and plain["failed_reduction_points"] >= ACCEPT_POINTS),
        "reduction_points": plain["failed_reduction_points"] if plain else None,
    }
    return report


def format_report(report: dict[str, Any]) -> str:
    lines = []
    head = f"{'variant':<10} {'features':<26} {'subset':<8} {'n':>5} {'R²':>6} {'RMSE':>6} " \
           f"{'Wasted $':>9} {'Wasted ε':>9} {'Failed':>7}"
    lines.append(head)
    lines.append("-" * len(head))
    for variant, entry in report["variants"].items():
        for name, res in entry["models"].items():
            for subset in ("all", "dx_only"):
                m = res[subset]
                lines.append(
                    f"{variant:<10} {name:<26} {subset:<8} {m['n']:>5} {m['r2']:>6.3f} "
                    f"{m['rmse']:>6.3f} {m['wasted_money_pct']:>8.1f}% "
                    f"{m['wasted_epsilon_pct']:>8.1f}% {m['failed_pct']:>6.1f}%"
                )
        lines.append(
            f"{variant}: {entry['rows']} rows, {entry['documents']} documents, "
            f"Failed reduced by {entry['failed_reduction_points']:.1f} points vs baseline"
        )
        shuf = entry.get("failed_reduction_shuffled_splits")
        if shuf:
            lines.append(
                f"{variant}: over {shuf['splits']} shuffled document splits the reduction is "
                f"{shuf['mean']:.1f} points on average (min {shuf['min']:.1f}, max {shuf['max']:.1f})"
            )
        lines.append("")
    acc = report["acceptance"]
    lines.append(f"acceptance ({acc['rule']}): {'MET' if acc['met'] else 'NOT MET'} "
                 f"({acc['reduction_points']} points)")
    return "\n".join(lines)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Builder rows (JSONL) or the shipped ``training_features.csv`` (numbers only), so the
    acceptance check can be rerun without regenerating the data set."""
    if path.suffix != ".csv":
        return read_jsonl(path)
    import csv
    import math

    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            feats = {n: (float(rec[n]) if rec.get(n) not in ("", None) else math.nan)
                     for n in ALL_FEATURES}
            out.append({"features": feats, "target": float(rec["target"]),
                        "variant": rec["variant"], "doc_id": rec["group"], "method": rec["method"]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Document-level evaluation of the utility regressor")
    ap.add_argument("--rows", default=str(DEFAULT_ROWS))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5, help="extra shuffled document splits")
    ap.add_argument("--json", default=None, help="also write the report as JSON here")
    args = ap.parse_args(argv)
    raw = read_rows(Path(args.rows))
    if not raw:
        print(f"no rows in {args.rows}; build them with python -m preflight_eval.utility_dataset",
              file=sys.stderr)
        return 2
    report = evaluate(raw, args.folds, args.repeats)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
