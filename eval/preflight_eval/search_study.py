"""How "Find best ε" should widen after a candidate falls short: measured on documents the
regressor never saw.

"Find best ε" (:func:`preflight.core.utility.recommend.recommend`) refines the instant
curve's candidate with the local SLM (one refinement ≈ 4 s on 2 cores). When the refined
prediction falls short, two ways to go on:

* ``shift`` (shipped): move to where the instant curve clears the minimum by the gap just
  observed, refine there (and once at the midpoint if that passes far above the first
  candidate), and only then check the largest ε;
* ``bisect`` (before session 11): check the largest ε, then bisect on refined predictions
  within the budget (three refinements whenever the first candidate fails).

For each of ``--docs`` corpus documents that have no row in the training data (in the
generator's order, or the ones ``--doc-ids`` names), this runs both on the same d_X
preparation (the whole text, or ``--policy``'s, e.g. the hybrid) at the shipped minimum
utility, with refinements shared between them (an ε
refined for one is not recomputed for the other), and reports per way: refinements per
search, the SLM seconds they took, the decision and the chosen ε. With
``--truth-points K`` it also refines K log-spaced ε per document, the reference for "the
smallest ε that passes" (the first passing grid point).

    python -m preflight_eval.search_study --docs 12 --truth-points 6 --json out.json

Session 11's runs are committed (``data/utility/search_study.json``, and
``search_study-hybrid.json`` with ``--policy identifiers-dx``); as the generator gives rows
to more documents, ``--doc-ids data/utility/search_study.json`` studies the same 12.

``--margin-from-data`` instead measures what the second candidate's margin
(:data:`~preflight_eval.refined_search.SHIFT_MARGIN`) must cover: from out-of-fold
instant and refined predictions on the training and calibration documents' uncorrected
d_X rows, how much one document's gap (instant − refined) moves from one ε to the next
larger one; the second candidate passes when it moves by less than the margin.

    python -m preflight_eval.search_study --margin-from-data --rows 1461

Timings are the refinements' own seconds on whatever else the machine was doing; the
benchmark of record is :mod:`preflight_eval.bench_utility` on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.utility.assess import Assessment, UtilityAssessor
from preflight.core.utility.recommend import log_grid, prepared_range
from preflight_eval.refined_search import SHIFT_MARGIN, WIDENINGS
from preflight_eval.refined_search import recommend_refined as recommend
from preflight_eval.utility_data.rows import add_data_arguments, features_path, load

SEED = 1


class SharedRefinements:
    """An assessor whose refinements are remembered by sanitized text, with their seconds,
    so two searches over one preparation pay once for an ε both refine."""

    def __init__(self, inner: UtilityAssessor) -> None:
        self._inner = inner
        self.seconds: dict[str, float] = {}
        self._done: dict[str, Assessment] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def refine(self, original, sanitized, spans=(), **kw) -> Assessment:
        key = sanitized.text
        if key not in self._done:
            t = time.perf_counter()
            self._done[key] = self._inner.refine(original, sanitized, spans, **kw)
            self.seconds[key] = time.perf_counter() - t
        return self._done[key]


def unseen_documents(n: int, ids: list[str] | None = None) -> list[Any]:
    """The first ``n`` corpus documents, in the generator's order, without a data row —
    or the documents named by ``ids`` (a study's own list, which stays fixed while the
    generator gives rows to the documents that follow the committed ones)."""
    from preflight_eval.utility_data.corpus import DATA_DIR, SEED as CORPUS_SEED
    from preflight_eval.utility_data.generate import corpus_documents
    from preflight_eval.utility_data.shards import read_rows

    docs = corpus_documents(DATA_DIR, CORPUS_SEED)
    if ids:
        by_id = {d.doc_id: d for d in docs}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise SystemExit(f"not in the corpus: {', '.join(missing)}")
        return [by_id[i] for i in ids]
    seen = set()
    for path in DATA_DIR.glob("cloud_*.jsonl.gz"):
        seen |= {r["doc_id"] for r in read_rows(path)}
    return [d for d in docs if d.doc_id not in seen][:n]


def search_row(rec: Any, shared: SharedRefinements, prepared: Any) -> dict[str, Any]:
    eps = [p["epsilon"] for p in rec.probes if p["stage"] == "refined"]
    texts = [prepared.at(e).text for e in eps]
    return {"decision": rec.decision, "epsilon": rec.epsilon,
            "predicted": rec.predicted_utility, "refinements": len(eps),
            "refined_at": eps,
            "slm_seconds": round(sum(shared.seconds.get(t, 0.0) for t in texts), 2)}


def study_document(doc: Any, services: Any, assessor: UtilityAssessor, min_u: float,
                   truth_points: int, margin: float = SHIFT_MARGIN,
                   policy: str | None = None) -> dict[str, Any]:
    spans = services.detector().detect(doc.text)
    if policy:      # a d_X policy as the window prepares it (e.g. the hybrid)
        prepared = services.mechanism(policy).prepare(doc.text, list(spans),
                                                      SanitizeParams(seed=SEED))
    else:
        prepared = services.dx().prepare(doc.text, spans, SanitizeParams(seed=SEED,
                                                                         scope="all"))
    shared = SharedRefinements(assessor)
    row: dict[str, Any] = {"doc_id": doc.doc_id, "kind": doc.kind,
                           "words": len(doc.text.split())}
    for widen in WIDENINGS:
        rec = recommend(doc.text, prepared, shared, min_u, spans=spans, widen=widen,
                        shift_margin=margin)
        row[widen] = search_row(rec, shared, prepared)
        curve = rec.curve
    row["instant_max"] = round(max(u for _e, u in curve), 4)
    if truth_points:
        lo, hi = prepared_range(prepared)
        grid = log_grid(lo, hi, truth_points)
        values = [float(shared.refine(doc.text, prepared.at(e), spans).predicted) for e in grid]
        row["truth"] = [[round(e, 3), round(v, 4)] for e, v in zip(grid, values)]
        passing = [e for e, v in zip(grid, values) if v >= min_u]
        row["first_passing_grid_epsilon"] = passing[0] if passing else None
    return row


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"documents": len(rows)}
    for widen in WIDENINGS:
        runs = [r[widen] for r in rows]
        out[widen] = {
            "refinements_mean": round(statistics.mean(r["refinements"] for r in runs), 2),
            "refinements_histogram": {k: sum(r["refinements"] == k for r in runs)
                                      for k in range(1, 5)},
            "slm_seconds_median": round(statistics.median(r["slm_seconds"] for r in runs), 2),
            "sends": sum(r["decision"] == "send" for r in runs),
        }
    both = [r for r in rows if r["shift"]["decision"] == r["bisect"]["decision"] == "send"]
    ratios = [r["shift"]["epsilon"] / r["bisect"]["epsilon"] for r in both]
    out["same_decision"] = sum(r["shift"]["decision"] == r["bisect"]["decision"] for r in rows)
    out["first_candidate_passed"] = sum(r["shift"]["refinements"] == 1
                                        and r["shift"]["decision"] == "send" for r in rows)
    if ratios:
        out["epsilon_ratio_shift_over_bisect"] = {
            "median": round(statistics.median(ratios), 3),
            "geometric_mean": round(math.exp(statistics.mean(math.log(x) for x in ratios)), 3),
            "shift_smaller_or_equal": sum(x <= 1.0 + 1e-9 for x in ratios),
            "documents": len(ratios)}
    truths = [r for r in rows if r.get("first_passing_grid_epsilon")]
    if truths:
        out["truth"] = {"documents_with_a_passing_grid_point": len(truths)}
        for w in WIDENINGS:
            ratios = [r[w]["epsilon"] / r["first_passing_grid_epsilon"]
                      for r in truths if r[w]["epsilon"]]
            out["truth"][w] = {"chosen_over_first_passing_grid_epsilon_median":
                               round(statistics.median(ratios), 3) if ratios else None}
    return out


def gap_drift(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Quantiles of the change in (instant − refined) between a document's consecutive
    uncorrected d_X settings, from out-of-fold predictions (no test document read)."""
    import numpy as np

    from preflight.core.utility.features import FAST_MODEL_FEATURES, FULL_MODEL_FEATURES
    from preflight.core.utility.fitting import out_of_fold_residuals

    plain = [r for r in rows if r["split"] != "test" and r["variant"] != "corrected"]
    # residual = realized − predicted, so instant − refined = r_refined − r_instant
    gaps = (out_of_fold_residuals(plain, FULL_MODEL_FEATURES)
            - out_of_fold_residuals(plain, FAST_MODEL_FEATURES))
    by_doc: dict[str, list[tuple[float, float]]] = {}
    for r, g in zip(plain, gaps):
        if r["method"] == "dx":
            by_doc.setdefault(r["group"], []).append((float(r["epsilon"]), float(g)))
    drift = np.asarray([b[1] - a[1] for pts in by_doc.values()
                        for a, b in zip(sorted(pts), sorted(pts)[1:])])
    return {"documents": len(by_doc), "pairs": int(drift.size),
            "gap_sd": round(float(np.std(gaps)), 3),
            "quantiles": {q: round(float(np.quantile(drift, q)), 3)
                          for q in (0.5, 0.6, 0.7, 0.75, 0.8, 0.9)},
            "passes_with_margin": {m: round(float((drift <= m).mean()), 3)
                                   for m in (0.0, 0.02, 0.05, 0.07, 0.1)}}


def _ids(spec: str | None) -> list[str] | None:
    if not spec:
        return None
    if spec.endswith(".json"):
        return [r["doc_id"] for r in json.loads(Path(spec).read_text("utf-8"))["documents"]]
    return [i.strip() for i in spec.split(",") if i.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=12)
    ap.add_argument("--doc-ids", default=None,
                    help="a JSON file of an earlier run (its documents) or comma-separated "
                         "ids: study these documents instead of the first unseen ones")
    ap.add_argument("--truth-points", type=int, default=0)
    ap.add_argument("--policy", default=None,
                    help="a d_X policy to prepare the documents with, as the window does "
                         "(e.g. identifiers-dx); default: d_X on the whole text")
    ap.add_argument("--min-utility", type=float, default=None,
                    help="default: the shipped default minimum utility")
    ap.add_argument("--shift-margin", type=float, default=None,
                    help="the second candidate's margin (default: the shipped one)")
    ap.add_argument("--margin-from-data", action="store_true",
                    help="measure the gap's drift on the committed rows instead")
    add_data_arguments(ap)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.margin_from_data:
        drift = gap_drift(load(features_path(args), args.rows).rows)
        print(json.dumps(drift, indent=2))
        return 0

    from preflight.app.services import build_services
    from preflight.core.config import Settings

    margin = SHIFT_MARGIN if args.shift_margin is None else args.shift_margin
    settings = Settings()
    min_u = settings.policy.min_utility if args.min_utility is None else args.min_utility
    services = build_services(settings)
    assessor = UtilityAssessor(services.slm(), services.embedder(), services.predictor())
    rows = []
    for doc in unseen_documents(args.docs, _ids(args.doc_ids)):
        t = time.perf_counter()
        row = study_document(doc, services, assessor, min_u, args.truth_points, margin,
                             args.policy)
        row["seconds"] = round(time.perf_counter() - t, 1)
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("doc_id", "kind", "shift", "bisect")}),
              file=sys.stderr, flush=True)
    result = {"min_utility": min_u, "shift_margin": margin, "policy": args.policy or "dx",
              "summary": summary(rows), "documents": rows}
    print(json.dumps(result["summary"], indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
