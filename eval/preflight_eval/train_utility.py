"""Train the shipped utility regressor from the committed data set and write its card.

Reads ``data/utility/features-<stand-in>-<slm>.jsonl.gz`` (:mod:`.utility_data.rows`),
scores every model fitted on the TRAIN + CALIBRATION documents of ``split.json`` on its
TEST documents (the model card's table, and the band's measured coverage), then ships
estimators refitted on every document with their cross-conformal band
(:mod:`preflight.core.utility.fitting`). One command reproduces the card and the bundle:

    python -m preflight_eval.train_utility --slm-role slm_qwen05   # the default SLM's
    python -m preflight_eval.train_utility                         # SmolLM2's

Writes, under ``resources/utility/slm_qwen05/`` for the default SLM (SmolLM2's under
``resources/utility/``: each SLM's features need their own regressor):

* ``regressor.joblib`` — the bundle (scikit-learn version pinned inside),
* ``training_features.csv`` — the training rows as numbers only (document ids hashed),
  which learning on the flow refits on together with the user's own sends,
* ``MODEL_CARD.md`` and ``eval_report.json`` — data, sizes, held-out metrics.
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
from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS
from preflight.core.utility.features import (
    BASELINE_FEATURES,
    FAST_FEATURES,
    FAST_MODEL_FEATURES,
    FULL_MODEL_FEATURES,
    SANITIZED_PERPLEXITY,
)
from preflight.core.utility.flow import TRAINING_ROWS_NAME, write_training_rows
from preflight.core.utility.predictor import BUNDLE_NAME, fit_bundle, save_bundle
from preflight.core.utility.slm_roles import DEFAULT_SLM_ROLE, shipped_folder
from preflight_eval.eval_utility import (
    BASELINE,
    FAST,
    FULL,
    SETTING_MEAN,
    ci_text,
    cross_validated_text,
    evaluate,
    format_report,
    interval_text,
)
from preflight_eval.refinement_verdict import table, verdicts
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.rows import (
    DataSet, answered_test_documents, load, load_csv,
)

COMMAND = "python -m preflight_eval.train_utility"


def _hash_group(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode()).hexdigest()[:12]


def _table(report: dict[str, Any]) -> list[str]:
    out = ["| variant | model | n | R² | RMSE | Wasted $ | Wasted ε | Failed |",
           "|---|---|---|---|---|---|---|---|"]
    for variant, entry in report["variants"].items():
        for name, m in entry["models"].items():
            out.append(f"| {variant} | {name} | {m['n']} | {m['r2']:.3f} | {m['rmse']:.3f} | "
                       f"{m['wasted_money_pct']:.1f} % | {m['wasted_epsilon_pct']:.1f} % | "
                       f"{m['failed_pct']:.1f} % |")
    return out


def model_card(data: DataSet, report: dict[str, Any], bundle: dict[str, Any],
               command: str) -> str:
    import sklearn

    docs = {r["group"]: r["doc_kind"] for r in data.rows}
    kinds = collections.Counter(docs.values())
    settings = collections.Counter((r["kind"], r["variant"]) for r in data.rows)
    splits = collections.Counter(r["split"] for r in data.rows)
    originals = {r["group"]: r["target_original"] for r in data.rows}
    e0 = sum(originals.values()) / max(1, len(originals))
    acc = report["acceptance"]
    verdict = (f"**{'met' if acc['met'] else 'not met'}**"
               if acc.get("covers_test_split", True) else
               f"**not read**: these features cover {acc['test_documents']} of the "
               f"{acc['answered_test_documents']} test documents the stand-in answered; on "
               "them")
    out = [
        "# Utility regressor — model card",
        "",
        *(("Predicts E = the realized utility of the cloud LLM's restored answer on a",
           "document's sanitized version: the cosine similarity (all-mpnet-base-v2) of document",
           "and answer discounted by the facts the answer states that the document does not",
           "hold (`faithful_utility`, docs/UTILITY.md; the bare cosine is `target_cosine`),",
           "from features A–D of the utility-assessor paper plus cheap extras; D reads the",
           "local SLM's answer restored as the cloud's is.") if data.target == "faithful" else
          ("Predicts E = cosine similarity (all-mpnet-base-v2) between a document and the cloud",
           "LLM's answer on its sanitized version, from features A–D of the utility-assessor",
           "paper plus cheap extras.")),
        f"Shipped as `regressor.joblib` (scikit-learn {sklearn.__version__}, "
        "`HistGradientBoostingRegressor`).",
        "",
        f"- Built: {bundle['created']} by `{command}` from `{data.path.name}`",
        *((f"- Stand-in cloud LLM (target E): manifest role `{data.cloud}`, reached through the",
           "  product's own send path (chat completions, the product's request; see",
           "  `data/utility/README.md`)") if data.cloud != "cloud_standin" else
          ("- INTERIM: the rows of sessions 2–3 — Gemma 3 270M (a base model) as the stand-in,",
           "  `/v1/completions` with a TL;DR prompt, 41 documents; the data set of",
           "  `data/utility/` (Qwen2.5-Coder-1.5B through the product's send path) replaces it",
           "  once its features are computed")),
        f"- Local SLM (features C, D, perplexity, correction): manifest role `{data.slm}`"
        + ("" if data.cloud == "cloud_standin" else
           f"; its answers for C and D capped at {ASSESSOR_ANSWER_TOKENS} tokens "
           "(`ASSESSOR_ANSWER_TOKENS`, the product's)"),
        "",
        "## Data",
        "",
        f"- Documents: {len(docs)}" + (" (" + ", ".join(
            f"{k}: {v}" for k, v in sorted(kinds.items()) if k) + ")" if any(kinds) else "")
        + "; split by document: " + ", ".join(f"{k} {v} rows" for k, v in sorted(splits.items())),
        f"- Rows: {len(data.rows)} (" + ", ".join(f"{k}/{v}: {n}" for (k, v), n
                                                 in sorted(settings.items())) + ")",
        "- Dropped: " + (", ".join(f"{k}: {v}" for k, v in data.dropped.items()) or "none"),
        (f"- Cloud answer on the unaltered documents: mean E = {e0:.3f}" if e0 == e0 else
         "- No unsanitized sends in these rows: the unsanitized model's target is derived "
         "(docs/UTILITY.md)"),
        "",
        "## Held-out metrics (TEST documents of split.json, models fitted on TRAIN + "
        "CALIBRATION)",
        "",
        "The shipped estimators are then refitted on every document, test included, and",
        "their band's radius is the conformal quantile of the out-of-fold residuals over",
        "those documents (5 folds of whole documents).",
        "",
        "Wasted $ = % predicted > realized + 0.1; Wasted ε = % predicted < realized − 0.1;",
        "Failed = their sum. Same numbers: `python -m preflight_eval.eval_utility"
        + ("`." if data.cloud == "cloud_standin" else f" --rows {data.read}`."),
        "",
        *_table(report),
        "",
    ]
    for variant, entry in report["variants"].items():
        cv = entry.get("cross_validated")
        if cv:     # the test split's ranking, checked on more rows
            out.append(f"- {variant}, {cross_validated_text(cv)}.")
    cv_plain = report["variants"].get("plain", {}).get("cross_validated") or {}
    if cv_plain.get("by_setting_kind"):
        out += ["", "## Refined against instant, per setting kind (out of fold, train + "
                "calibration documents)", "",
                "Where the refined model's Failed is higher than the instant one's, the "
                "product shows the instant value for that kind and says why.", "",
                *table(cv_plain["by_setting_kind"], (BASELINE, FAST, FULL, SETTING_MEAN)), ""]
    for variant, entry in report["variants"].items():
        iv = entry.get("interval")
        if iv:
            out.append(f"- {variant}: the {interval_text(iv)}.")
    out += [
        f"- Acceptance ({acc['rule']}): {verdict} ({acc['reduction_points']} points; "
        + (ci_text(acc["reduction_ci"], acc["test_documents"]) if acc["reduction_ci"] else "")
        + ").",
        "",
        "## Models in the bundle",
        "",
        f"- `baseline`: {', '.join(BASELINE_FEATURES)}",
        f"- `fast` (no model call): {', '.join(FAST_MODEL_FEATURES)}",
        f"- `full`: {', '.join(FAST_FEATURES)} + "
        f"{', '.join(f for f in FULL_MODEL_FEATURES if f not in FAST_FEATURES)} (not the "
        f"sanitized text's perplexity: {', '.join(SANITIZED_PERPLEXITY)})",
        "- `*_corrected`: the same on rows where the SLM first repaired the text",
        "",
        "## Limits",
        "",
        "- The stand-in is a 1.5B model on two CPU cores, not a frontier model; learning on",
        "  the flow refits on the user's own sends, per provider and model.",
        "- Trained for summaries; other tasks use the same model as an approximation.",
        "- Scope: trained only on summaries, by the stand-in above, of research papers (ACL",
        "  abstract + introduction), mailing-list e-mails and synthetic business letters,",
        "  memos, minutes and HR notes (95–424 words); read once on kinds it never trained on",
        "  (court judgments, manual pages, READMEs; summaries and questions: `docs/BENCHMARKS.md`,",
        "  \"The frozen test set, read once\"); contracts, licences, code and chat were never",
        "  measured; the window marks a document outside that length range, or a task other",
        "  than a summary (`resources/utility/scope.json`; `docs/UTILITY.md`, Scope).",
        "- C, D and the perplexities depend on the llama.cpp build's CPU kernels: a 135M",
        "  model's greedy answer changes course on the smallest numeric difference (the",
        "  end-to-end sends re-assessed after a rebuild moved D by up to 0.81). The rows",
        "  were computed on one build; another CPU reads slightly different features.",
        "",
    ]
    return "\n".join(out)


#: The report's row of each model the bundle predicts with (the bundle's model names).
BUNDLE_MODELS = {"fast": FAST, "full": FULL}


def held_out_table(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The held-out metrics of the bundle's models, keyed by variant and model name
    (``{"plain": {"fast": {"rmse": …}, "full": …}, "corrected": …}``): what the product
    reads (:func:`preflight.app.prediction.held_out_rmse`), not the report's labels."""
    return {variant: {name: dict(entry["models"][label])
                      for name, label in BUNDLE_MODELS.items() if label in entry["models"]}
            for variant, entry in report["variants"].items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train and ship the utility regressor")
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    ap.add_argument("--slm-role", default="slm",
                    help="the assessor SLM whose features to learn from (default: "
                         "SmolLM2's file, which the committed studies read; the app's "
                         f"default SLM is {DEFAULT_SLM_ROLE})")
    ap.add_argument("--out", default=None,
                    help="default: the SLM's shipped folder (resources/utility/<slm role>/, "
                         "SmolLM2's resources/utility/)")
    ap.add_argument("--from-csv", default=None, metavar="CSV",
                    help="train from a training_features.csv instead (the interim bundle: "
                         "resources/utility/training_features.csv, Gemma 3 270M rows)")
    ap.add_argument("--rows", type=int, default=None, metavar="N",
                    help="only the first N rows of the features file (default: all; the "
                         "card's command names the count, so it reproduces the bundle "
                         "after the data set has grown)")
    ap.add_argument("--split-version", type=int, choices=(1, 2), default=2,
                    help="1: the split by document (split-v1.json) the bundles trained "
                         "before the split by family cite")
    args = ap.parse_args(argv)
    if args.from_csv:
        path = Path(args.from_csv)
        data = load_csv(path)
    else:
        path = Path(args.data) / f"features-{args.cloud_role}-{args.slm_role}.jsonl.gz"
        data = load(path, args.rows, args.split_version)
    if not data.split("train"):
        print(f"no training rows in {path}; compute them with "
              "python -m preflight_eval.utility_data.features", file=sys.stderr)
        return 2
    report = evaluate(data, answered_test_documents=None if args.from_csv else
                      answered_test_documents(Path(args.data) / f"{args.cloud_role}.jsonl.gz"))
    print(format_report(report))
    train = data.split("train")
    metrics: dict[str, Any] = {variant: dict(entry["models"])
                               for variant, entry in report["variants"].items()}
    metrics["acceptance"] = report["acceptance"]
    metrics["held_out"] = held_out_table(report)
    # per setting kind, out of fold: where the refinement is worse, the product shows the
    # instant value (preflight.app.refinement)
    cv_plain = report["variants"].get("plain", {}).get("cross_validated") or {}
    if cv_plain.get("by_setting_kind"):
        metrics["refinement"] = verdicts(cv_plain["by_setting_kind"], FAST, FULL)
    # Every document is fitted on; the test documents' measured coverage (of a model and
    # band that never read them) is stored in the bundle's metrics. The document ids stay
    # as they are here, so the folds, and the numbers, are the report's.
    calibration, test = data.split("calibration"), data.split("test")
    bundle = fit_bundle(train, metrics=metrics, calibration=calibration, test=test,
                        source=f"{len(train)} train + {len(calibration)} calibration + "
                               f"{len(test)} test rows from {path.name}")
    if not args.from_csv:
        # C and D were computed from SLM answers of this length (rows.load kept no other),
        # by this SLM (the product picks the bundle of the SLM its assessor uses)
        bundle["slm_answer_tokens"] = ASSESSOR_ANSWER_TOKENS
        bundle["slm_role"] = args.slm_role
    out = Path(args.out) if args.out else paths.resource_path(*shipped_folder(args.slm_role))
    save_bundle(bundle, out / BUNDLE_NAME)
    # every document, ids hashed: the prior of learning on the flow refits on them
    hashed = _hash_group if not args.from_csv else str     # the CSV's ids are hashed already
    write_training_rows([dict(r, group=hashed(r["group"]))
                         for r in train + calibration + test], out / TRAINING_ROWS_NAME)
    command = COMMAND + (f" --from-csv {args.from_csv}" if args.from_csv
                         else f" --rows {data.read}")
    if args.cloud_role != "cloud_qwen15":
        command += f" --cloud-role {args.cloud_role}"
    if not args.from_csv:
        command += f" --slm-role {args.slm_role}"
    if args.split_version != 2:
        command += f" --split-version {args.split_version}"
    (out / "MODEL_CARD.md").write_text(model_card(data, report, bundle, command), encoding="utf-8")
    (out / "eval_report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"wrote {out / BUNDLE_NAME} (fitted on {bundle['n_rows']} rows; "
          f"models: {', '.join(bundle['models'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
