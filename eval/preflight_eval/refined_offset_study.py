"""Can the refinement of a d_X setting be measured once per document and carried along ε?

A refined prediction at ε is a measurement of one payload (the local model's answers on
that noise sample), so two `assess` calls at ε₁ < ε₂ can report less at ε₂. One way to
make the refined number non-decreasing in ε by construction is to measure the refinement
once, at a reference ε fixed for the document, as an offset to the instant prediction,
and show the document's non-decreasing instant curve shifted by that offset at every ε.

This study scores that carried offset out of fold (the folds of
:func:`preflight_eval.eval_utility.cross_validated`: train + calibration documents, never
the test split) on the documents with d_X rows at two or more ε, against the refined and
the instant prediction of the row's own payload:

- ``refined``: the full model on the row itself (today's refined value),
- ``instant``: the fast model on the row itself,
- ``offset@low`` / ``offset@high`` / ``offset@other``: the row's instant prediction plus
  (full − fast) of the same document's row at its lowest / highest / another ε (the
  row's own refinement is never used: the offset comes from a different payload).

It also counts, among pairs of one document's rows, how often the refined value falls
while ε rises. Run: ``python -m preflight_eval.refined_offset_study``.
"""

from __future__ import annotations

import argparse
import hashlib
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.predictor import cost_metrics
from preflight_eval.eval_utility import CV_FOLDS, FAST, FULL, fit_model, predict, scored_configs
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.rows import load

KINDS = ("dx", "identifiers-dx")


def out_of_fold(rows: Sequence[dict[str, Any]], folds: int = CV_FOLDS, seed: int = 0
                ) -> dict[str, np.ndarray]:
    """FAST and FULL predictions of every row by models that never saw its document (the
    same fold assignment as eval_utility.cross_validated)."""
    docs = sorted({r["group"] for r in rows},
                  key=lambda g: hashlib.sha256(f"{seed}|{g}".encode()).hexdigest())
    fold_of = {g: i % folds for i, g in enumerate(docs)}
    configs = scored_configs(rows)
    preds = {name: np.zeros(len(rows)) for name in (FAST, FULL)}
    for k in range(folds):
        fit = [r for r in rows if fold_of[r["group"]] != k]
        idx = [i for i, r in enumerate(rows) if fold_of[r["group"]] == k]
        held = [rows[i] for i in idx]
        for name in preds:
            preds[name][idx] = predict(fit_model(fit, configs[name], seed), held,
                                       configs[name])
    return preds


def carried(rows: Sequence[dict[str, Any]], preds: dict[str, np.ndarray], kind: str
            ) -> dict[str, Any]:
    """Failed / RMSE of each way of showing a ``kind`` row, over the documents with rows
    of that kind at two or more ε."""
    by_doc: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r["kind"] == kind and r.get("epsilon_setting"):
            by_doc[r["group"]].append(i)
    by_doc = {g: sorted(ix, key=lambda i: rows[i]["epsilon_setting"])
              for g, ix in by_doc.items() if len(ix) >= 2}
    fast, full = preds[FAST], preds[FULL]
    shift = full - fast
    ways: dict[str, list[float]] = defaultdict(list)
    y: list[float] = []
    falls = pairs = 0
    for ix in by_doc.values():
        for j, i in enumerate(ix):
            y.append(rows[i]["target"])
            ways["refined"].append(full[i])
            ways["instant"].append(fast[i])
            low = ix[0] if ix[0] != i else ix[1]
            high = ix[-1] if ix[-1] != i else ix[-2]
            other = ix[j - 1] if j > 0 else ix[j + 1]
            ways["offset@low"].append(fast[i] + shift[low])
            ways["offset@high"].append(fast[i] + shift[high])
            ways["offset@other"].append(fast[i] + shift[other])
            for later in ix[j + 1:]:
                if rows[later]["epsilon_setting"] > rows[i]["epsilon_setting"]:
                    pairs += 1
                    falls += full[later] < full[i] - 1e-9
    yy = np.asarray(y)
    return {"documents": len(by_doc), "rows": len(y),
            "ways": {w: {"failed_pct": round(cost_metrics(yy, np.asarray(p)).failed, 1),
                         "rmse": round(cost_metrics(yy, np.asarray(p)).rmse, 4)}
                     for w, p in ways.items()},
            "refined_falls_pct": round(100 * falls / pairs, 1) if pairs else None,
            "pairs": pairs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--features", default=str(DATA_DIR / "features-cloud_qwen15-slm_qwen05.jsonl.gz"))
    args = ap.parse_args(argv)
    data = load(Path(args.features), None, 2)
    rows = [r for r in data.rows if r["variant"] == "plain" and r["split"] != "test"]
    preds = out_of_fold(rows)
    print(f"{Path(args.features).name}: {len(rows)} train + calibration rows, out of fold "
          f"({CV_FOLDS} folds of whole documents)")
    for kind in KINDS:
        res = carried(rows, preds, kind)
        print(f"\n{kind}: {res['rows']} rows of {res['documents']} documents with 2+ ε; "
              f"the refined value falls while ε rises in {res['refined_falls_pct']} % of "
              f"{res['pairs']} pairs of one document's rows")
        for way, m in res["ways"].items():
            print(f"  {way:<13} Failed {m['failed_pct']:5.1f} %  RMSE {m['rmse']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
