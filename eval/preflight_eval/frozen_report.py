"""The frozen test set's reading, computed (:mod:`.read_frozen` ``--report`` runs it once).

For every frozen feature row: the shipped bundle's instant prediction (the fast model), its
full (refined) prediction, and the value the product shows for that setting kind
(:func:`preflight.app.refinement.verdict`: the instant one where the bundle's verdict or
the ε slider's rule withholds the refinement — for d_X kinds the window reads the
instant value from the document's non-decreasing curve, which this reading does not
rebuild: it scores the instant value at the row's own ε); beside them the ε-and-setting-
only model (:data:`~preflight.core.utility.features.BASELINE_FEATURES`) fitted on the
shipped bundle's training rows (train + calibration of its split, as ``eval_utility``
fits it) and the per-setting mean of the OTHER frozen documents: each document's rows
predicted by :func:`preflight_eval.eval_utility.setting_mean` of the rows of every other
document asked the same task. Failed = share of predictions off by more than 0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from preflight.core.utility.features import BASELINE_FEATURES
from preflight.core.utility.fitting import fit_model
from preflight.core.utility.predictor import cost_metrics
from preflight_eval.eval_utility import predict, setting_mean
from preflight_eval.refinement_verdict import by_setting_kind, reduction_interval, table
from preflight_eval.utility_data.rows import load
from preflight_eval.utility_data.shards import read_rows

FULL = "full (refined)"
INSTANT = "instant"
SHOWN = "shown"
BASELINE = "ε-only baseline"
SETTING_MEAN = "per-setting mean (other documents)"
MODELS = (FULL, INSTANT, SHOWN, BASELINE, SETTING_MEAN)
#: issue 47's acceptance on the untouched set
MAX_FAILED = 20.0
BELOW_BASELINE = 10.0
ABOVE_SETTING_MEAN = 5.0


def document_kind(row: Mapping[str, Any]) -> str:
    """judgment / manpage / readme (a manual's subkind); the corpus's kind otherwise."""
    return str(row.get("subkind") or row.get("doc_kind") or "") \
        if row.get("doc_kind") == "manual" else str(row.get("doc_kind") or "")


def frozen_rows(path: Path) -> list[dict[str, Any]]:
    """The feature rows as the regressor reads them (:func:`~.utility_data.rows.load`,
    with its drops), each with its task and kind of document."""
    if not Path(path).exists():
        return []
    raw = {(r["doc_id"], r["key"]): r for r in read_rows(Path(path))}
    out = []
    for r in load(Path(path)).rows:
        src = raw[(r["group"], r["key"])]
        out.append(dict(r, task=src["setting"].get("task") or "summarize",
                        document_kind=document_kind(src)))
    return out


def training_rows(path: Path, limit: int | None, split_version: int) -> list[dict[str, Any]]:
    """The rows the shipped bundle's held-out models were fitted on: train + calibration."""
    return [r for r in load(Path(path), limit, split_version).rows
            if r["split"] in ("train", "calibration")]


def leave_document_out_mean(rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Each row predicted by the per-setting mean of the rows of the other documents
    asked the same task (never its own document's)."""
    out = np.zeros(len(rows))
    for doc in {r["group"] for r in rows}:
        for task in {r["task"] for r in rows if r["group"] == doc}:
            idx = [i for i, r in enumerate(rows) if r["group"] == doc and r["task"] == task]
            others = [r for r in rows if r["group"] != doc and r["task"] == task]
            if not others:
                out[idx] = np.nan
                continue
            out[idx] = setting_mean(others, [rows[i] for i in idx])
    return out


def predictions(rows: Sequence[Mapping[str, Any]], predictor: Any,
                train: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, np.ndarray]:
    """Every model's prediction of every row (see the module)."""
    from preflight.app.refinement import verdict

    preds = {name: np.zeros(len(rows)) for name in MODELS}
    for i, r in enumerate(rows):
        corrected = r["variant"] == "corrected"
        preds[INSTANT][i] = predictor.estimate(r, refined=False, corrected=corrected,
                                               explain=False).value
        preds[FULL][i] = predictor.estimate(r, refined=True, corrected=corrected,
                                            explain=False).value
        show_refined, _why = verdict(predictor.metrics, r["kind"])
        preds[SHOWN][i] = preds[FULL][i] if show_refined else preds[INSTANT][i]
    for variant in {r["variant"] for r in rows}:
        idx = [i for i, r in enumerate(rows) if r["variant"] == variant]
        fit = [r for r in train if r["variant"] == variant]
        model = fit_model(fit, BASELINE_FEATURES, seed)
        preds[BASELINE][idx] = predict(model, [rows[i] for i in idx], BASELINE_FEATURES)
    preds[SETTING_MEAN] = leave_document_out_mean(rows)
    return preds


def _scores(y: np.ndarray, preds: Mapping[str, np.ndarray], mask: np.ndarray
            ) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": int(mask.sum())}
    for name, p in preds.items():
        ok = mask & ~np.isnan(p)
        m = cost_metrics(y[ok], p[ok])
        out[name] = {"n": m.n, "failed_pct": round(m.failed, 1), "rmse": round(m.rmse, 4),
                     "wasted_money_pct": round(m.wasted_money, 1),
                     "wasted_epsilon_pct": round(m.wasted_epsilon, 1)}
    return out


def reading(rows: Sequence[Mapping[str, Any]], predictor: Any,
            train: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, Any]:
    """The whole reading: overall and per kind of document, task and setting kind."""
    rows = list(rows)
    y = np.asarray([r["target"] for r in rows], dtype=float)
    preds = predictions(rows, predictor, train, seed)
    out: dict[str, Any] = {
        "rows": len(rows), "documents": len({r["group"] for r in rows}),
        "training_rows": sum(r["variant"] in {x["variant"] for x in rows} for r in train),
        "all": _scores(y, preds, np.ones(len(rows), bool)),
        "full_vs_baseline_ci": reduction_interval(rows, preds[BASELINE], preds[FULL],
                                                  seed=seed),
    }
    for field, name in (("document_kind", "by_document_kind"), ("task", "by_task"),
                        ("kind", "by_setting_kind")):
        values = np.asarray([str(r[field]) for r in rows])
        out[name] = {v: _scores(y, preds, values == v) for v in sorted(set(values))}
    # the per-setting mean beside them where every row has one (a single document: none)
    names = (BASELINE, INSTANT, FULL) + (() if np.isnan(preds[SETTING_MEAN]).any()
                                         else (SETTING_MEAN,))
    out["refined_vs_instant"] = by_setting_kind(rows, y, {n: preds[n] for n in names},
                                                INSTANT, FULL)
    out["predictions"] = [
        {"doc_id": r["group"], "key": r["key"], "realized": round(float(y[i]), 4),
         **{name: round(float(preds[name][i]), 4) for name in MODELS}}
        for i, r in enumerate(rows)]
    return out


def acceptance(result: Mapping[str, Any]) -> dict[str, Any]:
    """Issue 47's three checks on every frozen row, and the refinement per setting kind."""
    a = result["all"]
    full, base, mean = (a[n]["failed_pct"] for n in (FULL, BASELINE, SETTING_MEAN))
    checks = {
        f"full Failed ≤ {MAX_FAILED:g} %": (full <= MAX_FAILED, f"{full:.1f} %"),
        f"full Failed ≥ {BELOW_BASELINE:g} points below the ε-only baseline":
            (base - full >= BELOW_BASELINE, f"{base - full:+.1f} points ({base:.1f} → "
                                            f"{full:.1f} %)"),
        f"full Failed ≤ {ABOVE_SETTING_MEAN:g} points above the per-setting mean":
            (full - mean <= ABOVE_SETTING_MEAN, f"{full - mean:+.1f} points (mean "
                                                f"{mean:.1f} %)"),
    }
    refined = {kind: e["models"][FULL]["failed_pct"] <= e["models"][INSTANT]["failed_pct"]
               for kind, e in result["refined_vs_instant"].items()}
    return {"checks": {k: {"met": bool(ok), "value": v} for k, (ok, v) in checks.items()},
            "met": all(ok for ok, _v in checks.values()),
            "refined_not_worse_by_kind": refined}


def _table(title: str, groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = [f"| {title} | n | " + " | ".join(f"{n} Failed / RMSE" for n in MODELS) + " |",
           "|---|---|" + "---|" * len(MODELS)]
    for key, g in groups.items():
        out.append(f"| {key} | {g['rows']} | " + " | ".join(
            f"{g[n]['failed_pct']:.1f} % / {g[n]['rmse']:.3f}" for n in MODELS) + " |")
    return out


def format_report(result: Mapping[str, Any]) -> str:
    read = result.get("reading_of", {})
    lines = [f"Frozen test set, read {read.get('read_at', '?')} with bundle "
             f"{str(read.get('bundle', {}).get('sha256', '?'))[:12]} "
             f"({result['rows']} rows, {result['documents']} documents; ε-only baseline "
             f"fitted on {result['training_rows']} training rows)", "",
             *_table("rows", {"all": result["all"]}), "",
             *_table("kind of document", result["by_document_kind"]), "",
             *_table("task", result["by_task"]), "",
             *_table("setting kind", result["by_setting_kind"]), "",
             "Refined against instant, per setting kind (the last column: the verdict this "
             "reading's gain interval would give; the product follows its bundle's):", "",
             *table(result["refined_vs_instant"], [
                 n for n in (BASELINE, INSTANT, FULL, SETTING_MEAN)
                 if all(n in e["models"] for e in result["refined_vs_instant"].values())]),
             ""]
    ci = result["full_vs_baseline_ci"]
    lines.append(f"full vs ε-only baseline, 95 % interval over {result['documents']} "
                 f"resampled documents: {ci[0]:+.1f} to {ci[1]:+.1f} points")
    acc = result.get("acceptance")
    if acc:
        lines.append(f"Acceptance (issue 47): {'MET' if acc['met'] else 'NOT MET'}")
        lines += [f"- {name}: {'met' if c['met'] else 'NOT met'} ({c['value']})"
                  for name, c in acc["checks"].items()]
        lines.append("- refined not worse than instant: " + ", ".join(
            f"{k} {'yes' if ok else 'NO'}" for k, ok in acc["refined_not_worse_by_kind"].items()))
    return "\n".join(lines)
