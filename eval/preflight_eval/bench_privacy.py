"""Benchmark and measurements of the optimal context-free attack on d_X output.

Real d_X space (the installed SLM's token embeddings), real documents of the utility data
set's *test* split (the prior never saw them: see ``build_dx_prior``), the detected PII
spans being the documents' recorded ground-truth values. Prints, per document, the attack
success over the calibrated ε grid next to the naive attacks, and the timings:

- cold: a fresh attack object (nothing memoized) after the one-time ``warm_up`` (the top-M
  prior tokens of every class); the first document pays for its own candidates;
- warm: the same document again (every path memoized: the slider case).

Wall-clock times include whatever else the machine runs (the load average is printed);
the CPU time of the cold run (both worker threads summed) is printed beside it.

    python -m preflight_eval.bench_privacy [--docs 3] [--tokens 1000] [--repeat 3]
                                           [--truncation]

``--truncation`` reruns the first document with 2K near neighbours and 2M frequent
tokens and prints the change in success (the candidate truncation's effect).

``--reconstruct`` measures the window's "Try to re-identify" instead: the reconstruction
attack with the installed local model (the application's own path, the model loaded
once beforehand) on ``--docs`` test-split business documents of typical length (their
ground-truth values protected by the default policy), and prints the median wall time.
With ``--write`` it stores the median in ``resources/bench/reconstruct.json``, the figure
the window quotes before a try.

    python -m preflight_eval.bench_privacy --reconstruct --docs 5 [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def documents(n: int, tokens: int, space) -> list:
    """Test-split business documents, joined in order until each has ~``tokens`` tokens."""
    from preflight.core.types import Category, Span

    from preflight_eval.utility_data.corpus import load_business, split_of

    pool = [d for d in load_business() if split_of(d.doc_id) == "test"]
    out, i = [], 0
    while len(out) < n and i < len(pool):
        text, spans = "", []
        while i < len(pool) and len(space.tokenize(text).ids) < tokens:
            d = pool[i]
            base = len(text) + (2 if text else 0)
            text = text + ("\n\n" if text else "") + d.text
            for t in d.truth:
                at = d.text.find(t.value)
                if at >= 0 and t.value:
                    spans.append(Span(base + at, base + at + len(t.value), t.type,
                                      Category.DIRECT_IDENTIFIER, 1.0, "ground truth", "test"))
            i += 1
        ids = space.tokenize(text).ids
        out.append((pool[i - 1].doc_id, text, sorted(spans, key=lambda s: s.start), len(ids)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Optimal d_X attack: success and timings.")
    ap.add_argument("--docs", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--truncation", action="store_true")
    ap.add_argument("--reconstruct", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    if args.reconstruct:
        return reconstruct_bench(args.docs, args.seed, args.write)

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.privacy.dx_attack import DxAttack
    from preflight.core.privacy.dx_prior import load_prior
    from preflight.core.sanitize.base import SanitizeParams

    services = build_services(Settings())
    mech = services.dx()
    _ = mech.geometries
    prior = load_prior(mech.space)
    attack = DxAttack(mech, prior)
    t = time.perf_counter()
    attack.warm_up()
    print(f"one-time warm-up (top-{attack.top_m} of every class, default grid): "
          f"{time.perf_counter() - t:.2f} s")
    lo, hi = mech.epsilon_range
    eps = round((lo * hi) ** 0.5, 1)
    cold, warm, cpu = [], [], []
    for doc_id, text, spans, n in documents(args.docs, args.tokens, mech.space):
        prep = mech.prepare(text, spans, SanitizeParams(seed=args.seed, scope="all"))
        fresh = DxAttack(mech, prior)
        fresh.warm_up()
        c0 = time.process_time()
        res = fresh.run(prep, epsilon=eps)
        cpu.append(time.process_time() - c0)
        cold.append(res.seconds)
        times = [fresh.run(prep, epsilon=eps).seconds for _ in range(args.repeat)]
        warm.append(statistics.median(times))
        print(f"\n{doc_id}…: {n} tokens, {res.evaluated} attacked, {res.pii_tokens} in PII "
              f"spans; cold {res.seconds:.2f} s (CPU {cpu[-1]:.2f} s), warm median {warm[-1]:.2f} s; "
              f"P(y|x) rel. SE p90 {res.likelihood_se:.3f}")
        print("     ε   optimal (±MC ±sample)   in PII   identity (=unchanged)  nearest")
        for p in res.curve:
            pii = f"{p.success_pii:.3f}" if p.success_pii is not None else "  —  "
            print(f"{p.epsilon:7.1f}  {p.success:.3f} (±{p.mc_error:.3f} ±{p.sampling_error:.3f})"
                  f"   {pii}    {p.identity:.3f}                  {p.nearest:.3f}")
        if args.truncation and len(cold) == 1:
            wide = DxAttack(mech, prior, k_near=2 * attack.k_near, top_m=2 * attack.top_m)
            r2 = wide.run(prep, epsilon=eps)
            diffs = [b.success - a.success for a, b in zip(res.curve, r2.curve)]
            print(f"truncation: K={wide.k_near}, M={wide.top_m} changes success by "
                  f"{min(diffs):+.3f} … {max(diffs):+.3f} over the grid")
    print(f"\nmedian over documents: cold {statistics.median(cold):.2f} s wall "
          f"(CPU {statistics.median(cpu):.2f} s over both cores), warm "
          f"{statistics.median(warm):.2f} s wall (this machine's load included; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


def reconstruct_bench(n: int, seed: int, write: bool) -> int:
    """The reconstruction attack's wall time on ``n`` typical documents (see module doc)."""
    import json
    import platform

    from preflight.app.privacy_report import TIMING_RESOURCE, reconstruction
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.fsutil import atomic_write_text
    from preflight.core.paths import resource_path
    from preflight.core.privacy.reconstruct import MAX_ATTACK_TOKENS, MAX_ATTACK_WORDS
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.sanitize.policy import PRESETS
    from preflight.core.sanitize.policy_apply import PolicyMechanism
    from preflight.core.types import Category, Span

    from preflight_eval.utility_data.corpus import load_business, split_of

    settings = Settings()
    services = build_services(settings)
    services.slm()                                   # loaded once, as in a session
    policy = PRESETS[settings.policy.active]
    pool = [d for d in load_business() if split_of(d.doc_id) == "test"]
    typical = statistics.median(len(d.text.split()) for d in pool)
    pool.sort(key=lambda d: abs(len(d.text.split()) - typical))
    times, cpu, words = [], [], []
    for d in pool[:n]:
        spans = []
        for t in d.truth:
            at = d.text.find(t.value)
            if at >= 0 and t.value:
                spans.append(Span(at, at + len(t.value), t.type, Category.DIRECT_IDENTIFIER,
                                  1.0, "ground truth", "test"))
        spans = _disjoint(sorted(spans, key=lambda s: s.start))
        out = PolicyMechanism(policy).sanitize(d.text, spans, SanitizeParams(seed=seed))
        t0, c0 = time.perf_counter(), time.process_time()
        res = reconstruction(services, d.text, out, spans, None)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        words.append(len(d.text.split()))
        print(f"{d.doc_id[:12]}…: {words[-1]} words, {res['values_recovered']} of "
              f"{res['values_total']} values re-identified, {times[-1]:.1f} s wall, "
              f"{cpu[-1]:.1f} s CPU (all threads), load average {os.getloadavg()[0]:.1f}")
    med = statistics.median(times)
    machine = f"{os.cpu_count()} CPU cores ({platform.machine()})"
    print(f"\nmedian {med:.1f} s wall ({statistics.median(cpu):.1f} s CPU) over {len(times)} "
          f"documents of ~{statistics.median(words):.0f} "
          f"words (budget {MAX_ATTACK_WORDS} words read, {MAX_ATTACK_TOKENS} tokens written; "
          f"load average {os.getloadavg()[0]:.1f} on {machine})")
    if write:
        target = resource_path(*TIMING_RESOURCE)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps({
            "median_seconds": round(med, 1), "documents": len(times),
            "median_cpu_seconds": round(statistics.median(cpu), 1),
            "words": round(statistics.median(words)), "machine": machine,
            "load_average": round(os.getloadavg()[0], 1),
            "max_words": MAX_ATTACK_WORDS, "max_tokens": MAX_ATTACK_TOKENS}, indent=1) + "\n")
        print(f"written to {target}")
    return 0


def _disjoint(spans: list) -> list:
    out = []
    for s in spans:
        if not out or s.start >= out[-1].end:
            out.append(s)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
