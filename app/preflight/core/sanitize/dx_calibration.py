"""Calibrate d_X for an embedding: the rank constant c and the slider's ε range.

Measured on a fixed sample of real English text (resources/dx/calibration_sample.txt:
abstracts of ACL papers from the ``aclsum`` dataset) with a fixed seed:

1. Exact nearest-neighbour pivot alone (no rank step): for every token the pivot stays
   the token itself for ε above an exit point (the ray leaves the token's Voronoi cell);
   ε₅₀ is the median exit point.
2. Rule for c: the rank step alone keeps a token with probability 1 − exp(−cε); c is
   chosen so that this is 50 % at ε₅₀ as well, i.e. **c = ln 2 / ε₅₀** — both halves of
   the mechanism then act over the same ε range. (The reference values 0.006 for BART,
   0.001 for Llama-3-8B and 0.04 for GloVe-300d sit in the same place of their ranges.)
3. Range: the fraction of tokens that come back unchanged with the rank step,
   averaged exactly over the rank step's randomness (P(rank of the token around the
   pivot)), from where it is 1 % to where it is 99 %.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from preflight.core import paths
from preflight.core.ports import TokenSpace
from preflight.core.sanitize.dx_engine import build_envelope, draw_noise, occurrences
from preflight.core.sanitize.dx_geometry import Geometry

RULE = "c = ln 2 / eps50, eps50 = median epsilon above which the exact-NN pivot is the token itself"
MAX_TOKENS = 2000


def default_sample_text() -> str:
    return paths.resource_path("dx", "calibration_sample.txt").read_text("utf-8")


def _sig(x: float, digits: int = 3) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    return float(f"{x:.{digits}g}")


def calibrate(space: TokenSpace, sample_text: str, seed: int = 0,
              geom: Geometry | None = None) -> dict[str, Any]:
    """Compute {"rank_constant", "epsilon_range", ...} for ``space`` (seconds to a minute).
    ``geom``: the space's geometry if the caller has one (else built here)."""
    geom = geom or Geometry(space.matrix, space.candidate_ids)
    ids = space.tokenize(sample_text).ids[:MAX_TOKENS]
    if len(ids) < 50:
        raise ValueError("calibration sample too short")
    noise = draw_noise(seed, ids, occurrences(ids), geom.n)
    xi = geom.index_of[ids]                      # candidate index of each token or -1
    # the noise magnitude is g/ε ≈ n/ε: start around the ε where it matches the typical
    # distance between tokens, widen until the exit points are inside the range
    sample_rows = geom.phi[np.random.default_rng(0).choice(geom.C, 200, replace=False)]
    typical = float(np.median(np.sqrt(np.maximum(
        geom.sq32[None, :] + (sample_rows ** 2).sum(1)[:, None] - 2 * sample_rows @ geom.phi.T,
        0)).mean(axis=1)))
    centre = geom.n / typical
    lo, hi = centre / 100, centre * 10
    for _ in range(5):
        env = build_envelope(geom, space.matrix[ids], noise, lo, hi)
        exit_eps = np.full(len(ids), np.inf)   # non-candidates never come back
        for t, segs in enumerate(env.seg_pivots):
            s_from, s_to, piv = segs[0]
            if xi[t] >= 0:
                if piv != xi[t]:
                    exit_eps[t] = hi * 10          # not the pivot even at the top: widen
                else:
                    exit_eps[t] = 1.0 / s_to if s_to < env.s1 else 0.0
        cand = xi >= 0
        too_low = (exit_eps[cand] == 0).mean() > 0.01
        too_high = (exit_eps[cand] > hi).mean() > 0.01
        if not (too_low or too_high):
            break
        lo, hi = (lo / 10 if too_low else lo), (hi * 10 if too_high else hi)
    eps50 = float(np.median(exit_eps))
    c = math.log(2) / eps50
    hi = max(hi, 20 / c)
    env = build_envelope(geom, space.matrix[ids], noise, lo, hi)

    # rank of the token in each pivot's ordering (float32 distances: this is an estimate
    # of an average, not an output of the mechanism)
    pairs: dict[tuple[int, int], int] = {}
    for t, segs in enumerate(env.seg_pivots):
        if xi[t] < 0:
            continue
        for _, _, piv in segs:
            pairs.setdefault((piv, int(xi[t])), -1)
    keys = [k for k in pairs if k[0] != k[1]]
    for a in range(0, len(keys), 256):
        blk = keys[a:a + 256]
        pv = np.asarray([p for p, _ in blk])
        D = geom.sq32[None, :] - 2 * (geom.phi[pv] @ geom.phi.T)
        dx = D[np.arange(len(blk)), [x for _, x in blk]]
        counts = (D < dx[:, None]).sum(axis=1)
        for (k, r) in zip(blk, counts.tolist()):
            pairs[k] = int(r)
    for k in pairs:
        if k[0] == k[1]:
            pairs[k] = 0

    grid = np.geomspace(lo, hi, 801)
    f_nn = np.array([(exit_eps <= e).mean() for e in grid])
    f_rank = np.empty(len(grid))
    C = geom.C
    for gi, e in enumerate(grid):
        s = 1.0 / e
        q = math.exp(-c * e)
        norm = -math.expm1(-c * e * C)
        total = 0.0
        for t, segs in enumerate(env.seg_pivots):
            if xi[t] < 0:
                continue
            piv = segs[-1][2]
            for s_from, s_to, p in segs:
                if s <= s_to:
                    piv = p
                    break
            r = pairs[(piv, int(xi[t]))]
            total += (q ** r) * (-math.expm1(-c * e)) / norm
        f_rank[gi] = total / len(ids)

    def crossing(f: np.ndarray, level: float) -> float:
        above = np.flatnonzero(f >= level)
        if len(above) == 0:
            return float(grid[-1])
        i = int(above[0])
        if i == 0:
            return float(grid[0])
        # interpolate in log ε
        f0, f1 = f[i - 1], f[i]
        w = (level - f0) / (f1 - f0) if f1 > f0 else 1.0
        la, lb = math.log(grid[i - 1]), math.log(grid[i])
        return float(math.exp(la + w * (lb - la)))

    e_lo, e_hi = crossing(f_rank, 0.01), crossing(f_rank, 0.99)
    pick = np.unique(np.linspace(0, len(grid) - 1, 41).astype(int))
    return {
        "embedding": space.name,
        "embedding_sha256": space.key,
        "rank_constant": _sig(c),
        "epsilon_range": [_sig(e_lo), _sig(e_hi)],
        "rule": RULE,
        "range_rule": "epsilon where 1 % and 99 % of sample tokens come back unchanged "
                      "(rank step averaged exactly, exact-NN pivot with the fixed seed)",
        "nn_epsilon": {"1%": _sig(crossing(f_nn, 0.01)), "50%": _sig(eps50),
                       "99%": _sig(crossing(f_nn, 0.99))},
        "sample": {"file": "resources/dx/calibration_sample.txt", "tokens": int(len(ids)),
                   "seed": seed},
        "curve": [[_sig(float(grid[i]), 4), round(float(f_nn[i]), 4), round(float(f_rank[i]), 4)]
                  for i in pick],
        "command": "python -m preflight_eval.calibrate_dx",
    }
