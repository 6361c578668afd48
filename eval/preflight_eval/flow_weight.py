"""Choose the weight of a user's own sends in a provider's refit, out of fold on the stream.

``flow_experiment`` scores each weight on its evaluation sends; choosing the weight there
would read them once per candidate. This chooses it on the *stream* sends alone: each
document's sends are predicted by a refit on the other documents' stream sends (grouped
folds, as :class:`~preflight.core.utility.flow.FlowLearner` refits in the product), and
the weight with the lowest out-of-fold Failed (the instant value both faces show; RMSE
breaks ties) wins. ``flow_experiment --weights W`` then reads the evaluation sends for it.
Beside the refits, two updates that keep the prior and only recalibrate its output on the
user's pairs (an offset; a line shrunk towards identity), out of fold the same way: the
alternative to a refit, and the test of a level shift a kept-share target would learn.

    python -m preflight_eval.flow_weight --cloud-role slm_qwen05 --weights 1,5,20,100,300

Reads the committed sends (``data/utility/flow-sends-ROLE.jsonl.gz``) or ``--cache``'s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np


def out_of_fold(stream: Sequence[Mapping[str, Any]], weight: int, folds: int, *,
                prior: Any, shipped_rows: Path, workdir: Path) -> np.ndarray:
    """Each stream send's instant prediction by a refit on the other documents' sends."""
    from sklearn.model_selection import GroupKFold

    from preflight.core.utility.flow import FlowLearner, ProviderKey

    key = ProviderKey.of(stream[0]["meta"])
    groups = [r["doc_id"] for r in stream]
    out = np.zeros(len(stream))
    for fit_idx, held_idx in GroupKFold(n_splits=folds).split(stream, groups=groups):
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            learner = FlowLearner(Path(tmp) / "flow.sqlite", predictor=prior,
                                  refit_every=10**9, shipped_rows=shipped_rows,
                                  bundle_root=Path(tmp) / "utility", user_weight=weight)
            for i in fit_idx:
                learner.record(stream[i]["features"], stream[i]["realized"],
                               stream[i]["meta"])
            learner.refit(key)
            predictor = learner.predictor_for(key)
            for i in held_idx:
                out[i] = predictor.predict_fast(stream[i]["features"], corrected=bool(
                    stream[i]["meta"].get("corrected")))
    return out


def recalibrated(stream: Sequence[Mapping[str, Any]], shown: Sequence[float], folds: int,
                 how: str, shrink: float = 5.0) -> np.ndarray:
    """Out of fold: the prior's instant value moved by the other documents' mean residual
    (``offset``), or mapped by a line fitted to them, shrunk towards identity (``line``)."""
    from sklearn.model_selection import GroupKFold

    p = np.asarray(shown, dtype=float)
    y = np.array([r["realized"] for r in stream], dtype=float)
    out = np.zeros(len(p))
    for fit_idx, held_idx in GroupKFold(n_splits=folds).split(p, groups=[r["doc_id"]
                                                                          for r in stream]):
        if how == "offset":
            out[held_idx] = p[held_idx] + (y[fit_idx] - p[fit_idx]).mean()
            continue
        x = np.c_[np.ones(len(fit_idx)), p[fit_idx]]
        a, b = np.linalg.solve(x.T @ x + shrink * np.eye(2),
                               x.T @ y[fit_idx] + shrink * np.array([0.0, 1.0]))
        out[held_idx] = a + b * p[held_idx]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cloud-role", default="slm_qwen05")
    ap.add_argument("--cache", default=None, help="a flow_experiment cache folder "
                    "(default: the committed sends)")
    ap.add_argument("--weights", default="1,5,20,100,300")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--sends", type=int, default=50, help="the first N stream sends")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from preflight.core.utility.flow import shipped_rows_path
    from preflight.core.utility.predictor import (
        UtilityPredictor, cost_metrics, shipped_bundle_path,
    )
    from preflight_eval.flow_experiment import committed_sends, read_cache
    from preflight_eval.utility_data.shards import read_rows

    path = (Path(args.cache) / "preflight-flow-experiment" / f"sends-{args.cloud_role}.jsonl"
            if args.cache else committed_sends(args.cloud_role))
    rows = read_rows(path) if path.suffix == ".gz" else read_cache(path)
    stream = [r for r in rows if r["role"] == "stream"][:args.sends]
    prior = UtilityPredictor.load(shipped_bundle_path())
    realized = [r["realized"] for r in stream]
    shown = [prior.predict_fast(r["features"]) for r in stream]
    rows = [{"weight": None, **cost_metrics(realized, shown).to_json()}]
    with tempfile.TemporaryDirectory() as work:
        for w in (int(x) for x in args.weights.split(",")):
            pred = out_of_fold(stream, w, args.folds, prior=prior,
                               shipped_rows=shipped_rows_path(), workdir=Path(work))
            rows.append({"weight": w, **cost_metrics(realized, list(pred)).to_json()})
    recal = {how: cost_metrics(realized, list(recalibrated(stream, shown, args.folds, how)))
             .to_json() for how in ("offset", "line")}
    print(f"{len(stream)} stream sends of {len({r['doc_id'] for r in stream})} documents, "
          f"{args.folds} folds by document (the prior alone: weight —)")
    print("| refit, weight | Failed (out of fold) % | RMSE |\n|---|---|---|")
    for r in rows:
        print(f"| {r['weight'] or '—'} | {r['failed_pct']} | {r['rmse']} |")
    for how, m in recal.items():
        print(f"| no refit: the prior's output, {how} | {m['failed_pct']} | {m['rmse']} |")
    best = min(rows[1:], key=lambda r: (r["failed_pct"], r["rmse"]))
    print(f"chosen: weight {best['weight']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "recalibrated": recal,
                                               "chosen": best["weight"]}, indent=1),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
