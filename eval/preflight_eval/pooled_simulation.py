"""How Failed falls as the company pools more learning pairs (simulation).

Simulated users send documents of the TRAIN split of the measured data set
(``data/utility/features-<stand-in>-<slm>.jsonl.gz``): each pair is one measured row
(document × setting: its features as measured) drawn with replacement, and its realized
utility is the row's measured E plus per-user noise. The pairs are grouped into laptops
of ``--per-user`` sends and trained with :func:`preflight_eval.train_company.train_provider`
— the very code that trains on the central store — and the bundle's ``full`` model is
scored on the TEST documents exactly as ``eval_utility`` scores it (plain rows; Failed =
Wasted $ + Wasted ε at the ±0.1 margin), for several seeds.

Noise model: realized = E_row + b_user + e_send, clipped to [−1, 1], with b_user ~
N(0, σ_user) once per user and e_send ~ N(0, σ_send) per send. E_row is one answer of the
stand-in; a real user asks other questions about other documents and the LLM samples
another answer each time, so a user's realized utilities sit a little above or below the
measured ones (b_user: their tasks and prompts) and scatter from send to send (e_send:
sampling). The data set has one answer per row, so neither σ is measured here; the
defaults (0.03, 0.05) are small beside the spread of E over the training rows (printed
with the table, about 0.25), and are stated there; ``--sigma-user``/``--sigma-send``
change them.

References beside the pooled rows: a bundle (``--shipped``, default the shipped one; a
prior fitted on another stand-in shows what pooling corrects — e.g. the interim Gemma 3
270M bundle, ``git show 8d7d01b:resources/utility/regressor.joblib``) and the same
``full`` model fitted on the measured TRAIN rows without noise (``eval_utility``'s row:
what perfect pooling of these documents gives).

    python -m preflight_eval.pooled_simulation                 # 100, 1,000, 5,000 pairs
    python -m preflight_eval.pooled_simulation --sizes 100,1000 --seeds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.utility.features import FULL_MODEL_FEATURES
from preflight.core.utility.fitting import fit_model, predict_rows
from preflight.core.utility.flow import ProviderKey
from preflight.core.utility.predictor import UtilityPredictor, cost_metrics, \
    shipped_bundle_path
from preflight_eval.train_company import train_provider
from preflight_eval.utility_data.rows import DataSet, add_data_arguments, features_path, load

SIZES = (100, 1000, 5000)
SEEDS = 5
SIGMA_USER = 0.03
SIGMA_SEND = 0.05
PER_USER = 20
COMMAND = "python -m preflight_eval.pooled_simulation"


def simulate_pairs(train: Sequence[dict[str, Any]], n: int, rng: np.random.Generator, *,
                   sigma_user: float, sigma_send: float, per_user: int
                   ) -> list[dict[str, Any]]:
    """``n`` pooled pairs from ``ceil(n / per_user)`` simulated users (module doc)."""
    users = -(-n // per_user)
    bias = rng.normal(0.0, sigma_user, users)
    picks = rng.integers(0, len(train), n)
    noise = rng.normal(0.0, sigma_send, n)
    out = []
    for i, (k, e) in enumerate(zip(picks, noise)):
        row = {key: v for key, v in train[k].items() if key != "split"}
        user = i // per_user
        row.update(target=float(np.clip(train[k]["target"] + bias[user] + e, -1.0, 1.0)),
                   document=train[k]["group"], laptop=f"user{user:04d}",
                   group=f"user{user:04d}")
        out.append(row)
    return out


def score(predicted: Sequence[float], test: Sequence[dict[str, Any]]) -> dict[str, float]:
    y = np.asarray([r["target"] for r in test], dtype=float)
    p = np.asarray(predicted, dtype=float)
    out = cost_metrics(y, p).to_json()
    out["mae"] = round(float(np.mean(np.abs(p - y))), 4)
    return out


def full_predictions(bundle_models: dict[str, Any], test: Sequence[dict[str, Any]]
                     ) -> np.ndarray:
    entry = bundle_models["full"]
    return predict_rows(entry["estimator"], test, entry["features"])


def run(data: DataSet, sizes: Sequence[int] = SIZES, seeds: int = SEEDS, *,
        sigma_user: float = SIGMA_USER, sigma_send: float = SIGMA_SEND,
        per_user: int = PER_USER, shipped: Path | None = None) -> dict[str, Any]:
    train = data.split("train")
    test = [r for r in data.split("test") if r["variant"] == "plain"]
    plain_train = [r for r in train if r["variant"] == "plain"]
    if not plain_train or not test:
        raise ValueError(f"{data.path.name} has no plain TRAIN or TEST rows")
    key = ProviderKey("stand-in", data.cloud)
    report: dict[str, Any] = {
        "file": data.path.name, "cloud": data.cloud,
        "train_rows": len(train), "plain_train_rows": len(plain_train),
        "train_documents": len({r["group"] for r in train}),
        "test_rows": len(test), "test_documents": len({r["group"] for r in test}),
        "noise": {"sigma_user": sigma_user, "sigma_send": sigma_send,
                  "spread_of_E": round(statistics.pstdev(r["target"] for r in train), 4)},
        "per_user": per_user, "seeds": seeds, "pooled": [],
    }
    for n in sizes:
        runs = []
        for seed in range(seeds):
            rng = np.random.default_rng([seed, n])
            pairs = simulate_pairs(train, n, rng, sigma_user=sigma_user,
                                   sigma_send=sigma_send, per_user=per_user)
            bundle = train_provider(pairs, key, seed=seed, source="simulated pooled pairs")
            m = score(full_predictions(bundle["models"], test), test)
            m.update(documents=len({p["document"] for p in pairs}),
                     distinct_rows=len({(p["document"], p["kind"], p.get("epsilon_setting"),
                                         p["variant"]) for p in pairs}))
            runs.append(m)
        report["pooled"].append({"pairs": n, "laptops": -(-n // per_user), "runs": runs,
                                 **_medians(runs)})
    measured = fit_model(plain_train, FULL_MODEL_FEATURES, 0)
    report["measured_train"] = score(predict_rows(measured, test, FULL_MODEL_FEATURES), test)
    path = shipped or shipped_bundle_path()
    try:
        bundle = UtilityPredictor.load(path, prefer_user=False).bundle
        report["shipped"] = {**score(full_predictions(bundle["models"], test), test),
                             "source": bundle.get("source", ""), "rows": bundle.get("n_rows")}
    except Exception as exc:  # noqa: BLE001 - the reference is optional; say why it is absent
        report["shipped"] = {"error": f"{type(exc).__name__}: {exc}"}
    return report


def _medians(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    med = {k: round(statistics.median(r[k] for r in runs), 4)
           for k in ("failed_pct", "mae", "rmse", "documents", "distinct_rows")}
    med["failed_range"] = (min(r["failed_pct"] for r in runs),
                           max(r["failed_pct"] for r in runs))
    return med


def format_table(report: dict[str, Any]) -> str:
    nz = report["noise"]
    lines = [
        f"Pooled training, simulated: {report['file']} (stand-in {report['cloud']}); pairs "
        f"drawn from {report['train_rows']} TRAIN rows of {report['train_documents']} "
        f"documents, scored on {report['test_rows']} plain rows of "
        f"{report['test_documents']} TEST documents; {report['per_user']} pairs per "
        f"simulated laptop; noise σ_user {nz['sigma_user']}, σ_send {nz['sigma_send']} "
        f"(spread of E over the TRAIN rows {nz['spread_of_E']}); median over "
        f"{report['seeds']} seeds.",
        "",
        "| training data | pairs | laptops | distinct documents · rows behind them | "
        "Failed (median, range) | MAE | RMSE |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in report["pooled"]:
        lo, hi = p["failed_range"]
        lines.append(f"| pooled pairs | {p['pairs']:,} | {p['laptops']} | "
                     f"{p['documents']:g} · {p['distinct_rows']:g} | {p['failed_pct']:.1f} % "
                     f"({lo:.1f}–{hi:.1f}) | {p['mae']:.3f} | {p['rmse']:.3f} |")
    m = report["measured_train"]
    lines.append(f"| measured TRAIN rows, no noise | {report['plain_train_rows']} | — | "
                 f"{report['train_documents']} · {report['plain_train_rows']} | "
                 f"{m['failed_pct']:.1f} % | {m['mae']:.3f} | {m['rmse']:.3f} |")
    s = report["shipped"]
    if "error" in s:
        lines.append(f"| shipped bundle | — | — | — | not loadable ({s['error']}) | | |")
    else:
        # a bundle fitted on this very file has read the TEST rows (the shipped estimators
        # are refitted on train + test): not a held-out score, and said so
        origin = ("this stand-in — its fit read these TEST rows" if report["file"] in
                  str(s["source"]) else "other stand-in")
        lines.append(f"| reference bundle ({s['source']}) | — | — | {origin} | "
                     f"{s['failed_pct']:.1f} % | {s['mae']:.3f} | {s['rmse']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_arguments(ap)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--sigma-user", type=float, default=SIGMA_USER)
    ap.add_argument("--sigma-send", type=float, default=SIGMA_SEND)
    ap.add_argument("--per-user", type=int, default=PER_USER)
    ap.add_argument("--shipped", default=None, help="bundle to compare with (default: shipped)")
    ap.add_argument("--json", default=None, help="also write the report as JSON here")
    args = ap.parse_args(argv)
    path = features_path(args)
    if not path.is_file():
        print(f"no features file {path}; compute it with "
              "python -m preflight_eval.utility_data.features", file=sys.stderr)
        return 2
    try:
        report = run(load(path, args.rows), [int(s) for s in args.sizes.split(",")],
                     args.seeds,
                     sigma_user=args.sigma_user, sigma_send=args.sigma_send,
                     per_user=args.per_user,
                     shipped=Path(args.shipped) if args.shipped else None)
    except ValueError as exc:
        print(f"cannot simulate: {exc}", file=sys.stderr)
        return 2
    print(format_table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
