"""The reference d_X search: per-ε full scans with the canonical distance (slow).

The yardstick of tests and benchmarks, written independently of the fast path: the pivot
is the argmin of :meth:`Geometry.canon_sqdist` over the allowed candidates of the whole
vocabulary (lowest index on ties) and the rank step ranks the whole vocabulary around it,
keeping only allowed candidates. ``allowed`` is the token's word-boundary class (see
:mod:`.dx_classes`) as a mask over the *whole* vocabulary's geometry, so the restriction
is applied here independently of the per-class geometries of the fast path.
"""

from __future__ import annotations

import numpy as np

from preflight.core.sanitize.dx_engine import Noise, noisy_point, rank_of
from preflight.core.sanitize.dx_geometry import Geometry


def exact_pivots(geom: Geometry, P64: np.ndarray, noise: Noise, eps: float,
                 allowed: np.ndarray | None = None) -> np.ndarray:
    """Per-ε exact nearest allowed candidate for every token (canonical distances, full
    scan); ``allowed``: (C,) bool mask over ``geom``'s candidates (None = all)."""
    rows_all = np.arange(geom.C) if allowed is None else np.flatnonzero(allowed)
    T = P64.shape[0]
    out = np.empty(T, dtype=np.int64)
    for t in range(T):
        e = noisy_point(P64[t], noise.u[t], noise.g[t], eps)
        best_v = np.inf
        best_i = -1
        for lo in range(0, len(rows_all), 8192):
            rows = rows_all[lo:lo + 8192]
            d = geom.canon_sqdist(rows, e)
            j = int(np.argmin(d))
            if d[j] < best_v:           # strict: earlier (lower) index wins ties
                best_v = float(d[j])
                best_i = int(rows[j])
        out[t] = best_i
    return out


def exact_outputs(
    geom: Geometry, P64: np.ndarray, noise: Noise, eps: float, c: float, rank_step: bool = True,
    allowed: np.ndarray | None = None,
) -> np.ndarray:
    """The reference mechanism at one ε: full scans for pivot and ranking (slow). The
    rank step's distribution runs over the allowed candidates only."""
    piv = exact_pivots(geom, P64, noise, eps, allowed)
    if not rank_step:
        return piv
    size = geom.C if allowed is None else int(allowed.sum())
    ks = rank_of(noise.U, eps, c, size)
    out = piv.copy()
    for t in range(len(piv)):
        if ks[t] > 0:
            ranking = geom.full_ranking(int(piv[t]))
            if allowed is not None:
                ranking = ranking[allowed[ranking]]
            out[t] = ranking[ks[t]]
    return out


def reference_outputs(prepared, epsilon: float) -> np.ndarray:
    """Output ids of a prepared document's tokens in scope by the per-ε exact search with
    the same noise: a full scan of the whole vocabulary for the pivot and a full ranking
    for the rank step, restricted to each token's word-boundary class by a mask — the
    yardstick :meth:`DxPrepared.token_outputs` must equal."""
    mech = prepared.mech
    whole = mech.geometry
    ids, _fast = prepared.token_outputs(epsilon)
    out = ids.copy()
    for rows, P64, noise, cand in prepared.class_draws():
        allowed = np.isin(whole.cand, cand)
        o = exact_outputs(whole, P64, noise, float(epsilon), mech.rank_constant,
                          rank_step=prepared.mech.rank_step, allowed=allowed)
        out[rows] = whole.cand[o]
    return out
