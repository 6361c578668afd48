"""The optimal context-free attack on d_X output (``reconstruction-attacks.txt``, Thm 1).

For each released token y the attacker, who knows the mechanism, its ε and the word-
boundary class of y (the text shows it), guesses

    x̂ = argmax_x  prior(x | class) · P(y | x, ε)

with the prior of :mod:`.dx_prior` (public corpus counts) and P(y | x, ε) estimated by
Monte Carlo over the product's own noise (:mod:`.dx_likelihood`). Success = the share of
released tokens whose guess is the original token. Two naive attacks for comparison:
``identity`` (guess y itself) and ``nearest`` (nearest-neighbour inversion: the nearest
class member of y that occurs in the public corpus — y itself when it does).

**Candidates (truncation).** x ranges over S(y) = y itself ∪ the M most frequent class
members under the prior ∪ those of y's K nearest class members that the prior ranks
above y (a less frequent x would need P(y | x) > P(y | y), while the output is most
likely the input itself) and that the d_X bound P(y | x) ≤ exp(ε·d(x, y))·P(y | y) does
not already rule out. A token outside S(y) is never guessed; the effect on success is
measured by ``preflight_eval.bench_privacy --truncation`` (success with 2K, 2M: within
±0.004 on a 1,358-token document) and the rule is stated in the result's ``truncation``.

**API** (the composition root builds it: ``services.dx_attack()``)::

    attack = DxAttack(mechanism, prior)              # one per d_X mechanism; memoizes
    result = attack.run(prepared, epsilon=40.0,      # a DxPrepared (DxMechanism.prepare)
                        grid=None,                   # ε grid of the curve; None: 9 points
                        spans=None,                  #   over the calibrated range; spans:
                        cancel=None,                 #   detected PII (default prepared's)
                        max_tokens=None)             # None: the attack's budget (256)

``result`` is a :class:`DxAttackResult`: ``success``, ``success_pii`` (None without PII
tokens in scope), ``identity`` (= the share of tokens left unchanged), ``nearest`` at
``epsilon``; ``curve`` (one
:class:`AttackPoint` per ε of the grid, ascending, the current ε included); ``mc_error``
(bootstrap standard error of ``success`` over the Monte Carlo draws), ``sampling_error``
(standard error from attacking a fixed random subset of ``max_tokens`` tokens when the
document has more; 0 otherwise), ``likelihood_se`` (90th percentile of the relative
standard error of the winning P(y | x, ε) over the released tokens), ``seconds``, and the
settings (samples, K, M, truncation). ``attack.likelihood(label, xs, y, ε)`` gives the
estimate P(y | x, ε) and its standard error for chosen candidates. Runs in the caller's
thread (a background lane in the window); ``cancel`` is a ``threading.Event``.

**Cost.** Monte Carlo paths are memoized per (candidate, ε) in the attack object, so the
same document at another slider position, or a later document, reuses them;
``warm_up()`` does the one-time part (the top-M of every class on the default grid).
``preflight_eval.bench_privacy`` prints the cold and warm times.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from preflight.core.errors import Cancelled
from preflight.core.privacy.dx_likelihood import (
    RANK_TAIL,
    PathSampler,
    draw_values,
    rank_depth,
    rank_weights,
)
from preflight.core.privacy.dx_prior import TokenPrior, class_log_prior
from preflight.core.types import Span

GRID_POINTS = 9
SAMPLES = 16
K_NEAR = 8
TOP_M = 8
MAX_TOKENS = 256
BOOTSTRAP = 24
SEED = 0x0A77AC4   # the sampler's own seed (never a document's)


@dataclass(frozen=True)
class AttackPoint:
    epsilon: float
    success: float            # optimal (Bayesian) attack, tokens in scope
    success_pii: float | None
    identity: float           # naive: guess y (= the share the mechanism left unchanged)
    nearest: float            # naive: nearest corpus token of y
    mc_error: float           # bootstrap SE of ``success`` over the MC draws
    sampling_error: float     # SE from evaluating a subset of the tokens (0: all)


@dataclass(frozen=True)
class DxAttackResult:
    epsilon: float
    success: float
    success_pii: float | None
    identity: float
    nearest: float
    mc_error: float
    sampling_error: float
    likelihood_se: float
    curve: tuple[AttackPoint, ...]
    tokens: int               # tokens in scope (released through d_X)
    evaluated: int            # of which attacked (all, or a fixed subset of max_tokens)
    pii_tokens: int           # evaluated tokens inside detected PII spans
    samples: int
    k_near: int
    top_m: int
    truncation: str
    seconds: float

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "curve"}
        d["curve"] = [p.__dict__ for p in self.curve]
        return d


class DxAttack:
    """The optimal context-free attack against one d_X mechanism (memoizes paths)."""

    def __init__(self, mechanism, prior: TokenPrior, *, samples: int = SAMPLES,
                 k_near: int = K_NEAR, top_m: int = TOP_M, max_tokens: int = MAX_TOKENS,
                 seed: int = SEED) -> None:
        self.mech, self.prior = mechanism, prior
        self.max_tokens = int(max_tokens)
        self.samples, self.k_near, self.top_m, self.seed = samples, k_near, top_m, seed
        self._samplers: dict[str, PathSampler] = {}
        self._logp: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def default_grid(self, epsilon: float | None = None) -> tuple[float, ...]:
        """GRID_POINTS geometric points over the calibrated range, with ``epsilon``."""
        lo, hi = self.mech.epsilon_range
        return _with_point(np.geomspace(lo, hi, GRID_POINTS), epsilon)

    def warm_up(self, grid: tuple[float, ...] | None = None) -> None:
        """One-time work: the top-M prior tokens of every class, sampled for ``grid``."""
        grid = grid or self.default_grid()
        for label in self.mech.geometries:
            self._sampler(label).pivots(self._top(label), grid)

    def run(self, prepared, epsilon: float | None = None, grid: Sequence[float] | None = None,
            spans: Sequence[Span] | None = None, cancel: threading.Event | None = None,
            max_tokens: int | None = None) -> DxAttackResult:
        t0 = time.perf_counter()
        # ε rounded as the grid's points are (a slider's ε has many decimals)
        eps = round(float(epsilon if epsilon is not None else prepared.params.epsilon
                          or np.sqrt(np.prod(self.mech.epsilon_range))), 6)
        g = _with_point(grid, eps) if grid is not None else self.default_grid(eps)
        w = prepared.work                      # the preparation's own token facts
        total = len(w.active)
        budget = self.max_tokens if max_tokens is None else int(max_tokens)
        # a fixed random subset of the tokens in scope when there are more than the
        # budget (the same tokens at every ε): its sampling error is reported
        sel = np.arange(total) if total <= budget else np.sort(
            np.random.default_rng([self.seed, prepared.seed % 2**63]).choice(
                total, budget, replace=False))
        pii = _pii_mask(w, prepared.spans if spans is None else spans)[sel]
        cls = w.cls[sel]
        points, lse = [], []
        outs = {e: prepared.token_outputs(e)[1][sel] for e in g}
        in_ids = w.ids[w.active][sel]
        guesses, boots = self._attack(cls, in_ids, outs, g, cancel, lse)
        fpc = 1.0 - len(sel) / total if total else 0.0   # finite-population correction
        for e in g:
            y = outs[e]
            ok = guesses[e] == in_ids
            b = boots[e] == in_ids[None, :]
            points.append(AttackPoint(
                epsilon=e, success=_share(ok), success_pii=_share(ok[pii]) if pii.any() else None,
                identity=_share(y == in_ids), nearest=_share(self._nearest(cls, y) == in_ids),
                mc_error=float(b.mean(axis=1).std(ddof=1)) if len(b) > 1 and b.size else 0.0,
                sampling_error=math.sqrt(max(_share(ok) * (1 - _share(ok)), 0.0)
                                         / max(len(sel), 1) * fpc)))
        cur = next(p for p in points if p.epsilon == eps)
        return DxAttackResult(
            epsilon=eps, success=cur.success, success_pii=cur.success_pii,
            identity=cur.identity, nearest=cur.nearest, mc_error=cur.mc_error,
            sampling_error=cur.sampling_error,
            likelihood_se=float(np.percentile(lse, 90)) if lse else 0.0,
            curve=tuple(points), tokens=int(total), evaluated=len(sel),
            pii_tokens=int(pii.sum()),
            samples=self.samples, k_near=self.k_near, top_m=self.top_m,
            truncation=(f"candidates: the released token, those of its {self.k_near} nearest "
                        f"class members that are more frequent and not excluded by the d_X "
                        f"bound, and the {self.top_m} most frequent members of its class; "
                        f"rank-step mass beyond the neighbour depth < {RANK_TAIL:g}"),
            seconds=time.perf_counter() - t0)

    def likelihood(self, label: str, xs: np.ndarray, y: int, epsilon: float
                   ) -> tuple[np.ndarray, np.ndarray]:
        """P(y | x, ε) and its standard error for the candidate indices ``xs`` of class
        ``label`` (indices into the class geometry, like ``y``)."""
        geom = self.mech.geometries[label]
        depth = rank_depth(float(epsilon), self.mech.rank_constant, geom.C)
        w = rank_weights(float(epsilon), self.mech.rank_constant, geom.C, depth)
        cands = np.asarray(xs, dtype=np.int64)[None, :]
        v = self._values(geom, self._sampler(label), cands, np.asarray([y]), float(epsilon),
                         w, depth, None)[0]
        return v.mean(axis=-1), v.std(axis=-1, ddof=1) / np.sqrt(self.samples)

    # ----- internals

    def _sampler(self, label: str) -> PathSampler:
        with self._lock:
            if label not in self._samplers:
                self._samplers[label] = PathSampler(self.mech.space.matrix,
                                                    self.mech.geometries[label],
                                                    self.samples, self.seed)
            return self._samplers[label]

    def _log_prior(self, label: str) -> np.ndarray:
        with self._lock:
            if label not in self._logp:
                geom = self.mech.geometries[label]
                self._logp[label] = class_log_prior(self.prior, geom.cand)
            return self._logp[label]

    def _top(self, label: str) -> np.ndarray:
        lp = self._log_prior(label)
        m = min(self.top_m, len(lp))
        return np.sort(np.argpartition(-lp, m - 1)[:m]) if m else np.zeros(0, np.int64)

    def _attack(self, cls: np.ndarray, in_ids: np.ndarray, outs: dict, grid: tuple,
                cancel, lse: list) -> tuple[dict, dict]:
        """Guesses (and bootstrap guesses) of every token in scope at every ε."""
        guesses = {e: in_ids.copy() for e in grid}      # unclassed tokens: sent unchanged
        boots = {e: np.repeat(in_ids[None, :], BOOTSTRAP, axis=0) for e in grid}
        labels = self.mech.classes.labels
        c = self.mech.rank_constant
        rng = np.random.default_rng(self.seed)
        resample = rng.integers(0, self.samples, size=(BOOTSTRAP, self.samples))
        for k in np.unique(cls[cls >= 0]).tolist():
            label = labels[k]
            geom = self.mech.geometries[label]
            rows = np.flatnonzero(cls == k)
            lp = self._log_prior(label)
            top = self._top(label)
            depth = rank_depth(min(grid), c, geom.C)
            K = min(self.k_near, depth)
            ys = {e: geom.index_of[outs[e][rows]] for e in grid}
            uniq_y = np.unique(np.concatenate(list(ys.values())))
            geom.ensure_neighbours({int(y): max(K, 2) for y in uniq_y.tolist()})
            near = {int(y): self._near(geom, lp, int(y), K) for y in uniq_y.tolist()}
            sampler = self._sampler(label)
            for e in grid:
                _check(cancel)
                cands, vals = self._likelihoods(geom, sampler, lp, top, near, ys[e], e,
                                                depth, cancel)
                n = np.arange(len(rows))
                logw = lp[cands]
                best = _argmax_posterior(logw, vals.mean(axis=-1))
                guesses[e][rows] = geom.cand[cands[n, best]]
                m = vals.mean(axis=-1)[n, best]
                sd = vals.std(axis=-1, ddof=1)[n, best] / np.sqrt(self.samples)
                lse.extend((sd[m > 0] / m[m > 0]).tolist())
                for b in range(BOOTSTRAP):
                    bb = _argmax_posterior(logw, vals[..., resample[b]].mean(axis=-1))
                    boots[e][b, rows] = geom.cand[cands[n, bb]]
        return guesses, boots

    def _likelihoods(self, geom, sampler, lp, top, near, y, eps, depth, cancel):
        """Candidates (T, W) of each released token (padded by repeating y) and the
        per-draw values (T, W, N) of P(y | x, ε).

        Stage 1: y itself and the class's top-M. Stage 2: y's more frequent near
        neighbours, each only if the d_X bound P(y | x) ≤ exp(ε·d(x, y))·P(y | y) leaves
        it a chance against the best stage-1 weight (with P(y | y) at its estimate plus
        two standard errors)."""
        c = self.mech.rank_constant
        w = rank_weights(eps, c, geom.C, depth)
        first = np.concatenate([y[:, None], np.broadcast_to(top, (len(y), len(top)))], axis=1)
        v1 = self._values(geom, sampler, first, y, eps, w, depth, cancel)
        with np.errstate(divide="ignore"):
            best = (lp[first] + np.log(v1.mean(axis=-1))).max(axis=1)
        m = v1[:, 0].mean(axis=-1)
        hi = m + 2 * v1[:, 0].std(axis=-1) / np.sqrt(self.samples)
        extra: list[np.ndarray] = []
        for t, v in enumerate(y.tolist()):
            nb = near[v][1:]
            if len(nb) and hi[t] > 0:
                d = np.sqrt(geom.canon_sqdist(nb, geom.phi[v].astype(np.float64)))
                nb = nb[lp[nb] + eps * d + np.log(hi[t]) >= best[t]]
            else:
                nb = nb[:0]
            extra.append(nb)
        width = max((len(x) for x in extra), default=0)
        if width == 0:
            return first, v1
        more = np.stack([np.concatenate([x, np.full(width - len(x), y[t])])
                         for t, x in enumerate(extra)]).astype(np.int64)
        v2 = self._values(geom, sampler, more, y, eps, w, depth, cancel)
        return np.concatenate([first, more], axis=1), np.concatenate([v1, v2], axis=1)

    @staticmethod
    def _values(geom, sampler, cands, y, eps, w, depth, cancel) -> np.ndarray:
        xs, inv = np.unique(cands, return_inverse=True)
        piv = sampler.pivots(xs, (eps,), cancel)[:, 0][inv.reshape(cands.shape)]
        return draw_values(geom, piv, y, w, depth)

    @staticmethod
    def _near(geom, lp: np.ndarray, y: int, K: int) -> np.ndarray:
        """y and those of its K nearest class members the prior ranks above it (a less
        frequent x would need P(y | x) > P(y | y) to win: the output is most likely
        the input itself)."""
        nb = geom.neighbours(y, K)[:K]
        return np.concatenate([[y], nb[1:][lp[nb[1:]] > lp[y]]]).astype(np.int64)

    def _nearest(self, cls: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Nearest-neighbour inversion: the nearest class member of y seen in the corpus."""
        out = y.copy()
        seen = self.prior.counts() > 0
        labels = self.mech.classes.labels
        for k in np.unique(cls[cls >= 0]).tolist():
            geom = self.mech.geometries[labels[k]]
            rows = np.flatnonzero(cls == k)
            for r in rows.tolist():
                if seen[y[r]]:
                    continue
                nb = geom.cand[geom.neighbours(int(geom.index_of[y[r]]), 2 * K_NEAR)]
                hit = nb[seen[nb]]
                if len(hit):
                    out[r] = hit[0]
        return out


def _with_point(grid, eps: float | None) -> tuple[float, ...]:
    """The grid (ascending, rounded) with ``eps`` replacing a point within 1 % of it."""
    pts = [round(float(e), 6) for e in grid]
    if eps is not None:
        e = round(float(eps), 6)
        pts = [p for p in pts if abs(p - e) > 0.01 * e] + [e]
    return tuple(sorted(set(pts)))


def _argmax_posterior(logw: np.ndarray, lik: np.ndarray) -> np.ndarray:
    """argmax of log prior + log P̂ per row; rows whose estimates are all 0 fall back to
    the prior alone (the paper's small constant: the likelihood cannot tell them apart)."""
    with np.errstate(divide="ignore"):
        score = logw + np.log(lik)
    none = ~np.isfinite(score).any(axis=1)
    score[none] = logw[none]
    return np.argmax(score, axis=1)


def _pii_mask(work, spans: Sequence[Span]) -> np.ndarray:
    """Which tokens in scope lie in a detected PII span (their unit overlaps it)."""
    units = work.unit_of[work.active]
    us, ue = work.unit_start[units], work.unit_end[units]
    hit = np.zeros(len(units), dtype=bool)
    for sp in spans:
        hit |= (us < sp.end) & (ue > sp.start)
    return hit


def _share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else 0.0


def _check(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()
