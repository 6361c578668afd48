"""How far a feature pass moved from another one over the same rows.

    python -m preflight_eval.utility_data.drift NEW.jsonl.gz [--against FILE]

Compares the rows both files hold (same document and setting): per feature the largest
and median absolute difference, how many SLM answers are word for word the same, and
what the shipped regressor predicts from each (largest difference of the refined
prediction, and how many rows change side of the default minimum utility). Run it after
changing anything a feature pass goes through (a library, a build flag, the embedder's
batching) to decide whether the committed features still describe what the assessor
computes, or whether the pass must be rerun and the bundle retrained. ``--against``
defaults to the committed SmolLM2 file; make NEW with ``features --max-docs N --out NEW``.
Corrected rows whose new repair is not the stored payload are counted, not compared.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.shards import read_rows


def _index(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["doc_id"], r["key"]): r for r in read_rows(path) if r.get("features")}


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v))


def compare(new: dict[tuple[str, str], dict[str, Any]],
            old: dict[tuple[str, str], dict[str, Any]],
            predictor: Any = None, min_utility: float | None = None) -> dict[str, Any]:
    """The drift of ``new`` from ``old`` over their common rows.

    A corrected row whose repair in ``new`` is not the stored payload read another text
    than the stand-in did (the generator's corrector of that day made the payload): it is
    counted apart, not compared — its features differ for that reason alone."""
    common = sorted(set(new) & set(old))
    other_repair = {k for k in common if new[k]["setting"].get("corrected")
                    and new[k].get("repair_matches_payload") is False}
    common = [k for k in common if k not in other_repair]
    diffs: dict[str, list[float]] = {}
    same_answers = 0
    pred_diffs: list[float] = []
    crossings = 0
    for key in common:
        a, b = new[key]["features"], old[key]["features"]
        for name in sorted(set(a) & set(b)):
            if _finite(a[name]) and _finite(b[name]):
                diffs.setdefault(name, []).append(abs(float(a[name]) - float(b[name])))
        same_answers += new[key].get("slm_answer") == old[key].get("slm_answer")
        if predictor is not None:
            corrected = bool(new[key]["setting"].get("corrected"))
            pa = predictor.estimate(a, refined=True, corrected=corrected, explain=False).value
            pb = predictor.estimate(b, refined=True, corrected=corrected, explain=False).value
            pred_diffs.append(abs(pa - pb))
            if min_utility is not None:
                crossings += (pa >= min_utility) != (pb >= min_utility)
    out: dict[str, Any] = {
        "rows": len(common),
        "corrected_rows_repaired_otherwise": len(other_repair),
        "same_slm_answers": same_answers,
        "features": {name: {"max": max(v), "median": statistics.median(v)}
                     for name, v in diffs.items() if max(v) > 0},
        "unchanged_features": sorted(name for name, v in diffs.items() if max(v) == 0),
    }
    if pred_diffs:
        out["refined_prediction"] = {"max": max(pred_diffs),
                                     "median": statistics.median(pred_diffs),
                                     "min_utility": min_utility,
                                     "rows_changing_side": crossings}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", help="the feature file of the new pass")
    ap.add_argument("--against", default=str(DATA_DIR / "features-cloud_qwen15-slm.jsonl.gz"),
                    help="the earlier pass (default: the committed SmolLM2 features)")
    ap.add_argument("--no-predictor", action="store_true",
                    help="features only (no regressor loaded)")
    args = ap.parse_args(argv)
    predictor = min_u = None
    if not args.no_predictor:
        from preflight.core.config import Settings
        from preflight.core.utility.predictor import UtilityPredictor

        predictor = UtilityPredictor.load()
        min_u = Settings().policy.min_utility
    result = compare(_index(Path(args.new)), _index(Path(args.against)), predictor, min_u)
    if not result["rows"]:
        print("no row in common: make NEW from the same rows (features --max-docs N --out NEW)",
              file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, default=lambda x: round(x, 8)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
