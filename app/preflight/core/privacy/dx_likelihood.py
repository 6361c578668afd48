"""P(y | x, ε) of the product's d_X mechanism, by Monte Carlo over its own noise.

For an input token x the mechanism (:mod:`preflight.core.sanitize.dx_engine`) draws
(u, g), takes the exact nearest class member of φ(x) + (g/ε)·u as the pivot e, and outputs
the k-th nearest class member of e with P(k) ∝ exp(−cεk). So

    P(y | x, ε) = E_(u,g)[ R_ε(rank_e(y)) ],   R_ε(k) = (1 − q) q^k / (1 − q^C), q = e^(−cε)

The rank step is summed exactly (Rao-Blackwellized); only the pivot is sampled: N draws
(u, g) of the mechanism's own noise distribution (:func:`draw_noise`, keyed by the
sampler's seed, never a document's), and because the distance to every member is linear
in s = 1/ε along the ray e'(ε) (the engine's all-ε identity), one draw serves every ε of
the grid (:class:`PathSampler`). A candidate's paths are memoized per ε, so tokens seen
in earlier documents cost nothing. Ranks are read from the class geometry's verified neighbour lists to depth D,
with q^D ≤ 1e-6 at the smallest ε (the rank step's mass beyond D is ignored: a relative
error below 1e-6).

The estimate of each P(y | x, ε) is the mean of N per-draw values; its standard error is
their standard deviation / √N (returned with it).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from preflight.core.errors import Cancelled
from preflight.core.sanitize.dx_engine import draw_noise
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
    """Monte Carlo pivot paths of candidate inputs in one class geometry (memoized).

    Common random numbers: the same N draws (u_i, g_i) serve every candidate x (each
    candidate's estimate is still an average of N independent draws of its own
    mechanism; sharing them only correlates the estimates, which makes comparing
    candidates more precise). With the draws fixed, the squared distance of the noisy
    point to member z is A_x[z] + s·B_i[z] + const with A_x = ‖φ_z‖² − 2φ_z·φ(x),
    B_i = −2g_i·u_i·φ_z and s = 1/ε (see :mod:`~preflight.core.sanitize.dx_engine`), so
    one float32 row A_x per candidate and N rows B_i per class give the pivot of every
    (draw, ε) by an argmin over the class. The float32 argmin can differ from the
    product's canonical float64 choice only where two members are within float32
    rounding of each other (a relative gap below ~1e-6): a near-tie, whose probability
    is negligible next to the Monte Carlo error.
    """

    def __init__(self, matrix: np.ndarray, geom: Geometry, samples: int, seed: int) -> None:
        self.matrix, self.geom = matrix, geom
        self.samples, self.seed = int(samples), int(seed)
        noise = draw_noise(seed, np.zeros(self.samples, np.int64), np.arange(self.samples),
                           geom.n)
        self.B = ((noise.u * (-2.0 * noise.g)[:, None]).astype(np.float32)
                  @ geom.phi.T)                                     # (N, C)
        self._bmin = self.B.min(axis=0)
        self._paths: dict[tuple[int, float], np.ndarray] = {}
        self._lock = threading.Lock()

    def pivots(self, xs: np.ndarray, grid: tuple[float, ...],
               cancel: threading.Event | None = None) -> np.ndarray:
        """(len(xs), G, N) pivot candidate indices of the N draws from each candidate
        index in ``xs`` at every ε of ``grid``."""
        xs = np.asarray(xs, dtype=np.int64)
        with self._lock:
            todo: dict[tuple[float, ...], list[int]] = {}
            for x in dict.fromkeys(xs.tolist()):
                miss = tuple(e for e in grid if (x, e) not in self._paths)
                if miss:
                    todo.setdefault(miss, []).append(x)
        for eps, group in todo.items():
            got = self._sample(np.asarray(group, dtype=np.int64), eps, cancel)
            with self._lock:
                for x, p in zip(group, got):
                    for j, e in enumerate(eps):
                        self._paths[(x, e)] = p[j]
        out = np.empty((len(xs), len(grid), self.samples), dtype=np.int64)
        with self._lock:
            for r, x in enumerate(xs.tolist()):
                for j, e in enumerate(grid):
                    out[r, j] = self._paths[(x, e)]
        return out

    def known(self) -> int:
        """How many (candidate, ε) paths are memoized."""
        with self._lock:
            return len(self._paths)

    def _sample(self, xs: np.ndarray, grid: tuple[float, ...], cancel,
                block: int = 64) -> np.ndarray:
        geom = self.geom
        s_list = [np.float32(1.0 / e) for e in grid]
        s_max = float(max(s_list))
        out = np.empty((len(xs), len(grid), self.samples), dtype=np.int64)


        bmin_all = float(self._bmin.min())

        def local(x: int) -> np.ndarray | None:
            # every z that can beat x lies within ρ² = s·(max_i B_i[x] − min B) of x:
            # when that ball is inside x's verified neighbour list, use the list alone
            rho2 = s_max * (float(self.B[:, x].max()) - bmin_all)
            nb = geom.neighbours(x, 64)
            far = geom.canon_sqdist(nb[-1:], geom.phi[x].astype(np.float64))[0]
            return nb if len(nb) < geom.C and rho2 * 1.001 + 1e-6 < far else None

        def run(lo: int) -> None:
            if cancel is not None and cancel.is_set():
                return
            ids = xs[lo:lo + block]
            small = [local(x) for x in ids.tolist()]
            dense = [r for r, k in enumerate(small) if k is None]
            A = np.empty((len(ids), geom.C), dtype=np.float32)
            if dense:
                px = self.matrix[geom.cand[ids[dense]]].astype(np.float32)
                A[dense] = (px * np.float32(-2.0)) @ geom.phi.T + geom.sq32[None, :]
            for r, x in enumerate(ids.tolist()):
                if small[r] is not None:
                    keep = small[r]
                    a = geom.sq32[keep] - 2 * (geom.phi[keep] @ geom.phi[x])
                else:
                    # z can beat x in some draw only if ‖φz − φx‖² < s·(B_i[x] − B_i[z])
                    # for some i: a superset test with the draws' column minimum
                    d2 = A[r] - A[r, x]
                    bx = self.B[:, x].max()
                    slack = 1e-4 * (np.abs(A[r]) + abs(A[r, x])
                                    + s_max * (np.abs(self._bmin) + abs(bx))) + 1e-6
                    keep = np.flatnonzero(d2 <= s_max * (bx - self._bmin) + slack)
                    a = A[r, keep]
                    if 2 * len(keep) > geom.C:      # most survive: skip the gather
                        keep, a = None, A[r]
                Bk = self.B if keep is None else self.B[:, keep]
                buf = np.empty_like(Bk)
                for j, sj in enumerate(s_list):
                    np.multiply(Bk, sj, out=buf)
                    buf += a
                    k = buf.argmin(axis=1)
                    out[lo + r, j] = k if keep is None else keep[k]

        block = max(1, min(block, -(-len(xs) // 4)))     # at least 4 blocks for 2 threads
        list(geom.pool().map(run, range(0, len(xs), block)))
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        return out


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
