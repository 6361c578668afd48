"""What keeping word boundaries costs or gains d_X in utility (issue 12, item 3).

    nice python -m preflight_eval.dx_boundaries [--docs 20] [--steps 5] [--seed 2024] [--json]
    nice python -m preflight_eval.dx_boundaries --slider [--rounds 2]

On ``--docs`` business documents of the utility corpus (data/utility/business.jsonl.gz,
every 15th of the 300, so memos, HR notes, complaints and minutes alike), whole-text d_X
with the default SLM token space at ``--steps`` ε spread log-evenly over the calibrated
range, once with word boundaries kept (the product) and once without (the research
setting ``DxMechanism(..., word_boundaries=False)``); same seeds, same calibration. Per ε
and setting it prints the share of tokens changed, the changed units whose replacement
*glues* (the original starts with whitespace, the replacement does not) or *splits* (the
reverse), the sum over documents of |words out − words in| (``str.split``), and the mean
cosine similarity of the sanitized text to the original with the project's sentence
embedder (all-mpnet-base-v2, ``build_services().embedder()``). It also times
``prepare`` of both settings in this one process (medians over the documents).

``--slider`` times the slider instead, in one process, alternating the two settings
``--rounds`` times: on bench_dx's 1,000-token document (neighbour tables built first),
``prepare`` (3 seeds) and ``at(ε)`` over 50 ε of the calibrated range each (wall and CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism


def boundary_errors(text: str, res) -> tuple[int, int]:
    """(glued, split): changed units whose replacement loses / gains a leading whitespace."""
    glued = split = 0
    for c in res.changes:
        before = text[c.source_start:c.source_end][:1].isspace()
        after = c.replacement[:1].isspace()
        glued += before and not after
        split += after and not before
    return glued, split


def run(n_docs: int, steps: int, seed: int) -> dict[str, Any]:
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight_eval.utility_data.corpus import load_business

    services = build_services(Settings())
    space = services.token_space()
    embedder = services.embedder()
    docs = load_business()
    stride = max(1, len(docs) // n_docs)
    docs = docs[::stride][:n_docs]
    mechs = {"kept": DxMechanism(space),
             "not kept": DxMechanism(space, word_boundaries=False)}
    lo, hi = mechs["kept"].epsilon_range
    grid = [float(e) for e in np.geomspace(lo, hi, steps)]
    for m in mechs.values():
        m.warm_up()
    originals = embedder.embed([d.text for d in docs])
    rows: dict[tuple[str, float], dict[str, float]] = {}
    prep_s: dict[str, list[float]] = {name: [] for name in mechs}
    for name, mech in mechs.items():
        acc = {e: {"changed": 0, "tokens": 0, "glued": 0, "split": 0, "dwords": 0,
                   "cos": []} for e in grid}
        for i, doc in enumerate(docs):
            t = time.perf_counter()
            prep = mech.prepare(doc.text, [], SanitizeParams(seed=seed + i))
            prep_s[name].append(time.perf_counter() - t)
            outs = [prep.at(e) for e in grid]
            vecs = embedder.embed([r.text for r in outs])
            for e, res, v in zip(grid, outs, vecs):
                a = acc[e]
                a["changed"] += res.info["tokens_changed"]
                a["tokens"] += res.info["tokens_total"]
                g, s = boundary_errors(doc.text, res)
                a["glued"] += g
                a["split"] += s
                a["dwords"] += abs(len(res.text.split()) - len(doc.text.split()))
                a["cos"].append(float(np.dot(v, originals[i])))
        for e in grid:
            a = acc[e]
            rows[(name, e)] = {
                "changed_share": a["changed"] / max(1, a["tokens"]),
                "glued": a["glued"], "split": a["split"], "abs_word_diff": a["dwords"],
                "cosine_mean": statistics.fmean(a["cos"]),
            }
    return {
        "documents": len(docs),
        "tokens": sum(len(space.tokenize(d.text).ids) for d in docs),
        "epsilon_range": [lo, hi], "epsilons": grid, "seed": seed,
        "prepare_median_s": {k: statistics.median(v) for k, v in prep_s.items()},
        "rows": [{"word_boundaries": name, "epsilon": e, **r}
                 for (name, e), r in rows.items()],
    }


def slider_timing(rounds: int) -> list[dict[str, Any]]:
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight_eval.bench_dx import bench_document

    space = build_services(Settings()).token_space()
    text = bench_document(space)
    out = []
    for wb in [True, False] * rounds:
        mech = DxMechanism(space, word_boundaries=wb)
        mech.warm_up()
        lo, hi = mech.epsilon_range
        grid = np.geomspace(lo, hi, 50)
        mech.prepare(text, [], SanitizeParams(seed=1)).at(float(grid[10]))  # warm pools
        prep_wall, prep_cpu, step_wall, step_cpu = [], [], [], []
        for r in range(3):
            t, c = time.perf_counter(), time.process_time()
            prep = mech.prepare(text, [], SanitizeParams(seed=100 + r))
            prep_wall.append(time.perf_counter() - t)
            prep_cpu.append(time.process_time() - c)
            for e in grid:
                t, c = time.perf_counter(), time.process_time()
                prep.at(float(e))
                step_wall.append(time.perf_counter() - t)
                step_cpu.append(time.process_time() - c)
        out.append({
            "word_boundaries": "kept" if wb else "not kept",
            "prepare_s": statistics.median(prep_wall),
            "prepare_cpu_s": statistics.median(prep_cpu),
            "step_ms": 1000 * statistics.median(step_wall),
            "step_max_ms": 1000 * max(step_wall),
            "step_cpu_ms": 1000 * statistics.median(step_cpu),
            "step_cpu_max_ms": 1000 * max(step_cpu),
            "load_average": os.getloadavg()[0],
        })
        r = out[-1]
        print(f"word boundaries {r['word_boundaries']}: prepare {r['prepare_s']:.2f} s "
              f"(CPU {r['prepare_cpu_s']:.2f} s); at(ε) median {r['step_ms']:.1f} ms "
              f"(max {r['step_max_ms']:.1f} ms; CPU median {r['step_cpu_ms']:.1f} ms, max "
              f"{r['step_cpu_max_ms']:.1f} ms); load average {r['load_average']:.1f}",
              flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="d_X with and without word-boundary classes")
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--slider", action="store_true", help="time prepare and at(ε) instead")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if args.slider:
        slider_timing(args.rounds)
        return 0
    report = run(args.docs, args.steps, args.seed)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    lo, hi = report["epsilon_range"]
    print(f"{report['documents']} business documents, {report['tokens']} tokens; "
          f"calibrated ε range {lo:g}–{hi:g}; seeds {report['seed']}+i")
    print("| ε | word boundaries | tokens changed | glued | split | Σ|Δwords| | cosine |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for e in report["epsilons"]:
        for r in report["rows"]:
            if r["epsilon"] == e:
                print(f"| {e:.3g} | {r['word_boundaries']} | {100 * r['changed_share']:.1f} % "
                      f"| {r['glued']} | {r['split']} | {r['abs_word_diff']} "
                      f"| {r['cosine_mean']:.3f} |")
    p = report["prepare_median_s"]
    print("prepare median (same process): " + ", ".join(f"{k} {v:.2f} s" for k, v in p.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
