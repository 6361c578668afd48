"""Do the document-form features earn their place? Out of fold on train + calibration only.

The document-form features (``letter_share``, ``field_line_share``:
:func:`preflight.core.utility.features.document_form`) were chosen this way, before the
test documents were read: each model is fitted with and without them, five folds of whole
documents over the TRAIN and CALIBRATION documents of ``split.json``, ``--seeds`` fold
assignments, and every row is scored by the fit that never saw its document. The test
documents are not loaded at all; ``eval_utility`` reads them once, for the chosen model.

Printed per model (instant, full, and the two unsanitized-utility models, which read one
row per document): Failed (|predicted − realized| > 0.1) over all rows and per kind of
document, and RMSE.

    python -m preflight_eval.feature_study --rows 3278
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import (
    DOCUMENT_FEATURES,
    DOCUMENT_FORM_FEATURES,
    DOCUMENT_REFINED_FEATURES,
    FAST_MODEL_FEATURES,
    FULL_MODEL_FEATURES,
)
from preflight.core.utility.fitting import document_rows, out_of_fold_residuals
from preflight_eval.utility_data.rows import seeded_study_main

KINDS = ("aclsum", "business", "email")


def without_form(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(n for n in names if n not in DOCUMENT_FORM_FEATURES)


MODELS = {
    "instant": FAST_MODEL_FEATURES,
    "full": FULL_MODEL_FEATURES,
    "unsanitized": DOCUMENT_FEATURES,
    "unsanitized_full": DOCUMENT_FEATURES + DOCUMENT_REFINED_FEATURES,
}


def scores(rows: Sequence[dict[str, Any]], names: Sequence[str], seeds: int
           ) -> dict[str, float] | None:
    """Failed (%) overall and per kind, and RMSE, of out-of-fold predictions (mean over
    ``seeds`` fold assignments); None with too few documents for the folds."""
    runs = [out_of_fold_residuals(rows, names, seed=s) for s in range(seeds)]
    if any(r is None for r in runs):
        return None
    res = np.asarray(runs)
    failed = (np.abs(res) > 0.1).mean(axis=0)
    out = {"failed": float(failed.mean() * 100), "rmse": float(np.sqrt((res ** 2).mean()))}
    for kind in KINDS:
        mask = np.asarray([r.get("doc_kind") == kind for r in rows])
        if mask.any():
            out[kind] = float(failed[mask].mean() * 100)
    return {k: round(v, 4 if k == "rmse" else 1) for k, v in out.items()}


def study(rows: Sequence[dict[str, Any]], seeds: int = 3) -> dict[str, Any]:
    dev = [r for r in rows if r.get("split") != "test"]
    kinds = {}
    for r in dev:
        kinds.setdefault(str(r["group"]), r.get("doc_kind"))
    docs = document_rows(dev)
    for d in docs:
        d["doc_kind"] = kinds.get(str(d["group"]))
    out: dict[str, Any] = {"rows": len(dev), "documents": len(docs), "seeds": seeds,
                           "models": {}}
    for name, names in MODELS.items():
        part = docs if name.startswith("unsanitized") else dev
        out["models"][name] = {"without": scores(part, without_form(names), seeds),
                               "with": scores(part, names, seeds)}
    return out


def format_study(result: dict[str, Any]) -> str:
    lines = [f"train + calibration: {result['rows']} plain rows, {result['documents']} "
             f"documents; out of fold, {result['seeds']} fold assignments; test split "
             "not read",
             "| model | document form | Failed | " + " | ".join(KINDS) + " | RMSE |",
             "|---|---|---|" + "---|" * len(KINDS) + "---|"]
    for name, pair in result["models"].items():
        for label in ("without", "with"):
            m = pair[label]
            if m is None:
                lines.append(f"| {name} | {label} | too few documents |")
                continue
            cells = " | ".join(f"{m[k]:.1f} %" if k in m else "–" for k in KINDS)
            lines.append(f"| {name} | {label} | {m['failed']:.1f} % | {cells} | "
                         f"{m['rmse']:.4f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return seeded_study_main(argv, __doc__, study, format_study)


if __name__ == "__main__":
    raise SystemExit(main())
