"""Redo the seeds' exact-vs-approximate nearest-neighbour experiment on our embedding.

    .venv/bin/python -m preflight_eval.repro_exact_vs_approx [--gguf PATH] [--draws 1000]
        [--vocab-tokens 1000] [--vocab-draws 10] [--seed 0]

utility-assessor-full.txt §5 (replicating Feyisetan et al.) runs d_X *without* the rank
step and counts how often the original word comes back, with an exact nearest neighbour
versus annoy at its default search_k. Same here on the default embedding (SmolLM2's
token embeddings, 48,749 printable candidates):

- Experiment 1: the words " encryption", " hockey", " spacecraft", ``--draws`` noise
  draws each, per ε: share of draws returning the word itself, and the top outputs.
- Experiment 2: ``--vocab-tokens`` random candidate tokens × ``--vocab-draws`` draws:
  average share returning the original token, per ε.

Exact = our exact pivot (identical to a full scan, see tests); approximate = annoy with
50 trees and default search_k on the same noisy points. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

EPSILONS = [5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 60.0, 80.0]
WORDS = [" encryption", " hockey", " spacecraft"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="exact vs approximate NN in d_X (no rank step)")
    ap.add_argument("--gguf", default=None)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--vocab-tokens", type=int, default=1000)
    ap.add_argument("--vocab-draws", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from preflight.core.sanitize.dx import DxMechanism
    from preflight.core.sanitize.dx_engine import (
        build_envelope,
        draw_noise,
        envelope_pivots,
        noisy_point,
    )
    from preflight.runtime.token_space import gguf_token_space

    space = gguf_token_space(args.gguf)
    mech = DxMechanism(space)
    geom = mech.geometry
    t = time.perf_counter()
    ann = mech.annoy_index()
    print(f"embedding: {space.name}; {geom.C} candidates; annoy index ready in "
          f"{time.perf_counter() - t:.1f} s")
    lo, hi = min(EPSILONS), max(EPSILONS)

    def run(ids: np.ndarray, occ: np.ndarray) -> dict[float, tuple[np.ndarray, np.ndarray]]:
        noise = draw_noise(args.seed, ids, occ, geom.n)
        P = space.matrix[ids]
        P64 = P.astype(np.float64)
        env = build_envelope(geom, P, noise, lo, hi)
        res = {}
        for e in EPSILONS:
            exact = envelope_pivots(geom, env, P64, noise, e)
            points = [noisy_point(P64[t], noise.u[t], noise.g[t], e).astype(np.float32)
                      for t in range(len(ids))]
            approx = np.asarray([ann.get_nns_by_vector(v.tolist(), 1)[0] for v in points])
            res[e] = (geom.cand[exact], geom.cand[approx])
        return res

    def show(tid: int) -> str:
        return repr(space.piece(int(tid)).decode("utf-8"))

    print("\n### Experiment 1 — one word, %d draws per ε (no rank step)\n" % args.draws)
    print("| word | ε | exact: original kept | exact: top other outputs | annoy: original kept "
          "| annoy: top other outputs |")
    print("|---|---|---|---|---|---|")
    for w in WORDS:
        tid = int(space.tokenize(w).ids[0])
        ids = np.full(args.draws, tid, dtype=np.int64)
        res = run(ids, np.arange(args.draws))
        for e in EPSILONS:
            ex, ap_ = res[e]
            def top(out: np.ndarray) -> str:
                cnt = Counter(out[out != tid].tolist()).most_common(3)
                return ", ".join(f"{show(k)} {v}" for k, v in cnt) or "—"
            print(f"| {w.strip()} | {e:g} | {100 * (ex == tid).mean():.1f} % | {top(ex)} | "
                  f"{100 * (ap_ == tid).mean():.1f} % | {top(ap_)} |")

    rng = np.random.default_rng(args.seed)
    sample = rng.choice(geom.cand, args.vocab_tokens, replace=False)
    ids = np.repeat(sample, args.vocab_draws)
    occ = np.tile(np.arange(args.vocab_draws), args.vocab_tokens)
    t = time.perf_counter()
    res = run(ids, occ)
    print(f"\n### Experiment 2 — {args.vocab_tokens} random vocabulary tokens × "
          f"{args.vocab_draws} draws ({time.perf_counter() - t:.0f} s)\n")
    print("| ε | exact NN: original returned | annoy (default search_k): original returned |")
    print("|---|---|---|")
    for e in EPSILONS:
        ex, ap_ = res[e]
        print(f"| {e:g} | {100 * (ex == ids).mean():.1f} % | {100 * (ap_ == ids).mean():.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
