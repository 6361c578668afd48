"""Is the committed test split a typical draw of the documents? The 15-point rule over
redrawn splits of the same documents.

The acceptance rule of issue 13 (the full model's Failed at least 15 points below the
ε-only baseline's) is read on the TEST documents of ``split.json``. This study asks how
much that reading owes to which documents the hash put there:

* **Redrawn splits.** ``--splits`` times, a random set of documents of the committed test
  split's size is held out, the ε-only baseline and the full model are fitted on the
  other documents' plain rows and scored on the held-out ones. Printed: the committed
  split's difference beside the mean, spread and range of the redrawn ones, and how many
  redrawn splits read as low as the committed one.
* **Every document out of fold.** Each plain row is predicted by models fitted without
  its document (five folds of whole documents over ALL documents, ``--seeds`` fold
  assignments), so the committed test documents and the others are scored by the same
  kind of model; the difference is then read on each group, per kind of document. If the
  committed test documents read low here too, the documents themselves are what differs,
  not the models fitted on the train split.

Nothing here chooses a model or a setting: it only says how far one split's reading of
a fixed model can stray.

    python -m preflight_eval.split_study --rows 3278 --splits 30
"""

from __future__ import annotations

import argparse
import random
import statistics
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import BASELINE_FEATURES, FULL_MODEL_FEATURES
from preflight.core.utility.fitting import fit_model, out_of_fold_residuals, predict_rows
from preflight_eval.utility_data.rows import add_data_arguments, plain_rows, write_json

MODELS = {"baseline": BASELINE_FEATURES, "full": FULL_MODEL_FEATURES}
FOLDS = 5


def _failed(rows: Sequence[dict[str, Any]], pred: np.ndarray) -> np.ndarray:
    y = np.asarray([r["target"] for r in rows], dtype=float)
    return np.abs(pred - y) > 0.1


def held_out_reading(rows: Sequence[dict[str, Any]], test_docs: set[str], seed: int = 0
                     ) -> dict[str, float]:
    """Failed (%) of both models fitted on the documents outside ``test_docs`` and scored
    on those inside, and their difference in points."""
    fit = [r for r in rows if r["group"] not in test_docs]
    test = [r for r in rows if r["group"] in test_docs]
    out = {name: float(_failed(test, predict_rows(fit_model(fit, names, seed), test, names))
                       .mean() * 100) for name, names in MODELS.items()}
    out["difference"] = out["baseline"] - out["full"]
    return out


def redrawn(rows: Sequence[dict[str, Any]], splits: int, seed: int = 0) -> dict[str, Any]:
    committed = {r["group"] for r in rows if r["split"] == "test"}
    docs = sorted({r["group"] for r in rows})
    readings = []
    for k in range(splits):
        shuffled = docs[:]
        random.Random(seed + k).shuffle(shuffled)
        readings.append(held_out_reading(rows, set(shuffled[:len(committed)]), seed))
    mine = held_out_reading(rows, committed, seed)
    diffs = [r["difference"] for r in readings]
    return {
        "test_documents": len(committed), "documents": len(docs), "splits": splits,
        "committed": _rounded(mine),
        "redrawn": {
            "mean": _rounded({k: statistics.fmean(r[k] for r in readings) for k in mine}),
            "sd": _rounded({k: statistics.stdev(r[k] for r in readings) for k in mine})
            if splits > 1 else {},
            "min_difference": round(min(diffs), 1), "max_difference": round(max(diffs), 1),
            "as_low_as_committed": sum(d <= mine["difference"] for d in diffs),
        },
    }


def every_document(rows: Sequence[dict[str, Any]], seeds: int = 3) -> dict[str, Any]:
    """Failed of both models out of fold over all documents, read apart on the committed
    test documents and on the others (overall and per kind of document), averaged over
    ``seeds`` fold assignments."""
    failed = {name: np.mean([np.abs(out_of_fold_residuals(rows, names, seed, FOLDS)) > 0.1
                             for seed in range(seeds)], axis=0) * 100
              for name, names in MODELS.items()}
    is_test = np.asarray([r["split"] == "test" for r in rows])
    kinds = np.asarray([r.get("doc_kind", "") for r in rows])
    out: dict[str, Any] = {"seeds": seeds, "folds": FOLDS, "groups": {}}
    for part, inside in (("test", is_test), ("other", ~is_test)):
        for kind in ("all", *sorted(set(kinds) - {""})):
            mask = inside & ((kinds == kind) | (kind == "all"))
            if mask.any():
                base, full = (float(failed[name][mask].mean()) for name in MODELS)
                out["groups"].setdefault(part, {})[kind] = {
                    "rows": int(mask.sum()), "baseline": round(base, 1),
                    "full": round(full, 1), "difference": round(base - full, 1)}
    return out


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 1) for k, v in values.items()}


def format_study(result: dict[str, Any]) -> str:
    r, c = result["redrawn"], result["redrawn"]["committed"]
    mean, sd = r["redrawn"]["mean"], r["redrawn"].get("sd", {})
    lines = [
        f"held out: {r['test_documents']} of {r['documents']} documents (the committed test "
        f"split's size); Failed ε-only baseline → full, difference in points",
        f"  committed split      {c['baseline']:5.1f} → {c['full']:5.1f} %  {c['difference']:+5.1f}",
        f"  {r['splits']} redrawn splits    {mean['baseline']:5.1f} → {mean['full']:5.1f} %  "
        f"{mean['difference']:+5.1f} (sd {sd.get('difference', float('nan')):.1f}; range "
        f"{r['redrawn']['min_difference']:+.1f} to {r['redrawn']['max_difference']:+.1f}; "
        f"{r['redrawn']['as_low_as_committed']} of {r['splits']} as low as the committed)",
        f"every document out of fold ({result['documents']['folds']} folds over all "
        f"documents, {result['documents']['seeds']} fold assignments), read per group:",
    ]
    for part, kinds in result["documents"]["groups"].items():
        name = "committed test documents" if part == "test" else "the other documents"
        lines.append(f"  {name}: " + "; ".join(
            f"{kind} {m['baseline']:.1f} → {m['full']:.1f} % ({m['difference']:+.1f}, "
            f"{m['rows']} rows)" for kind, m in kinds.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(ap)
    ap.add_argument("--splits", type=int, default=30, help="redrawn splits")
    ap.add_argument("--seeds", type=int, default=3, help="fold assignments of the "
                    "every-document check")
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    rows = plain_rows(args)
    if not any(r["split"] == "test" for r in rows):
        raise SystemExit("no test documents in the data set yet")
    result = {"rows": len(rows), "redrawn": redrawn(rows, args.splits),
              "documents": every_document(rows, args.seeds)}
    print(format_study(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
