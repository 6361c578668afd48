"""The hybrid policy's slider against plain d_X, in one process.

    nice python -m preflight_eval.bench_policy [--rounds 2] [--steps 50]

The 1,000-token benchmark document of ``bench_dx`` with a letter's worth of PII put in
front (names, e-mail, phone, IBAN, a key), detected by the real detector. Alternating
rounds: plain d_X on the whole text (``dx-all``) and "Protect identifiers + d_X"
(``identifiers-dx``: placeholders on the protected spans, d_X on every other token),
each prepared 3 times and moved over ``--steps`` ε values of the calibrated range.
Prints medians (wall and CPU) of ``prepare`` and of one slider step ``at(ε)``, the ratio
hybrid / plain, the steps during which a full garbage collection ran, and the load
average (the machine is shared). Like the window, it freezes what is loaded
(``gc.freeze``) before timing; ``--no-freeze`` shows why (a full collection over the
detector's objects costs 80-100 ms when it lands in a step).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time

import numpy as np

PII = ("Dear Jane Doe, Tom Baker (tom.baker@acme-corp.com, +1 415 555 0134) will wire the "
       "refund to IBAN GB82 WEST 1234 5698 7654 32 today; the staging key "
       "sk-proj-AbC123xyz987QweRty456 must be rotated.\n\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--no-freeze", action="store_true",
                    help="leave the loaded objects to the garbage collector (no gc.freeze)")
    args = ap.parse_args(argv)

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.sanitize.base import SanitizeParams
    from preflight_eval.bench_dx import bench_document

    services = build_services(Settings())
    space = services.token_space()
    text = PII + bench_document(space)
    spans = services.detector().detect(text)
    dx = services.dx()
    dx.warm_up()
    grid = [float(e) for e in np.geomspace(*dx.epsilon_range, args.steps)]
    if not args.no_freeze:
        gc.freeze()      # as the window does once d_X is loaded (qt/policy_ops.py)
    tokens = len(space.tokenize(text).ids)
    print(f"document: {tokens} tokens, {len(spans)} detected spans; ε grid {grid[0]:.3g}–"
          f"{grid[-1]:.3g} ({args.steps} steps)")
    results: dict[str, list[dict]] = {"dx-all": [], "identifiers-dx": []}
    full_gc: list[float] = []           # start times of full (generation 2) collections
    gc.callbacks.append(lambda phase, info: full_gc.append(time.perf_counter())
                        if phase == "start" and info["generation"] == 2 else None)
    for name in ["dx-all", "identifiers-dx"] * args.rounds:
        mech = services.mechanism(name)
        mech.prepare(text, spans, SanitizeParams(seed=1)).at(grid[10])     # warm pools
        prep, prep_cpu, step, step_cpu, gc_steps = [], [], [], [], []
        for r in range(3):
            t, c = time.perf_counter(), time.process_time()
            prepared = mech.prepare(text, spans, SanitizeParams(seed=100 + r))
            prep.append(time.perf_counter() - t)
            prep_cpu.append(time.process_time() - c)
            for e in grid:
                t, c = time.perf_counter(), time.process_time()
                n_gc = len(full_gc)
                out = prepared.at(e)
                step.append(time.perf_counter() - t)
                if len(full_gc) > n_gc:
                    gc_steps.append(step[-1])
                step_cpu.append(time.process_time() - c)
        row = {"prepare_s": statistics.median(prep), "prepare_cpu_s": statistics.median(prep_cpu),
               "step_ms": 1000 * statistics.median(step), "step_max_ms": 1000 * max(step),
               "step_cpu_ms": 1000 * statistics.median(step_cpu),
               "replaced": out.report.replaced or 0, "load": os.getloadavg()[0],
               "full_gc_steps_ms": [round(1000 * x, 1) for x in gc_steps]}
        results[name].append(row)
        print(f"{name:15} prepare {row['prepare_s']:.2f} s (CPU {row['prepare_cpu_s']:.2f} s); "
              f"at(ε) median {row['step_ms']:.1f} ms, max {row['step_max_ms']:.1f} ms (CPU "
              f"median {row['step_cpu_ms']:.1f} ms); spans replaced {row['replaced']}; "
              f"steps with a full garbage collection: {row['full_gc_steps_ms']} ms; "
              f"load {row['load']:.1f}", flush=True)
    med = {k: statistics.median(r["step_ms"] for r in v) for k, v in results.items()}
    prep = {k: statistics.median(r["prepare_s"] for r in v) for k, v in results.items()}
    print(f"hybrid / plain d_X: slider step {med['identifiers-dx']:.1f} / {med['dx-all']:.1f} "
          f"ms (ratio {med['identifiers-dx'] / med['dx-all']:.2f}); prepare "
          f"{prep['identifiers-dx']:.2f} / {prep['dx-all']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
