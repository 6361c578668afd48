"""Numerics of exact d_X-privacy: per-ε exact search and the slider fast path.

Size (~460 lines): one algorithm — the noise, the pivot envelope over ε and the rank step
share one canonical float64 arithmetic; split apart, the exactness argument below would
span files.

The mechanism (utility-assessor-full.txt, Algorithm 1, with the rank step of Asghar et
al.) for one token x with embedding p = φ(x):

    u ~ uniform on the unit sphere, g ~ Gamma(n, 1)          (drawn once per token)
    e'(ε) = p + (g/ε)·u                                       (= r·u with r ~ Gamma(n, 1/ε))
    pivot(ε) = argmin_z ‖φ(z) − e'(ε)‖     over the candidate vocabulary
    k(ε) = F⁻¹(U) of P(k) ∝ exp(−c·ε·k), k = 0..C−1         (U ~ U(0,1), drawn once)
    output = the k-th nearest candidate of the pivot (rank 0 = the pivot)

**What "exact" means here.** Both paths decide with the same *canonical* float64
distance, :func:`canon_sqdist` (row-wise sum of squared differences; numpy's per-row
reduction does not depend on how many rows are passed), and break exact ties by the
lowest candidate index (= lowest token id). The reference path
(:mod:`preflight.core.sanitize.dx_reference`) evaluates it over the whole vocabulary at
every ε. The fast path never does: it keeps,
per token, only the lines that can come within a rigorous floating-point error bound of
the lower envelope, and resolves near-ties with the canonical distance. It therefore
returns bit-for-bit the same tokens as the reference (tests/core/sanitize/test_dx_exact.py).

This module is longer than the ~400-line guideline on purpose: :func:`build_envelope` and
its error bounds are one argument (the pruning stages only make sense together, and the
tolerances of stage 1 are the ones stage 3 relies on), so splitting it would scatter one
proof over several files. The geometry and the reference search live in their own modules.

**Why the fast path works.** With (u, g) fixed, ‖φ(z) − e'(s)‖² = a_z + s·b_z + C(s) with
s = 1/ε, a_z = ‖φ(z)‖² − 2φ(z)·p, b_z = −2g·u·φ(z) and C(s) common to all z. The pivot for
every ε in [ε_min, ε_max] is the lower envelope of C lines on [1/ε_max, 1/ε_min]; a line
that stays above the two endpoint minimizers (plus error margin) over the interval can
never be the pivot and is pruned in float32, the rest is walked exactly in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from preflight.core.sanitize.dx_geometry import REL64, U32, Geometry


# --------------------------------------------------------------------------- noise


@dataclass(frozen=True)
class Noise:
    """The per-token random draws; fixed for a preparation (the slider's seed)."""

    u: np.ndarray      # (T, n) float64 unit directions
    g: np.ndarray      # (T,) Gamma(n, 1) magnitudes (r = g/ε)
    U: np.ndarray      # (T,) uniforms for the rank step


def draw_noise(seed: int, token_ids: np.ndarray, occurrence: np.ndarray, n: int) -> Noise:
    """Independent draws per token, keyed by (seed, token id, occurrence number) so an
    edit elsewhere in the document leaves a token's draw unchanged."""
    T = len(token_ids)
    u = np.empty((T, n), dtype=np.float64)
    g = np.empty(T, dtype=np.float64)
    U = np.empty(T, dtype=np.float64)
    for t in range(T):
        rng = np.random.default_rng([seed % 2**63, int(token_ids[t]), int(occurrence[t]), 0xD7])
        v = rng.standard_normal(n)
        u[t] = v / np.linalg.norm(v)
        g[t] = rng.gamma(n, 1.0)
        U[t] = rng.random()
    return Noise(u, g, U)


def noisy_point(p64: np.ndarray, u: np.ndarray, g: float, eps: float) -> np.ndarray:
    """e'(ε) = p + (g/ε)·u, computed the same way by every path."""
    coef = g * (1.0 / eps)
    return p64 + coef * u


def rank_of(U: np.ndarray, eps: float, c: float, C: int) -> np.ndarray:
    """Inverse CDF of the truncated geometric P(k) ∝ exp(−cεk), k = 0..C−1."""
    lam = c * eps
    if lam <= 0:
        raise ValueError("c·ε must be positive")
    w = -np.expm1(-lam * C)                        # 1 − q^C
    x = np.log1p(-np.asarray(U, dtype=np.float64) * w)   # log(1 − U(1 − q^C)) ≤ 0
    k = np.ceil(x / (-lam)) - 1.0
    return np.clip(k, 0, C - 1).astype(np.int64)


# --------------------------------------------------------------------------- fast path


@dataclass
class Envelope:
    """Per-token kept lines over s ∈ [s0, s1] (s = 1/ε), flattened for vectorized queries."""

    s0: float
    s1: float
    offsets: np.ndarray     # (T+1,) start of each token's lines
    idx: np.ndarray         # (L,) candidate index of each kept line (ascending per token)
    a: np.ndarray           # (L,) float64 intercepts
    b: np.ndarray           # (L,) float64 slopes
    s_hi: np.ndarray        # (L,) largest s at which the line may be the pivot
    seg_pivots: list        # per token: [(s_from, s_to, candidate index)] exact envelope walk
    tol0: np.ndarray        # (T,) contender tolerance: tol(s) = (tol0 + tol1·s)²
    tol1: np.ndarray


def _tolerance_terms(
    geom: Geometry, pnorm: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # float64 evaluation error bound ~ REL64 · (‖φ‖max + ‖p‖ + g·s)²
    r = math.sqrt(REL64)
    return r * (geom.nmax + pnorm), r * g


def build_envelope(
    geom: Geometry,
    P: np.ndarray,
    noise: Noise,
    eps_min: float,
    eps_max: float,
    chunk: int = 256,
    grid: int = 3,
    token_ids: np.ndarray | None = None,
    rank_c: float | None = None,
    timings: dict | None = None,
) -> Envelope:
    """Prepare the exact pivot of every token for every ε in [eps_min, eps_max].

    Three stages, each keeping a superset of the lines that can be the canonical
    nearest neighbour somewhere in the range:
      1. dense, float32 (after one sgemm per chunk): on each of ``grid`` geometric
         sub-intervals a line must come below both endpoint minimizers (+ error margin);
      2. sparse, on the survivors' float32 values: within the margin of their envelope;
      3. float64 lines of the remaining few: within the float64 tolerance band.
    """
    T = P.shape[0]
    clock = _Clock(timings)
    s0, s1 = 1.0 / eps_max, 1.0 / eps_min
    P32 = np.ascontiguousarray(P, dtype=np.float32)
    P64 = P32.astype(np.float64)
    pnorm = np.sqrt((P64 * P64).sum(axis=1))
    g = noise.g
    t0, t1 = _tolerance_terms(geom, pnorm, g)
    # rigorous float32 line error (intercept + slope·s) for the screening
    gam = geom.gamma32
    err_a = 2 * gam * geom.nmax * pnorm + 6 * U32 * (geom.sqmax + 2 * geom.nmax * pnorm) + 1e-6
    err_b = 2 * gam * geom.nmax * g + 6 * U32 * (2 * geom.nmax * g)
    sig = np.geomspace(s0, s1, grid + 1) if s1 > s0 else np.full(grid + 1, s0)

    def margin(rows: np.ndarray, s: float) -> np.ndarray:
        # 2 x float32 error of a line + 4 x the float64 tolerance (kept for stage 3)
        return 2 * (err_a[rows] + err_b[rows] * s) + 4 * (t0[rows] + t1[rows] * s) ** 2

    uniq, inv = np.unique(P32, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    # walk tokens grouped by vector so each chunk computes few distinct a-rows
    order_t = np.argsort(inv, kind="stable")
    xdepth = None
    if rank_c is not None and token_ids is not None:
        # deepest rank the token itself may need as pivot (at the smallest ε), capped
        xdepth = np.minimum(rank_of(noise.U, eps_min * (1 - 1e-9), rank_c, geom.C) + 2, 320)
    cand_a: list[np.ndarray] = [None] * T  # type: ignore[list-item]
    cand_b: list[np.ndarray] = [None] * T  # type: ignore[list-item]
    cand_i: list[np.ndarray] = [None] * T  # type: ignore[list-item]
    phiT = geom.phi.T
    u32 = noise.u.astype(np.float32)
    sub = 16   # rows per dense block: keeps the grid arrays in cache
    for lo in range(0, T, chunk):
        hi = min(lo + chunk, T)
        rows = order_t[lo:hi]
        ukeys = np.unique(inv[rows])
        clock.lap("setup")
        # one sgemm for both: rows -2p (distinct token vectors) and -2g·u (per token);
        # big row blocks keep BLAS efficient
        k = len(ukeys)
        X = np.concatenate([uniq[ukeys] * np.float32(-2.0),
                            u32[rows] * (-2.0 * g[rows]).astype(np.float32)[:, None]])
        Y = X @ phiT
        Au = Y[:k]
        Au += geom.sq32[None, :]
        B = Y[k:]
        clock.lap("sgemm")
        if xdepth is not None:
            _x_neighbours(geom, ukeys, Au, inv, rows, token_ids, xdepth)
        clock.lap("x_neighbours")
        amap = np.searchsorted(ukeys, inv[rows])   # token row -> its a-row in Au
        def dense(blo: int) -> None:
            a = Au[amap[blo:blo + sub]]
            b = B[blo:blo + sub]
            brows = rows[blo:blo + sub]
            r = np.arange(len(brows))
            Fs, ws, Ms = [], [], []
            for s in sig:
                F = np.multiply(b, np.float32(s))
                F += a
                Fs.append(F)
                ws.append(np.argmin(F, axis=1))
                Ms.append(margin(brows, float(s)))
            keep = np.zeros(a.shape, dtype=bool)
            tmp = np.empty(a.shape, dtype=bool)
            tmp2 = np.empty(a.shape, dtype=bool)
            for k in range(grid + 1):     # near the minimum at a grid point
                thr = (Fs[k][r, ws[k]] + Ms[k]).astype(np.float32)[:, None]
                np.less_equal(Fs[k], thr, out=tmp)
                keep |= tmp
            for k in range(grid):         # below both endpoint minimizers inside
                Fa, Fb = Fs[k], Fs[k + 1]
                cross_a = (Fa[r, ws[k + 1]] + Ms[k]).astype(np.float32)[:, None]
                cross_b = (Fb[r, ws[k]] + Ms[k + 1]).astype(np.float32)[:, None]
                np.less_equal(Fa, cross_a, out=tmp)
                np.less_equal(Fb, cross_b, out=tmp2)
                tmp &= tmp2
                keep |= tmp
            for i, t in enumerate(brows.tolist()):
                j = np.flatnonzero(keep[i])
                cand_i[t] = j
                cand_a[t] = a[i, j].astype(np.float64)
                cand_b[t] = b[i, j].astype(np.float64)

        # numpy releases the GIL in these loops: two threads use both cores
        list(geom.pool().map(dense, range(0, len(rows), sub)))
        clock.lap("dense")

    offsets = [0]
    idx_l, a_l, b_l, shi_l, segs = [], [], [], [], []
    for t in range(T):
        S, a32, b32 = cand_i[t], cand_a[t], cand_b[t]
        if len(S) > 48:
            # stage 2: envelope of the float32 values, keep lines within the margin
            _, pts = _walk_envelope(a32, b32, s0, s1)
            vals = a32[:, None] + b32[:, None] * pts[None, :]
            L = vals.min(axis=0)
            band = 2 * (err_a[t] + err_b[t] * pts) + 4 * _lin_tol(t0[t], t1[t], s0, s1, pts)
            S2 = np.flatnonzero((vals - L[None, :] - band[None, :] <= 0).any(axis=1))
            S = S[S2]
        # stage 3: float64 lines
        phs = geom.phi[S].astype(np.float64)
        a = geom.sq64[S] - 2.0 * (phs @ P64[t])
        b = -2.0 * g[t] * (phs @ noise.u[t])
        seg, pts = _walk_envelope(a, b, s0, s1)
        vals = a[:, None] + b[:, None] * pts[None, :]
        L = vals.min(axis=0)
        band = 6 * _lin_tol(t0[t], t1[t], s0, s1, pts) + 1e-12 * (1 + np.abs(L))
        ok = vals - L[None, :] - band[None, :] <= 0
        kept = np.flatnonzero(ok.any(axis=1))
        okk = ok[kept]
        # largest s where a kept line may win: next grid point after its last ok point
        last = okk.shape[1] - 1 - np.argmax(okk[:, ::-1], axis=1)
        s_hi = pts[np.minimum(last + 1, len(pts) - 1)]
        order = np.argsort(S[kept], kind="stable")
        kept = kept[order]
        idx_l.append(S[kept])
        a_l.append(a[kept])
        b_l.append(b[kept])
        shi_l.append(s_hi[order])
        segs.append([(fs, ts, int(S[j])) for fs, ts, j in seg])
        offsets.append(offsets[-1] + len(kept))
    clock.lap("exact_lines")
    return Envelope(
        s0=s0, s1=s1,
        offsets=np.asarray(offsets, dtype=np.int64),
        idx=np.concatenate(idx_l) if idx_l else np.zeros(0, np.int64),
        a=np.concatenate(a_l) if a_l else np.zeros(0),
        b=np.concatenate(b_l) if b_l else np.zeros(0),
        s_hi=np.concatenate(shi_l) if shi_l else np.zeros(0),
        seg_pivots=segs, tol0=t0, tol1=t1,
    )


def _x_neighbours(geom: Geometry, ukeys: np.ndarray, Au: np.ndarray, inv: np.ndarray,
                  rows: np.ndarray, token_ids: np.ndarray, depth: np.ndarray) -> None:
    """Neighbour lists of the input tokens themselves (the pivot at large ε), selected
    from the a-rows the envelope needs anyway (saves one sgemm row per distinct token)."""
    want: dict[int, tuple[int, int]] = {}
    for r, key in enumerate(ukeys.tolist()):
        ts = rows[inv[rows] == key]
        for t in ts.tolist():
            p = int(geom.index_of[token_ids[t]])
            if p >= 0 and depth[t] > 1 and depth[t] > want.get(p, (0, 0))[0]:
                want[p] = (int(depth[t]), r)
    if not want:
        return
    missing = geom.missing({p: d for p, (d, _) in want.items()})
    if missing:
        geom.neighbours_from_rows(
            np.asarray([p for p, _ in missing], dtype=np.int64),
            Au[[want[p][1] for p, _ in missing]], [d for _, d in missing])


class _Clock:
    """Optional per-stage CPU timings (benchmarks pass a dict; otherwise a no-op)."""

    def __init__(self, sink: dict | None) -> None:
        import time

        self.sink = sink
        self._now = time.perf_counter
        self.t = self._now() if sink is not None else 0.0

    def lap(self, name: str) -> None:
        if self.sink is None:
            return
        t = self._now()
        self.sink[name] = self.sink.get(name, 0.0) + (t - self.t)
        self.t = t


def _lin_tol(t0: float, t1: float, s0: float, s1: float, pts: np.ndarray) -> np.ndarray:
    """Chord of the convex tolerance (t0 + t1·s)² over [s0, s1] (an upper bound on it)."""
    lam = (pts - s0) / (s1 - s0) if s1 > s0 else np.zeros_like(pts)
    return (t0 + t1 * s0) ** 2 * (1 - lam) + (t0 + t1 * s1) ** 2 * lam


def _walk_envelope(a: np.ndarray, b: np.ndarray, s0: float, s1: float):
    """Lower envelope of lines a + s·b on [s0, s1]: segments [(from, to, line)] and the
    grid of endpoints + breakpoints."""
    v0 = a + s0 * b
    cur = int(np.argmin(v0))
    s = s0
    segs = []
    pts = [s0]
    for _ in range(len(a) + 1):
        db = b[cur] - b                      # > 0 for lines that fall faster
        cand = db > 0
        if not cand.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            cross = (a - a[cur]) / np.where(cand, db, 1.0)
        cross = np.where(cand & (cross >= s), cross, np.inf)
        nxt_s = float(cross.min())
        if not nxt_s < s1:
            break
        # among lines crossing at the same point take the steepest (it stays lowest)
        tie = np.flatnonzero(cross <= nxt_s)
        nxt = int(tie[np.argmin(b[tie])])
        segs.append((s, nxt_s, cur))
        pts.append(nxt_s)
        cur, s = nxt, nxt_s
    segs.append((s, s1, cur))
    pts.append(s1)
    return segs, np.asarray(pts, dtype=np.float64)


def envelope_pivots(
    geom: Geometry, env: Envelope, P64: np.ndarray, noise: Noise, eps: float
) -> np.ndarray:
    """Exact pivots at ε (within the envelope's range), identical to :func:`exact_pivots`."""
    s = 1.0 / eps
    T = len(env.offsets) - 1
    if T == 0:
        return np.zeros(0, dtype=np.int64)
    vals = env.a + s * env.b
    starts = env.offsets[:-1]
    segmin = np.minimum.reduceat(vals, starts)
    counts = np.diff(env.offsets)
    seg = np.repeat(np.arange(T), counts)
    tol = 4 * (env.tol0 + env.tol1 * s) ** 2 + 1e-12 * (1 + np.abs(segmin))
    contender = vals <= (segmin + tol)[seg]
    ncont = np.add.reduceat(contender.astype(np.int64), starts)
    cidx = np.flatnonzero(contender)
    first = np.full(T, -1, dtype=np.int64)
    useg, pos = np.unique(seg[cidx], return_index=True)
    first[useg] = cidx[pos]
    out = env.idx[first]
    for t in np.flatnonzero(ncont > 1):
        rows = env.idx[cidx[seg[cidx] == t]]        # ascending candidate index
        e = noisy_point(P64[t], noise.u[t], noise.g[t], eps)
        d = geom.canon_sqdist(rows, e)
        out[t] = rows[int(np.argmin(d))]
    return out


def plan_depths(env: Envelope, noise: Noise, c: float, C: int) -> dict[int, int]:
    """Neighbour-list depth each possible pivot needs over the prepared ε range."""
    T = len(env.offsets) - 1
    counts = np.diff(env.offsets)
    seg = np.repeat(np.arange(T), counts)
    # k is non-increasing in ε: the deepest rank a line needs is at its smallest ε;
    # shave ε a little so rounding at integer boundaries cannot exceed the plan.
    eps_lo = (1.0 / env.s_hi) * (1 - 1e-9)
    lam = c * eps_lo
    w = -np.expm1(-lam * C)
    k = np.ceil(np.log1p(-noise.U[seg] * w) / (-lam)) - 1.0
    k = np.clip(k, 0, C - 1).astype(np.int64) + 2
    need: dict[int, int] = {}
    for j, d in zip(env.idx.tolist(), k.tolist()):
        if d > need.get(j, 0):
            need[j] = d
    return need


def rank_step(geom: Geometry, pivots: np.ndarray, U: np.ndarray, eps: float,
              c: float) -> np.ndarray:
    """The rank step on given pivots: each token's k(ε)-th nearest candidate of its
    pivot, read from the verified neighbour lists (the product path; the reference
    :func:`exact_outputs` ranks the whole vocabulary instead)."""
    ks = rank_of(U, eps, c, geom.C)
    out = pivots.copy()
    kth = geom.kth
    for t in np.flatnonzero(ks > 0).tolist():
        out[t] = kth(int(pivots[t]), int(ks[t]))
    return out


def envelope_outputs(
    geom: Geometry, env: Envelope, P64: np.ndarray, noise: Noise, eps: float, c: float,
    with_rank_step: bool = True,
) -> np.ndarray:
    """The fast path at ε (what ``DxPrepared.at`` outputs): the envelope's exact pivots,
    then the rank step. Identical to :func:`~preflight.core.sanitize.dx_reference.
    exact_outputs`."""
    piv = envelope_pivots(geom, env, P64, noise, eps)
    return rank_step(geom, piv, noise.U, eps, c) if with_rank_step else piv


def take_envelope(env: Envelope, t: int) -> Envelope:
    """Token ``t`` of an envelope as a one-token envelope."""
    lo, hi = int(env.offsets[t]), int(env.offsets[t + 1])
    return Envelope(
        s0=env.s0, s1=env.s1, offsets=np.asarray([0, hi - lo], dtype=np.int64),
        idx=env.idx[lo:hi], a=env.a[lo:hi], b=env.b[lo:hi], s_hi=env.s_hi[lo:hi],
        seg_pivots=[env.seg_pivots[t]], tol0=env.tol0[t:t + 1], tol1=env.tol1[t:t + 1],
    )


def concat_envelopes(parts: list[Envelope], like: Envelope) -> Envelope:
    """Join per-token envelopes (all over the same range) in order."""
    if not parts:
        z = np.zeros(0)
        return Envelope(like.s0, like.s1, np.zeros(1, np.int64), z.astype(np.int64), z, z, z,
                        [], z, z)
    sizes = [int(p.offsets[-1]) for p in parts]
    return Envelope(
        s0=parts[0].s0, s1=parts[0].s1,
        offsets=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        idx=np.concatenate([p.idx for p in parts]),
        a=np.concatenate([p.a for p in parts]),
        b=np.concatenate([p.b for p in parts]),
        s_hi=np.concatenate([p.s_hi for p in parts]),
        seg_pivots=[s for p in parts for s in p.seg_pivots],
        tol0=np.concatenate([p.tol0 for p in parts]),
        tol1=np.concatenate([p.tol1 for p in parts]),
    )


def occurrences(ids: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same token id (the noise
    key of a token is (seed, id, occurrence), so an edit elsewhere never changes it)."""
    seen: dict[int, int] = {}
    occ = np.empty(len(ids), dtype=np.int64)
    for t, i in enumerate(ids.tolist()):
        occ[t] = seen.get(i, 0)
        seen[i] = occ[t] + 1
    return occ
