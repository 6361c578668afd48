"""Does the refinement help? Instant against refined, out of fold, per setting kind.

:func:`by_setting_kind` scores the ε-only baseline, the instant (``fast``) and refined
(``full``) models and the per-setting mean on the out-of-fold predictions of
:func:`preflight_eval.eval_utility.cross_validated` (train + calibration documents only),
per setting kind. Where the refined model's Failed is higher than the instant one's, the
verdict says "instant": the bundle carries the verdicts (``metrics["refinement"]``) and
the product shows the instant value for that kind, saying why
(:mod:`preflight.app.refinement`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from preflight.core.utility.predictor import cost_metrics

#: The words the reports use for a setting kind (the rows' names otherwise).
KIND_WORDS = {"identifiers-dx": "hybrid"}


def by_setting_kind(rows: Sequence[Mapping[str, Any]], y: np.ndarray,
                    preds: Mapping[str, np.ndarray], fast: str, full: str,
                    ) -> dict[str, dict[str, Any]]:
    """Per setting kind: rows, Failed and RMSE of every model in ``preds``, and the
    verdict (``show``: "refined" when ``full``'s Failed is at most ``fast``'s, else
    "instant")."""
    kinds = np.asarray([r.get("kind", "") for r in rows])
    out: dict[str, dict[str, Any]] = {}
    for kind in sorted(set(kinds)):
        mask = kinds == kind
        models = {}
        for name, p in preds.items():
            m = cost_metrics(y[mask], p[mask])
            models[name] = {"failed_pct": round(m.failed, 1), "rmse": round(m.rmse, 4)}
        show = "refined" if models[full]["failed_pct"] <= models[fast]["failed_pct"] \
            else "instant"
        out[str(kind)] = {"rows": int(mask.sum()), "models": models, "show": show}
    return out


def verdicts(by_kind: Mapping[str, Mapping[str, Any]], fast: str, full: str
             ) -> dict[str, dict[str, Any]]:
    """What the bundle carries: per setting kind, which value to show and the two Failed
    shares it was decided on."""
    return {kind: {"show": e["show"], "rows": e["rows"],
                   "failed_instant_pct": e["models"][fast]["failed_pct"],
                   "failed_refined_pct": e["models"][full]["failed_pct"]}
            for kind, e in by_kind.items()}


def table(by_kind: Mapping[str, Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """Markdown rows: kind, rows, Failed % / RMSE of each of ``names``, the verdict."""
    out = ["| setting kind | rows | " + " | ".join(f"{n} Failed / RMSE" for n in names)
           + " | shown |", "|---|---|" + "---|" * len(names) + "---|"]
    for kind, e in by_kind.items():
        cells = [f"{e['models'][n]['failed_pct']:.1f} % / {e['models'][n]['rmse']:.3f}"
                 for n in names]
        out.append(f"| {KIND_WORDS.get(kind, kind)} | {e['rows']} | " + " | ".join(cells)
                   + f" | {e['show']} |")
    return out
