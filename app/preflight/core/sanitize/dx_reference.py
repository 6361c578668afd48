"""The reference d_X search: per-ε full scans with the canonical distance (slow).

The yardstick of tests and benchmarks, written independently of the fast path: the pivot
is the argmin of :meth:`Geometry.canon_sqdist` over the whole candidate vocabulary
(lowest index on ties) and the rank step ranks the whole vocabulary around it.
"""

from __future__ import annotations

import numpy as np

from preflight.core.sanitize.dx_engine import Noise, noisy_point, rank_of
from preflight.core.sanitize.dx_geometry import Geometry


def exact_pivots(geom: Geometry, P64: np.ndarray, noise: Noise, eps: float) -> np.ndarray:
    """Per-ε exact nearest candidate for every token (canonical distances, full scan)."""
    T = P64.shape[0]
    out = np.empty(T, dtype=np.int64)
    for t in range(T):
        e = noisy_point(P64[t], noise.u[t], noise.g[t], eps)
        best_v = np.inf
        best_i = -1
        for lo in range(0, geom.C, 8192):
            rows = np.arange(lo, min(lo + 8192, geom.C))
            d = geom.canon_sqdist(rows, e)
            j = int(np.argmin(d))
            if d[j] < best_v:           # strict: earlier (lower) index wins ties
                best_v = float(d[j])
                best_i = lo + j
        out[t] = best_i
    return out


def exact_outputs(
    geom: Geometry, P64: np.ndarray, noise: Noise, eps: float, c: float, rank_step: bool = True
) -> np.ndarray:
    """The reference mechanism at one ε: full scans for pivot and ranking (slow)."""
    piv = exact_pivots(geom, P64, noise, eps)
    if not rank_step:
        return piv
    ks = rank_of(noise.U, eps, c, geom.C)
    out = piv.copy()
    for t in range(len(piv)):
        if ks[t] > 0:
            out[t] = geom.full_ranking(int(piv[t]))[ks[t]]
    return out
