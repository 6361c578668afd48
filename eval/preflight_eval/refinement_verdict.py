"""Does the refinement help? Instant against refined, out of fold, per setting kind.

:func:`by_setting_kind` scores the ε-only baseline, the instant (``fast``) and refined
(``full``) models and the per-setting mean on the out-of-fold predictions of
:func:`preflight_eval.eval_utility.cross_validated` (train + calibration documents only),
per setting kind. The refinement costs a local-model run of seconds, so it has to earn its
place: the verdict says "refined" only where it measurably helps — the 95 % interval of
(instant Failed − refined Failed), from resampling whole documents, lies above zero —
and "instant" elsewhere (a point estimate of a point or two flips from one retrain to the
next). The bundle carries the verdicts (``metrics["refinement"]``) and the product shows
the instant value for an "instant" kind, saying why, without running the local model
(:mod:`preflight.app.refinement`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from preflight.core.utility.predictor import cost_metrics

#: The words the reports use for a setting kind (the rows' names otherwise).
KIND_WORDS = {"identifiers-dx": "hybrid"}
BOOTSTRAP = 2000                 # document resamples for the interval of a Failed difference


def reduction_interval(rows: Sequence[Mapping[str, Any]], base: np.ndarray, full: np.ndarray,
                       resamples: int = BOOTSTRAP, seed: int = 0) -> list[float]:
    """95 % interval of (``base`` Failed − ``full`` Failed), in points, from resampling
    whole documents with replacement: how far a few dozen documents pin the difference
    down."""
    y = np.asarray([r["target"] for r in rows])
    gap = ((np.abs(base - y) > 0.1).astype(float) - (np.abs(full - y) > 0.1)) * 100
    groups = np.asarray([r["group"] for r in rows])
    per_doc = [gap[groups == g] for g in np.unique(groups)]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        pick = rng.integers(0, len(per_doc), len(per_doc))
        draws.append(float(np.concatenate([per_doc[i] for i in pick]).mean()))
    return [round(float(v), 1) for v in np.percentile(draws, [2.5, 97.5])]


def by_setting_kind(rows: Sequence[Mapping[str, Any]], y: np.ndarray,
                    preds: Mapping[str, np.ndarray], fast: str, full: str,
                    ) -> dict[str, dict[str, Any]]:
    """Per setting kind: rows, Failed and RMSE of every model in ``preds``, the 95 %
    interval of the refinement's gain (``fast``'s Failed − ``full``'s, points, by
    document) and the verdict (``show``: "refined" when that interval lies above zero,
    else "instant")."""
    kinds = np.asarray([r.get("kind", "") for r in rows])
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted(set(kinds)):
        mask = kinds == kind
        models = {}
        for name, p in preds.items():
            m = cost_metrics(y[mask], p[mask])
            models[name] = {"failed_pct": round(m.failed, 1), "rmse": round(m.rmse, 4)}
        picked = [r for r, keep in zip(rows, mask) if keep]
        gain = reduction_interval(picked, preds[fast][mask], preds[full][mask])
        out[str(kind)] = {"rows": int(mask.sum()), "models": models, "gain_ci": gain,
                          "show": "refined" if gain[0] > 0 else "instant"}
    return out


def verdicts(by_kind: Mapping[str, Mapping[str, Any]], fast: str, full: str
             ) -> dict[str, dict[str, Any]]:
    """What the bundle carries: per setting kind, which value to show and the two Failed
    shares it was decided on."""
    return {kind: {"show": e["show"], "rows": e["rows"],
                   "failed_instant_pct": e["models"][fast]["failed_pct"],
                   "failed_refined_pct": e["models"][full]["failed_pct"],
                   "gain_ci": e.get("gain_ci")}
            for kind, e in by_kind.items()}


def table(by_kind: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """Markdown rows: kind, rows, Failed % / RMSE of each of ``names``, the refinement's
    gain interval, the verdict."""
    out = ["| setting kind | rows | " + " | ".join(f"{n} Failed / RMSE" for n in names)
           + " | refinement's gain, 95 % | shown |",
           "|---|---|" + "---|" * len(names) + "---|---|"]
    for kind, e in by_kind.items():
        cells = [f"{e['models'][n]['failed_pct']:.1f} % / {e['models'][n]['rmse']:.3f}"
                 for n in names]
        gain = e.get("gain_ci")
        ci = f"{gain[0]:+.1f} … {gain[1]:+.1f}" if gain else "—"
        out.append(f"| {KIND_WORDS.get(kind, kind)} | {e['rows']} | " + " | ".join(cells)
                   + f" | {ci} | {e['show']} |")
    return out
