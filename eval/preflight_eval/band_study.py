"""Which conformal band holds its level on new documents: split conformal against the
product's cross-conformal band, over many random document splits of the committed data.

A band's coverage measured on one test split of ~20 documents is one draw: it moves with
the documents that happened to fall there. This study redraws the split: for each of
``--splits`` random partitions of the documents into fit (70 %), calibration (15 %) and
test (15 %), plus the committed ``split.json``, it fits the full model and measures on
the test documents the coverage of

* **split conformal** — a model of the fit documents, the radius from the calibration
  documents' residuals (the band shipped before session 7);
* **cross conformal** — a model of fit + calibration, the radius from the out-of-fold
  residuals over those documents (:func:`preflight.core.utility.fitting.calibrated`,
  what ships now).

It prints, per method, the mean, spread and worst coverage over the splits and the mean
band width. Both bands read no test document.

    python -m preflight_eval.band_study --rows 734 --splits 16
"""

from __future__ import annotations

import argparse
import random
import statistics
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import FULL_MODEL_FEATURES
from preflight.core.utility.fitting import calibrated, predict_rows
from preflight_eval.utility_data.rows import add_data_arguments, plain_rows

LEVEL = 0.8
METHODS = {"split conformal (calibration documents)": False,
           "cross conformal (out of fold, shipped)": True}


def partitions(rows: Sequence[dict[str, Any]], splits: int, seed: int = 0
               ) -> list[tuple[str, set[str], set[str]]]:
    """(name, calibration docs, test docs): the committed split, then random ones."""
    out = [("committed", {r["group"] for r in rows if r["split"] == "calibration"},
            {r["group"] for r in rows if r["split"] == "test"})]
    docs = sorted({r["group"] for r in rows})
    for k in range(splits):
        shuffled = docs[:]
        random.Random(seed + k).shuffle(shuffled)
        n_test = n_cal = round(len(docs) * 0.15)
        out.append((f"random {k + 1}", set(shuffled[n_test:n_test + n_cal]),
                    set(shuffled[:n_test])))
    return out


def study(rows: Sequence[dict[str, Any]], splits: int, seed: int = 0,
          names: Sequence[str] = FULL_MODEL_FEATURES) -> dict[str, Any]:
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
    committed: dict[str, tuple[float, float]] = {}
    for name, cal_docs, test_docs in partitions(rows, splits, seed):
        fit = [r for r in rows if r["group"] not in cal_docs | test_docs]
        cal = [r for r in rows if r["group"] in cal_docs]
        test = [r for r in rows if r["group"] in test_docs]
        y = np.asarray([r["target"] for r in test])
        for method, cross in METHODS.items():
            model, _rows, band = calibrated(fit, cal, names, seed, LEVEL, cross=cross)
            if band is None:
                continue
            err = np.abs(predict_rows(model, test, names) - y)
            point = (float(np.mean(err <= band["radius"])), 2 * float(band["radius"]))
            if name == "committed":
                committed[method] = point
            else:
                results[method].append(point)
    summary = {}
    for method, points in results.items():
        cov = [c for c, _w in points]
        summary[method] = {
            "splits": len(points),
            "mean_coverage": statistics.fmean(cov) if cov else None,
            "sd_coverage": statistics.pstdev(cov) if len(cov) > 1 else None,
            "min_coverage": min(cov) if cov else None,
            "mean_width": statistics.fmean(w for _c, w in points) if points else None,
            "committed": committed.get(method),
        }
    return {"level": LEVEL, "rows": len(rows), "documents": len({r["group"] for r in rows}),
            "methods": summary}


def format_study(result: dict[str, Any]) -> str:
    lines = [f"{result['level']:.0%} band of the full model on held-out documents "
             f"({result['rows']} plain rows, {result['documents']} documents):"]
    for method, s in result["methods"].items():
        if not s["splits"]:
            lines.append(f"  {method}: too few documents")
            continue
        c = s["committed"]
        lines.append(
            f"  {method:<40} coverage mean {s['mean_coverage']:.1%}, sd "
            f"{s['sd_coverage'] * 100:.1f} points, worst {s['min_coverage']:.1%} over "
            f"{s['splits']} random splits; width {s['mean_width']:.3f}"
            + (f"; committed split {c[0]:.1%} (width {c[1]:.3f})" if c else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(ap)
    ap.add_argument("--splits", type=int, default=16)
    args = ap.parse_args(argv)
    print(format_study(study(plain_rows(args), args.splits)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
