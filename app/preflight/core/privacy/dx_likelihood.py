"""P(y | x, ε) of the product's d_X mechanism, by Monte Carlo over its own noise.

For an input token x the mechanism (:mod:`preflight.core.sanitize.dx_engine`) draws
(u, g), takes the exact nearest class member of φ(x) + (g/ε)·u as the pivot e, and outputs
the k-th nearest class member of e with P(k) ∝ exp(−cεk). So

    P(y | x, ε) = E_(u,g)[ R_ε(rank_e(y)) ],   R_ε(k) = (1 − q) q^k / (1 − q^C), q = e^(−cε)

The rank step is summed exactly (Rao-Blackwellized); only the pivot is sampled: N draws
per candidate x, run through the product's own engine (:func:`build_envelope` +
:func:`envelope_pivots`, bit-identical pivots to ``DxPrepared.at``), and because the
engine follows each draw along the ray e'(ε), one draw serves every ε of the grid. The
draws are keyed by (sampler seed, token id, draw number) — independent of any document's
noise — and a candidate's paths are memoized, so a token seen in earlier documents costs
nothing. Ranks are read from the class geometry's verified neighbour lists to depth D,
with q^D ≤ 1e-6 at the smallest ε (the rank step's mass beyond D is ignored: a relative
error below 1e-6).

The estimate of each P(y | x, ε) is the mean of N per-draw values; its standard error is
their standard deviation / √N (returned with it).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from preflight.core.sanitize.dx_engine import build_envelope, draw_noise, envelope_pivots
from preflight.core.sanitize.dx_geometry import Geometry

RANK_TAIL = 1e-6      # ignored rank-step mass beyond the neighbour depth


def rank_weights(eps: float, c: float, C: int, depth: int) -> np.ndarray:
    """R_ε(k) for k = 0..depth-1 (the truncated geometric of the rank step)."""
    lam = c * eps
    k = np.arange(depth, dtype=np.float64)
    return (-math.expm1(-lam)) * np.exp(-lam * k) / (-math.expm1(-lam * C))


def rank_depth(eps_min: float, c: float, C: int, cap: int = 64) -> int:
    """Neighbour depth D with q^D ≤ RANK_TAIL at the smallest ε (at most ``cap``)."""
    return int(min(C, cap, math.ceil(math.log(RANK_TAIL) / (-c * eps_min)) + 1))


class PathSampler:
    """Monte Carlo pivot paths of candidate inputs in one class geometry (memoized)."""

    def __init__(self, matrix: np.ndarray, geom: Geometry, samples: int, seed: int) -> None:
        self.matrix, self.geom = matrix, geom
        self.samples, self.seed = int(samples), int(seed)
        self._paths: dict[tuple[int, tuple[float, ...]], np.ndarray] = {}
        self._lock = threading.Lock()

    def pivots(self, xs: np.ndarray, grid: tuple[float, ...]) -> np.ndarray:
        """(len(xs), G, N) pivot candidate indices of N draws from each candidate index
        in ``xs`` at every ε of ``grid``."""
        with self._lock:
            new = [int(x) for x in dict.fromkeys(xs.tolist()) if (int(x), grid) not in self._paths]
        if new:
            got = self._sample(np.asarray(new, dtype=np.int64), grid)
            with self._lock:
                for x, p in zip(new, got):
                    self._paths[(x, grid)] = p
        with self._lock:
            return np.stack([self._paths[(int(x), grid)] for x in xs.tolist()]) if len(xs) \
                else np.zeros((0, len(grid), self.samples), dtype=np.int64)

    def known(self, grid: tuple[float, ...]) -> int:
        with self._lock:
            return sum(1 for k in self._paths if k[1] == grid)

    def _sample(self, xs: np.ndarray, grid: tuple[float, ...], block: int = 2048) -> np.ndarray:
        N, geom = self.samples, self.geom
        ids = geom.cand[np.repeat(xs, N)]
        draw = np.tile(np.arange(N), len(xs))
        out = np.empty((len(ids), len(grid)), dtype=np.int64)
        for lo in range(0, len(ids), block):
            sl = slice(lo, lo + block)
            noise = draw_noise(self.seed, ids[sl], draw[sl], geom.n)
            P = self.matrix[ids[sl]]
            env = build_envelope(geom, P, noise, min(grid), max(grid))
            P64 = P.astype(np.float64)
            for j, eps in enumerate(grid):
                out[sl, j] = envelope_pivots(geom, env, P64, noise, eps)
        return out.reshape(len(xs), N, len(grid)).transpose(0, 2, 1)


def draw_values(geom: Geometry, piv: np.ndarray, y: np.ndarray, weights: np.ndarray,
                depth: int) -> np.ndarray:
    """Per-draw values R_ε(rank_piv(y)) for pivots ``piv`` (T, K, N) and outputs ``y``
    (T,): the rank of y in each pivot's neighbour list (0 beyond ``depth``)."""
    uniq, inv = np.unique(piv, return_inverse=True)
    geom.ensure_neighbours({int(e): depth for e in uniq.tolist()})
    nb = np.stack([geom.neighbours(int(e), depth)[:depth] for e in uniq.tolist()]) \
        if len(uniq) else np.zeros((0, depth), dtype=np.int64)
    inv = inv.reshape(piv.shape)
    out = np.zeros(piv.shape, dtype=np.float64)
    for t in range(piv.shape[0]):          # per released token: (K, N, depth) compare
        hit = nb[inv[t]] == y[t]
        found = hit.any(axis=-1)
        rk = hit.argmax(axis=-1)
        out[t] = np.where(found, weights[rk], 0.0)
    return out
