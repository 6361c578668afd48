"""The utility regressor on the committed held-out documents (Table-2-style report).

For every committed features file ``data/utility/features-<stand-in>-<slm>.jsonl.gz``
(one per cloud stand-in × local SLM, :mod:`preflight_eval.utility_data.rows`), each model
is fitted on the TRAIN and CALIBRATION documents of ``split.json`` and scored on its
TEST documents — the split is by document, so no text is on both sides (the calibration
documents were held out of the fit for split conformal; the cross-conformal band needs
no such set, so since session 7 they are fitted on). Reported per model, without and with
the SLM's grammar correction: R², RMSE, Wasted $ (% predicted > realized + 0.1: sent, but
the answer is poor), Wasted ε (% predicted < realized − 0.1: privacy given up for
nothing) and Failed (their sum). Two references beside the models: the ε-only baseline
(the paper's feature A with the method indicator) and "setting mean" (each setting kind's
mean realized utility over the fitted documents, the bar any model must clear).
The interval line gives the band's coverage on the test documents: the product's
cross-conformal band (radius from the out-of-fold residuals over the TRAIN and
CALIBRATION documents), and split conformal (CALIBRATION documents alone) beside it.
When a stand-in has features from several local SLMs, they are compared on the sends
every file holds, out of fold over the TRAIN and CALIBRATION documents only: the choice
of the default SLM never reads a test document.

    python -m preflight_eval.eval_utility                 # every features file, printed
    python -m preflight_eval.eval_utility --json report.json
    python -m preflight_eval.eval_utility --rows 612      # the first 612 rows: a card's snapshot

Acceptance (issue 13, Qwen2.5-Coder-1.5B as the cloud): the full model's Failed is at
least 15 points below the ε-only baseline, and at most 35 %.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import (
    ALL_FEATURES,
    BASELINE_FEATURES,
    FAST_MODEL_FEATURES,
    FULL_MODEL_FEATURES,
    METHODS,
    PAPER_FEATURES,
    SANITIZED_PERPLEXITY,
)
from preflight.core.utility.fitting import calibrated, fit_model, predict_rows
from preflight.core.utility.predictor import cost_metrics
from preflight_eval.refinement_verdict import by_setting_kind, reduction_interval, table
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.rows import (
    DataSet, answered_test_documents, feature_files, load,
)

CONFIGS: dict[str, tuple[str, ...]] = {
    "ε-only baseline (A + method)": BASELINE_FEATURES,
    "ABCD (paper)": PAPER_FEATURES + tuple(f"method_{m}" for m in METHODS),
    "fast (no model call)": FAST_MODEL_FEATURES,
    "full (ABCD + extras)": FULL_MODEL_FEATURES,
    # what the full model read before session 12: the same + the sanitized text's
    # perplexity (see preflight.core.utility.features.SANITIZED_PERPLEXITY)
    "full + sanitized-text perplexity": ALL_FEATURES,
}
BASELINE = "ε-only baseline (A + method)"
FAST = "fast (no model call)"
FULL = "full (ABCD + extras)"
SETTING_MEAN = "setting mean (reference)"
ACCEPT_POINTS = 15.0
ACCEPT_MAX_FAILED = 35.0
INTERVAL_LEVEL = 0.8
CV_FOLDS = 5
MIN_ROWS = 20


def scored_configs(rows: Sequence[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """The models ``rows`` can score: those that read the sanitized text's perplexity
    only when every row has it (a pass run with ``--skip-unread`` leaves it out)."""
    if all(r.get("sanitized_perplexity", True) for r in rows):
        return dict(CONFIGS)
    return {name: feats for name, feats in CONFIGS.items()
            if not set(feats) & set(SANITIZED_PERPLEXITY)}


def predict(model: Any, rows: Sequence[dict[str, Any]], names: Sequence[str]) -> np.ndarray:
    """The product's own prediction path (missing policy columns derived as it does)."""
    return predict_rows(model, rows, names)


def _eps_bin(r: dict[str, Any]) -> str:
    eps = r.get("epsilon_setting")
    return r["kind"] if eps is None else f"{r['kind']}:{int(math.log(eps) * 2)}"


def setting_mean(train: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]]) -> np.ndarray:
    """Each test row predicted by the mean E of the training rows of the same setting kind
    (and half-log ε bin), falling back to the kind, then to the overall mean."""
    overall = float(np.mean([r["target"] for r in train]))
    by: dict[str, list[float]] = {}
    for r in train:
        by.setdefault(_eps_bin(r), []).append(r["target"])
        by.setdefault(r["kind"], []).append(r["target"])
    return np.asarray([float(np.mean(by.get(_eps_bin(r)) or by.get(r["kind"]) or [overall]))
                       for r in test])


def cross_validated(rows: Sequence[dict[str, Any]], folds: int = CV_FOLDS, seed: int = 0
                    ) -> dict[str, Any] | None:
    """Every model (and the setting mean) scored out of fold over ``rows``, in ``folds``
    groups of whole documents (ordered by a hash of the id): each row is predicted by a
    model that never saw its document. Over the train and calibration documents this reads
    five times as many held-out rows as the test split, so it shows whether the test
    split's ranking of the models is more than the luck of a few documents."""
    import hashlib

    docs = sorted({r["group"] for r in rows},
                  key=lambda g: hashlib.sha256(f"{seed}|{g}".encode()).hexdigest())
    if len(docs) < folds * 2:
        return None
    fold_of = {g: i % folds for i, g in enumerate(docs)}
    y = np.asarray([r["target"] for r in rows])
    configs = scored_configs(rows)
    preds: dict[str, np.ndarray] = {name: np.zeros(len(rows)) for name in [*configs, SETTING_MEAN]}
    for k in range(folds):
        fit = [r for r in rows if fold_of[r["group"]] != k]
        idx = [i for i, r in enumerate(rows) if fold_of[r["group"]] == k]
        held = [rows[i] for i in idx]
        for name, feats in configs.items():
            preds[name][idx] = predict(fit_model(fit, feats, seed), held, feats)
        preds[SETTING_MEAN][idx] = setting_mean(fit, held)
    kinds = np.asarray([r.get("doc_kind", "") for r in rows])
    return {"folds": folds, "rows": len(rows), "documents": len(docs),
            "by_setting_kind": by_setting_kind(rows, y, preds, FAST, FULL),
            "models": {name: cost_metrics(y, p).to_json() for name, p in preds.items()},
            "reduction_ci": reduction_interval(rows, preds[BASELINE], preds[FULL], seed=seed),
            "by_document_kind": {
                str(kind): {"rows": int((kinds == kind).sum()), **{
                    name: round(float(np.mean(np.abs(preds[name] - y)[kinds == kind] > 0.1))
                                * 100, 1) for name in (BASELINE, FULL)}}
                for kind in sorted(set(kinds)) if kind}}


def compare_slms(datasets: Sequence[DataSet], folds: int = CV_FOLDS, seed: int = 0
                 ) -> dict[str, Any] | None:
    """The local SLMs of one stand-in, compared on the SAME sends: the plain rows of the
    train and calibration documents that every features file holds (same document, same
    setting, same cloud answer, so E is identical and only the SLM's features differ),
    scored out of fold by document. The test documents stay out (since session 21), so
    choosing the default SLM by this comparison never reads them: the per-file report
    reads the test split once for each SLM. Failed and RMSE of the paper's ABCD model, of
    the full model and of the ε-only baseline per SLM, and the full model's Failed per
    kind of document."""
    if len(datasets) < 2:
        return None
    targets = {d.target for d in datasets}
    if len(targets) > 1:        # a retargeted file and one that is not: E is not the same
        return {"rows": 0, "slms": [d.slm for d in datasets], "targets": sorted(targets)}
    keyed = [{(r["group"], r["key"]): r for r in d.rows
              if r["variant"] == "plain" and r["split"] != "test"} for d in datasets]
    common = sorted(set.intersection(*(set(k) for k in keyed)))
    if len(common) < MIN_ROWS:
        return {"rows": len(common), "slms": [d.slm for d in datasets]}
    out: dict[str, Any] = {"rows": len(common),
                           "documents": len({g for g, _k in common}), "slms": {}}
    for d, rows in zip(datasets, keyed):
        cv = cross_validated([rows[k] for k in common], folds, seed)
        if cv is None:
            return {"rows": len(common), "slms": [x.slm for x in datasets]}
        out["slms"][d.slm] = {name: cv["models"][name] for name in (
            "ABCD (paper)", FULL, BASELINE)}
        out.setdefault("by_document_kind", {})[d.slm] = {
            kind: {"rows": m["rows"], BASELINE: m[BASELINE], FULL: m[FULL]}
            for kind, m in cv["by_document_kind"].items()}
    return out


def conformal_coverage(names: Sequence[str], train: Sequence[dict[str, Any]],
                       calib: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]],
                       level: float, seed: int = 0) -> dict[str, Any] | None:
    """The product's band (:func:`preflight.core.utility.fitting.calibrated`): the model
    fitted on TRAIN + CALIBRATION, its radius the conformal quantile of the out-of-fold
    residuals over those documents; its coverage is measured on the TEST documents. Beside
    it, for reference, split conformal: a model of TRAIN with the radius from the
    CALIBRATION rows alone (the band of the bundles before session 7)."""
    if not test:
        return None
    y = np.asarray([r["target"] for r in test])

    def band(cross: bool) -> dict[str, Any] | None:
        model, _rows, b = calibrated(train, calib, names, seed, level, cross=cross)
        if b is None:
            return None
        err = np.abs(predict(model, test, names) - y)
        return {"method": b["method"], "half_width": round(float(b["radius"]), 4),
                "coverage": round(float(np.mean(err <= b["radius"])), 4),
                "n_calibration": b["calibration_rows"]}

    shipped = band(True)
    return None if shipped is None else {"level": level, **shipped, "split": band(False)}


def evaluate(data: DataSet, seed: int = 0, answered_test_documents: int | None = None
             ) -> dict[str, Any]:
    """The report of one features file. ``answered_test_documents``: how many test
    documents the stand-in answered (:func:`~preflight_eval.utility_data.rows.
    answered_test_documents`); a file that covers fewer — a slower SLM's pass still under
    way — is scored on the ones it has, but the acceptance rule is not read on it."""
    report: dict[str, Any] = {
        "cloud": data.cloud, "slm": data.slm, "file": data.path.name,
        "rows": len(data.rows), "documents": data.documents, "dropped": data.dropped,
        "variants": {},
    }
    for variant in ("plain", "corrected"):
        rows = [r for r in data.rows if r["variant"] == variant]
        train = [r for r in rows if r["split"] == "train"]
        calib = [r for r in rows if r["split"] == "calibration"]
        test = [r for r in rows if r["split"] == "test"]
        known = train + calib                  # what the models are fitted on
        if len(known) < MIN_ROWS or not test:
            continue
        y = np.asarray([r["target"] for r in test])
        entry: dict[str, Any] = {
            "train_rows": len(known), "test_rows": len(test),
            "train_documents": len({r["group"] for r in known}),
            "test_documents": len({r["group"] for r in test}),
            "target_mean": round(float(y.mean()), 4), "models": {},
        }
        preds: dict[str, np.ndarray] = {}
        configs = scored_configs(rows)
        if len(configs) < len(CONFIGS):
            entry["not_scored"] = {
                "models": [n for n in CONFIGS if n not in configs],
                "rows_without": sum(not r.get("sanitized_perplexity", True) for r in rows)}
        for name, feats in configs.items():
            preds[name] = predict(fit_model(known, feats, seed), test, feats)
            entry["models"][name] = cost_metrics(y, preds[name]).to_json()
            if name == FULL:
                entry["interval"] = conformal_coverage(feats, train, calib, test,
                                                       INTERVAL_LEVEL, seed)
        entry["models"][SETTING_MEAN] = cost_metrics(y, setting_mean(known, test)).to_json()
        entry["cross_validated"] = cross_validated(known, seed=seed)
        base = entry["models"][BASELINE]["failed_pct"]
        full = entry["models"][FULL]["failed_pct"]
        entry["failed_reduction_points"] = round(base - full, 2)
        entry["reduction_ci"] = reduction_interval(test, preds[BASELINE], preds[FULL],
                                                   seed=seed)
        report["variants"][variant] = entry
    plain = report["variants"].get("plain")
    covers = bool(plain) and (answered_test_documents is None
                              or plain["test_documents"] >= answered_test_documents)
    report["acceptance"] = {
        "rule": f"full Failed ≤ ε-only baseline Failed − {ACCEPT_POINTS:g} points and "
                f"≤ {ACCEPT_MAX_FAILED:g} % (test documents, plain variant)",
        "covers_test_split": covers,
        "answered_test_documents": answered_test_documents,
        "met": bool(covers and plain["failed_reduction_points"] >= ACCEPT_POINTS
                    and plain["models"][FULL]["failed_pct"] <= ACCEPT_MAX_FAILED),
        "reduction_points": plain["failed_reduction_points"] if plain else None,
        "reduction_ci": plain["reduction_ci"] if plain else None,
        "test_documents": plain["test_documents"] if plain else None,
    }
    return report


def format_report(report: dict[str, Any]) -> str:
    lines = [f"stand-in {report['cloud']} · local SLM {report['slm']} · {report['rows']} rows, "
             f"{report['documents']} documents ({report['file']}; dropped: "
             + (", ".join(f"{k} {v}" for k, v in report["dropped"].items()) or "none") + ")"]
    if not report["variants"]:
        lines.append(f"  too few rows for a report yet (at least {MIN_ROWS} training rows and "
                     "one test document per variant); the feature pass resumes where it stopped")
        return "\n".join(lines)
    head = (f"{'variant':<10} {'features':<30} {'n':>5} {'R²':>6} {'RMSE':>6} "
            f"{'Wasted $':>9} {'Wasted ε':>9} {'Failed':>7}")
    lines += [head, "-" * len(head)]
    for variant, entry in report["variants"].items():
        for name, m in entry["models"].items():
            lines.append(f"{variant:<10} {name:<30} {m['n']:>5} {m['r2']:>6.3f} {m['rmse']:>6.3f} "
                         f"{m['wasted_money_pct']:>8.1f}% {m['wasted_epsilon_pct']:>8.1f}% "
                         f"{m['failed_pct']:>6.1f}%")
        lines.append(f"{variant}: fitted on {entry['train_rows']} train + calibration rows / "
                     f"{entry['train_documents']} documents, test {entry['test_rows']} rows / "
                     f"{entry['test_documents']} documents; Failed "
                     f"{entry['failed_reduction_points']:+.1f} points vs the ε-only baseline "
                     f"({ci_text(entry['reduction_ci'], entry['test_documents'])})")
        skipped = entry.get("not_scored")
        if skipped:
            lines.append(f"{variant}: not scored: {', '.join(skipped['models'])} — "
                         f"{skipped['rows_without']} rows have no sanitized-text perplexity "
                         "(a feature pass run with --skip-unread)")
        cv = entry.get("cross_validated")
        if cv:
            lines.append(f"{variant}: {cross_validated_text(cv)}")
            if cv.get("by_document_kind"):
                lines.append(f"{variant}: out of fold per kind of document, Failed ε-only → "
                             "full: " + ", ".join(
                                 f"{kind} {m[BASELINE]:.1f} → {m[FULL]:.1f} % ({m['rows']} rows)"
                                 for kind, m in cv["by_document_kind"].items()))
            if cv.get("by_setting_kind"):
                lines += [f"{variant}: out of fold per setting kind:",
                          *table(cv["by_setting_kind"], (BASELINE, FAST, FULL, SETTING_MEAN))]
        iv = entry.get("interval")
        if iv:
            lines.append(f"{variant}: {interval_text(iv)}")
        lines.append("")
    lines.append(acceptance_text(report["acceptance"]))
    return "\n".join(lines)


def acceptance_text(acc: dict[str, Any]) -> str:
    """The acceptance line: MET / NOT MET, or NOT READ when the file covers only part of
    the test documents the stand-in answered (its reading on them is given, as a subset)."""
    if not acc.get("covers_test_split", True):
        return (f"acceptance ({acc['rule']}): NOT READ — these features cover "
                f"{acc['test_documents']} of the {acc['answered_test_documents']} test "
                "documents the stand-in answered; the rule is read once they cover all "
                f"(on this subset: {acc['reduction_points']:+.1f} points)")
    return (f"acceptance ({acc['rule']}): {'MET' if acc['met'] else 'NOT MET'} "
            f"({acc['reduction_points']} points)")


def interval_text(iv: dict[str, Any]) -> str:
    """One line for :func:`conformal_coverage`'s result (the report and the model card)."""
    how = {"cross": "cross-conformal over the {n} train + calibration rows",
           "split": "split conformal on {n} calibration rows"}
    line = (f"{iv['level']:.0%} band ±{iv['half_width']:.3f} ("
            + how[iv["method"]].format(n=iv["n_calibration"])
            + f") covers {iv['coverage']:.1%} of the test rows")
    split = iv.get("split")
    if iv["method"] == "cross" and split:
        line += (f"; split conformal on the {split['n_calibration']} calibration rows alone "
                 f"(±{split['half_width']:.3f}) would cover {split['coverage']:.1%}")
    return line


def ci_text(ci: Sequence[float], documents: int) -> str:
    return f"95 % interval over {documents} resampled documents {ci[0]:+.1f} to {ci[1]:+.1f}"


def cross_validated_text(cv: dict[str, Any]) -> str:
    """One line for :func:`cross_validated`'s result (the report and the model card)."""
    base, full = (cv["models"][n]["failed_pct"] for n in (BASELINE, FULL))
    return (f"out of fold over the train + calibration documents ({cv['folds']} folds of "
            f"whole documents, {cv['rows']} rows / {cv['documents']} documents): Failed "
            + ", ".join(f"{name.split(' (')[0]} {m['failed_pct']:.1f} % (RMSE {m['rmse']:.3f})"
                        for name, m in cv["models"].items())
            + f"; full vs ε-only baseline {base - full:+.1f} points "
              f"({ci_text(cv['reduction_ci'], cv['documents'])})")


def format_comparison(cloud: str, comp: dict[str, Any]) -> str:
    if comp.get("targets"):
        return (f"local SLMs {', '.join(comp['slms'])} on stand-in {cloud}: not compared — "
                f"their files' targets differ ({' and '.join(comp['targets'])})")
    if "documents" not in comp:
        return (f"local SLMs {', '.join(comp['slms'])} on stand-in {cloud}: {comp['rows']} "
                f"sends have features from all of them — too few to compare yet")
    lines = [f"local SLMs on the same {comp['rows']} sends of stand-in {cloud} "
             f"({comp['documents']} train + calibration documents, out of fold by "
             "document; no test document):"]
    for slm, models in comp["slms"].items():
        lines.append(f"  {slm:<14} " + ", ".join(
            f"{name.split(' (')[0]} Failed {m['failed_pct']:.1f}% RMSE {m['rmse']:.3f}"
            for name, m in models.items()))
    for slm, kinds in comp.get("by_document_kind", {}).items():
        lines.append(f"  {slm:<14} full per kind: " + ", ".join(
            f"{kind} {m[FULL]:.1f} % ({m['rows']} rows)" for kind, m in kinds.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--json", default=None, help="also write the reports as JSON here")
    ap.add_argument("--rows", type=int, default=None, metavar="N",
                    help="only the first N rows of each features file (the snapshot a "
                         "model card names)")
    ap.add_argument("--seed", type=int, default=0,
                    help="the models' seed and the out-of-fold check's assignment of "
                         "documents to folds (0: the model card's)")
    ap.add_argument("--split-version", type=int, choices=(1, 2), default=2,
                    help="1: the split by document (split-v1.json) the bundles trained "
                         "before the split by family cite")
    args = ap.parse_args(argv)
    files = feature_files(Path(args.data))
    if not files:
        print(f"no features files in {args.data}; compute them with "
              "python -m preflight_eval.utility_data.features", file=sys.stderr)
        return 2
    reports = []
    by_cloud: dict[str, list[DataSet]] = {}
    answered: dict[str, int | None] = {}
    for cloud, _slm, path in files:
        data = load(path, args.rows, args.split_version)
        by_cloud.setdefault(cloud, []).append(data)
        if cloud not in answered:
            answered[cloud] = answered_test_documents(Path(args.data) / f"{cloud}.jsonl.gz")
        report = evaluate(data, seed=args.seed, answered_test_documents=answered[cloud])
        reports.append(report)
        print(format_report(report))
        print()
    for cloud, datasets in by_cloud.items():
        comparison = compare_slms(datasets, seed=args.seed)
        if comparison is not None:
            reports.append({"cloud": cloud, "slm_comparison": comparison})
            print(format_comparison(cloud, comparison))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
