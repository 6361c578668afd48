"""Privacy–utility table on held-out documents (issue 14, item 6).

For each of ``--docs`` test-split business documents (the document loading of
:mod:`preflight_eval.bench_privacy`: documents joined to ~``--tokens`` tokens, the
detected PII spans being the recorded ground-truth values) and each policy — ``dx-all``
(d_X on the whole text) and ``identifiers-dx`` (the hybrid: placeholders for identifiers,
d_X on the rest) — at 5 ε over the calibrated range:

- the optimal (Bayesian) attack on the d_X noise, beside the two naive ones (identity:
  guess the released token; nearest-neighbour inversion), over all attacked tokens and
  over those inside PII spans — one attack run per document and policy gives the curve;
- the predicted utility (the assessor's instant stage, ``fast``) at each ε;
- the local SLM's reconstruction attack at ``--slm-points`` of the ε (slow): the share of
  protected values it writes again — every protected value is a ground-truth value of the
  document, since the spans are the truth — and the share of changed words it restores.

Prints a markdown table of means over documents ± standard error (over documents) and
whether the optimal attack beats both naive ones on average (the seed's finding).
Per-(document, policy, ε) results are cached under ``--cache`` (keyed by the settings),
so an interrupted run resumes where it stopped.

    python -m preflight_eval.eval_privacy [--docs 4] [--tokens 600] [--seed 7]
        [--points 5] [--slm-points 1,3] [--no-slm] [--slm-docs N] [--cache DIR]
        [--json OUT]

The SLM attack takes 3–5 minutes per run on 2 busy cores (SmolLM2-135M); ``--slm-docs``
limits it to the first documents (their SLM cells average fewer documents: the table's
"SLM" columns say how many values and words they pooled).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from preflight.core.fsutil import atomic_write_text

POLICIES = ("dx-all", "identifiers-dx")
ATTACK = ("optimal", "optimal_pii", "identity", "nearest", "utility")
SLM = ("slm_values", "slm_words")
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "preflight_eval_privacy"


def epsilon_grid(lo: float, hi: float, points: int = 5) -> tuple[float, ...]:
    """``points`` geometric points over the calibrated range (rounded to 0.1)."""
    return tuple(round(float(e), 1) for e in np.geomspace(lo, hi, points))


class ResultCache:
    """One JSON file per (document, policy, ε, part) in a folder named by the settings."""

    def __init__(self, root: Path, settings: dict[str, Any]) -> None:
        key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
        self.dir = Path(root) / key

    def _path(self, doc_id: str, policy: str, eps: float, part: str) -> Path:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in doc_id)
        return self.dir / f"{safe}__{policy}__{eps:g}__{part}.json"

    def get(self, doc_id: str, policy: str, eps: float, part: str) -> dict | None:
        p = self._path(doc_id, policy, eps, part)
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, doc_id: str, policy: str, eps: float, part: str, value: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self._path(doc_id, policy, eps, part), json.dumps(value))


@dataclass
class Evaluator:
    """The measurements of one document under one policy, from the collaborators the
    composition root builds (tests pass fakes with the same signatures):

    ``mechanism(policy)`` → ``.prepare(text, spans, SanitizeParams)``; ``attack`` →
    ``.run(prepared.dx_part, epsilon=, grid=, spans=)``; ``assessor`` →
    ``.fast(original, sanitized, spans, explain=False).predicted_fast``; ``reconstruct``
    → ``.run(original, sanitized, spans)`` (a ReconstructionAttack) or None (no SLM)."""

    mechanism: Callable[[str], Any]
    attack: Any
    assessor: Any
    reconstruct: Any
    cache: ResultCache
    seed: int = 7

    def document(self, doc_id: str, text: str, spans: Sequence[Any], policy: str,
                 grid: Sequence[float], slm_eps: Sequence[float]) -> list[dict]:
        """One row per ε of ``grid``: the attack figures, the utility and, at
        ``slm_eps`` (with a reconstruct attack), the SLM figures."""
        from preflight.core.sanitize.base import SanitizeParams

        prepared = None

        def prep() -> Any:
            nonlocal prepared
            if prepared is None:
                prepared = self.mechanism(policy).prepare(text, list(spans),
                                                          SanitizeParams(seed=self.seed))
            return prepared

        attack = [self.cache.get(doc_id, policy, e, "attack") for e in grid]
        if any(a is None for a in attack):
            attack = self._attack(doc_id, text, spans, policy, grid, prep())
        rows = []
        for e, a in zip(grid, attack):
            row = {"doc": doc_id, "policy": policy, "epsilon": e, **a}
            if self.reconstruct is not None and e in slm_eps:
                s = self.cache.get(doc_id, policy, e, "slm")
                if s is None:
                    s = self._slm(text, spans, prep().at(e))
                    self.cache.put(doc_id, policy, e, "slm", s)
                row.update(s)
            rows.append(row)
        return rows

    def _attack(self, doc_id: str, text: str, spans: Sequence[Any], policy: str,
                grid: Sequence[float], prepared: Any) -> list[dict]:
        res = self.attack.run(prepared.dx_part, epsilon=grid[0], grid=tuple(grid),
                              spans=list(spans))
        out = []
        for e in grid:
            p = min(res.curve, key=lambda q: abs(q.epsilon - e))
            util = self.assessor.fast(text, prepared.at(e), list(spans), explain=False)
            a = {"optimal": p.success, "optimal_pii": p.success_pii,
                 "identity": p.identity, "nearest": p.nearest, "mc_error": p.mc_error,
                 "utility": float(util.predicted_fast), "attacked": res.evaluated,
                 "pii_tokens": res.pii_tokens}
            self.cache.put(doc_id, policy, e, "attack", a)
            out.append(a)
        return out

    def _slm(self, text: str, spans: Sequence[Any], sanitized: Any) -> dict:
        t = time.perf_counter()
        rep = self.reconstruct.run(text, sanitized, list(spans))
        total = len(rep.values)
        return {"slm_values": rep.values_recovered / total if total else None,
                "slm_words": rep.restored_share,
                "slm_recovered": rep.values_recovered, "slm_total": total,
                "slm_restored": rep.words_restored, "slm_changed": rep.words_changed,
                "slm_seconds": round(time.perf_counter() - t, 1)}


def mean_se(values: Sequence[float | None]) -> tuple[float, float | None, int] | None:
    """(mean, standard error over the values or None for one, n) of the non-None values."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None
    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else None
    return statistics.fmean(xs), se, len(xs)


def aggregate(rows: Sequence[dict]) -> list[dict]:
    """Means over documents per (policy, ε), in first-seen policy order and ascending ε."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["policy"], r["epsilon"]), []).append(r)
    order = list(dict.fromkeys(r["policy"] for r in rows))
    out = []
    for (policy, eps), rs in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]),
                                                                     kv[0][1])):
        agg = {"policy": policy, "epsilon": eps, "docs": len(rs)}
        for m in ATTACK + SLM:
            agg[m] = mean_se([r.get(m) for r in rs])
        for k in ("slm_recovered", "slm_total", "slm_restored", "slm_changed"):
            if any(k in r for r in rs):
                agg[k] = sum(r.get(k, 0) for r in rs)
        out.append(agg)
    return out


def finding(rows: Sequence[dict]) -> dict[str, dict[str, Any]]:
    """Per policy: the mean over documents and ε of the three attacks, and whether the
    optimal one beats both naive ones (the seed's qualitative finding)."""
    out = {}
    for policy in dict.fromkeys(r["policy"] for r in rows):
        rs = [r for r in rows if r["policy"] == policy]
        m = {k: statistics.fmean(r[k] for r in rs) for k in ("optimal", "identity", "nearest")}
        out[policy] = {**m, "reproduced": m["optimal"] > m["identity"]
                       and m["optimal"] > m["nearest"]}
    return out


def _cell(v: tuple[float, float | None, int] | None) -> str:
    if v is None:
        return "—"
    mean, se, _n = v
    return f"{mean:.3f}" if se is None else f"{mean:.3f} ± {se:.3f}"


def render(table: Sequence[dict], found: dict[str, dict[str, Any]]) -> str:
    """The markdown table and the finding line."""
    lines = ["| policy | ε | optimal | optimal (PII) | identity | nearest | predicted utility"
             " | SLM: values recovered | SLM: changed words restored |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in table:
        vals, words = _cell(a["slm_values"]), _cell(a["slm_words"])
        if a["slm_values"] is not None:
            vals += f" ({a['slm_recovered']}/{a['slm_total']}, {a['slm_values'][2]} docs)"
        if a["slm_words"] is not None:
            words += f" ({a['slm_restored']}/{a['slm_changed']})"
        lines.append(f"| {a['policy']} | {a['epsilon']:g} | {_cell(a['optimal'])} | "
                     f"{_cell(a['optimal_pii'])} | {_cell(a['identity'])} | "
                     f"{_cell(a['nearest'])} | {_cell(a['utility'])} | {vals} | {words} |")
    lines.append("")
    for policy, f in found.items():
        verdict = "reproduced" if f["reproduced"] else "NOT reproduced"
        lines.append(f"Seed's finding (optimal > identity and > nearest, mean over documents "
                     f"and ε) for {policy}: {verdict} — optimal {f['optimal']:.3f}, identity "
                     f"{f['identity']:.3f}, nearest {f['nearest']:.3f}.")
    return "\n".join(lines)


def attacker_slm(services: Any, role: str | None) -> tuple[str, Any]:
    """(name, model) of the SLM attacker: the assessor's SLM, or the model of ``role``
    (an installed manifest role, e.g. the stronger cloud stand-in) loaded in-process."""
    if role is None:
        return services.slm_choice().name, services.slm()
    from preflight.runtime.slm import LocalSLM

    spec = services.models.spec(role)
    return spec.name, LocalSLM(model_path=services.models.path(role),
                               system_prompt=spec.system_prompt or None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Privacy–utility table on held-out documents.")
    ap.add_argument("--docs", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=600,
                    help="join test documents until each has at least this many tokens")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--points", type=int, default=5, help="ε points over the range")
    ap.add_argument("--slm-points", default="1,3",
                    help="indices into the ε grid where the SLM attack runs")
    ap.add_argument("--no-slm", action="store_true", help="skip the SLM attack")
    ap.add_argument("--slm-docs", type=int, default=None,
                    help="run the SLM attack on the first N documents only (default: all)")
    ap.add_argument("--attacker", default=None, metavar="ROLE",
                    help="model role of the SLM attacker (default: the assessor's SLM; "
                         "e.g. cloud_qwen15, the 1.5B cloud stand-in, run in-process)")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.errors import PreflightError
    from preflight.core.privacy.reconstruct import ReconstructionAttack

    from preflight_eval.bench_privacy import documents

    t0 = time.perf_counter()
    services = build_services(Settings())
    try:
        mech = services.dx()
        grid = epsilon_grid(*mech.epsilon_range, args.points)
        slm_eps = [grid[int(i)] for i in args.slm_points.split(",") if i.strip()]
        docs = documents(args.docs, args.tokens, mech.space)
        attacker = None if args.no_slm else attacker_slm(services, args.attacker)
        slm_name = None if attacker is None else attacker[0]
        # (a document is its id and --tokens: runs with fewer documents share the cache)
        settings = {"tokens": args.tokens, "seed": args.seed, "grid": grid, "slm": slm_name}
        ev = Evaluator(mechanism=services.mechanism, attack=services.dx_attack(),
                       assessor=services.assessor(), cache=ResultCache(args.cache, settings),
                       reconstruct=None if attacker is None else ReconstructionAttack(attacker[1]),
                       seed=args.seed)
        print(f"{len(docs)} test-split business documents "
              f"({' / '.join(str(d[3]) for d in docs)} tokens), ε grid {grid}, "
              f"SLM attack {'off' if args.no_slm else f'{slm_name} at ε {slm_eps}'}"
              f"{'' if args.slm_docs is None else f' on {args.slm_docs} document(s)'}, "
              f"seed {args.seed}; cache {ev.cache.dir}", flush=True)
        rows = []
        slm_docs = len(docs) if args.slm_docs is None else args.slm_docs
        for i, (doc_id, text, spans, _n) in enumerate(docs):
            for policy in args.policies.split(","):
                t = time.perf_counter()
                rows += ev.document(doc_id, text, spans, policy, grid,
                                    slm_eps if i < slm_docs else ())
                print(f"  {doc_id} {policy}: {time.perf_counter() - t:.1f} s", flush=True)
    except PreflightError as err:
        print(f"error: {err.message} {err.hint}".strip())
        return 1
    table, found = aggregate(rows), finding(rows)
    print()
    print(render(table, found))
    print(f"\n{time.perf_counter() - t0:.0f} s wall; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.json:
        atomic_write_text(args.json, json.dumps(
            {"settings": {**settings, "docs": [d[0] for d in docs]}, "rows": rows,
             "table": table, "finding": found},
            indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
