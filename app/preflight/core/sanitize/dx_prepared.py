"""A document prepared for d_X: its noise drawn once, sanitized text at any ε.

``DxPrepared`` is built by :meth:`DxMechanism.prepare
<preflight.core.sanitize.dx.DxMechanism.prepare>`; ``at(ε)`` walks the prepared envelope
(:mod:`preflight.core.sanitize.dx_engine`) and the neighbour lists, and is identical to
running the mechanism from scratch at that ε with the same noise.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

from preflight.core.ports import Tokenization
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx_engine import (
    Envelope,
    Noise,
    build_envelope,
    concat_envelopes,
    draw_noise,
    envelope_outputs,
    noisy_point,
    occurrences,
    plan_depths,
    rank_step as apply_rank_step,
    take_envelope,
)
from preflight.core.sanitize.dx_geometry import Geometry
from preflight.core.sanitize.dx_reference import exact_outputs
from preflight.core.sanitize.dx_store import ANNOY_TREES
from preflight.core.types import SanitizedText, Span, apply_replacements

if TYPE_CHECKING:
    from preflight.core.sanitize.dx import DxMechanism


def guarantee_sentence(scope: str, eps: float, n_spans: int, rank_step: bool,
                       approximate: bool, oov: int = 0) -> str:
    if scope == "all":
        s = (f"ε-d_X-privacy with ε = {eps:.4g} holds for every token of the text, "
             f"whatever the PII detection found.")
    elif scope == "rest":
        # the second half of a hybrid policy's guarantee (the first names the spans)
        s = f"Every other token is ε-d_X private with ε = {eps:.4g}."
    elif n_spans:
        s = (f"ε-d_X-privacy with ε = {eps:.4g} holds only for the tokens of the "
             f"{n_spans} detected PII span(s); all other text is sent unchanged and is "
             f"protected only as far as detection found it.")
    else:
        s = ("No PII was detected, so nothing was changed and no privacy guarantee holds "
             "for this text.")
    if not rank_step:
        s += " (Research mode: without the rank step.)"
    if oov:
        s += f" {oov} word(s) missing from the embedding were left unchanged and are not covered."
    if approximate:
        s += (" APPROXIMATE: the nearest neighbour was found with annoy at its default "
              "search_k, which changes the mechanism's output distribution; the stated "
              "guarantee is not established for this output.")
    return s


@dataclass(frozen=True)
class _TokenWork:
    """Per-document token facts (independent of ε)."""

    ids: np.ndarray          # (T,) all token ids of the text
    unit_of: np.ndarray
    unit_start: np.ndarray
    unit_end: np.ndarray
    occurrence: np.ndarray   # (T,) how many earlier tokens have the same id
    active: np.ndarray       # (A,) indices of tokens in scope (sanitized)


class DxPrepared:
    """A document with its noise drawn: ``at(ε)`` gives the sanitized text for any ε."""

    def __init__(self) -> None:  # use DxMechanism.prepare
        self.mech: DxMechanism
        self.text: str
        self.spans: tuple[Span, ...]
        self.params: SanitizeParams
        self.seed: int
        self.epsilon_range: tuple[float, float]   # the prepared ε range (grows on demand)
        self._work: _TokenWork
        self._P64: np.ndarray
        self._noise: Noise
        self._env: Envelope | None
        self._oov = 0
        self._lock = threading.Lock()

    # ----- construction

    @classmethod
    def _build(cls, mech: DxMechanism, text: str, spans: tuple[Span, ...],
               params: SanitizeParams, seed: int, epsilon_range: tuple[float, float],
               reuse: "DxPrepared | None" = None) -> "DxPrepared":
        self = cls()
        self.mech, self.text, self.spans = mech, text, spans
        self.params = replace(params, seed=seed)
        self.seed = seed
        self.epsilon_range = epsilon_range
        space = mech.space
        geom = mech.geometry
        tok = space.tokenize(text)
        self._oov = int(tok.out_of_vocabulary)
        ids = tok.ids
        occ = occurrences(ids)
        active = _active_tokens(tok, spans, params.scope)
        self._work = _TokenWork(ids, tok.unit_of, tok.unit_start, tok.unit_end, occ, active)
        aid = ids[active]
        self._P64 = space.matrix[aid].astype(np.float64)
        if reuse is not None and reuse.seed == seed and reuse._env is not None \
                and reuse.epsilon_range == epsilon_range:
            self._noise, self._env = _reuse_work(self, reuse, geom)
        else:
            self._noise = draw_noise(seed, aid, occ[active], geom.n)
            self._env = None if params.approximate else build_envelope(
                geom, space.matrix[aid], self._noise, epsilon_range[0], epsilon_range[1],
                token_ids=aid, rank_c=mech.rank_constant if params.rank_step else None)
        if self._env is not None and params.rank_step and len(active):
            geom.ensure_neighbours(plan_depths(self._env, self._noise, mech.rank_constant, geom.C))
        return self

    # ----- public API

    def at(self, epsilon: float) -> SanitizedText:
        """The sanitized text at ``epsilon`` (same noise as every other ε)."""
        eps = self.mech._require_epsilon(epsilon)
        out = self._outputs(eps)
        return self._render(eps, out)

    def resample(self, seed: int | None = None) -> "DxPrepared":
        """The same document with fresh noise (a new random seed unless given)."""
        new_seed = seed if seed is not None else secrets.randbits(63)
        return DxPrepared._build(self.mech, self.text, self.spans, self.params,
                                 int(new_seed), self.epsilon_range)

    def update(self, new_text: str, new_spans: Sequence[Span]) -> "DxPrepared":
        """The edited document, re-preparing only tokens whose draw is new.

        A token's noise is keyed by (seed, token id, occurrence number), so the result is
        identical to ``prepare(new_text, new_spans, params)`` with the same seed.
        """
        return DxPrepared._build(self.mech, new_text, tuple(new_spans), self.params,
                                 self.seed, self.epsilon_range, reuse=self)

    def token_outputs(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """(input ids, output ids) of the tokens in scope at ``epsilon`` (for evaluation)."""
        eps = self.mech._require_epsilon(epsilon)
        out = self._outputs(eps)
        return self._work.ids[self._work.active], self.mech.geometry.cand[out]

    def reference_outputs(self, epsilon: float) -> np.ndarray:
        """Output ids by the per-ε exact search with the same noise: a full scan of the
        vocabulary for the pivot and a full ranking for the rank step (slow; the
        yardstick of tests and benchmarks)."""
        eps = self.mech._require_epsilon(epsilon)
        geom = self.mech.geometry
        if len(self._work.active) == 0:
            return np.zeros(0, dtype=np.int64)
        out = exact_outputs(geom, self._P64, self._noise, eps, self.mech.rank_constant,
                            rank_step=self.params.rank_step)
        return geom.cand[out]

    # ----- internals

    def _outputs(self, eps: float) -> np.ndarray:
        """Candidate index output by each token in scope."""
        geom = self.mech.geometry
        c = self.mech.rank_constant
        if len(self._work.active) == 0:
            return np.zeros(0, dtype=np.int64)
        if self.params.approximate:
            piv = self._annoy_pivots(eps)
            return apply_rank_step(geom, piv, self._noise.U, eps, c) \
                if self.params.rank_step else piv
        with self._lock:
            lo, hi = self.epsilon_range
            if not (lo <= eps <= hi):
                self._extend_range(min(lo, eps), max(hi, eps))
            env = self._env
        return envelope_outputs(geom, env, self._P64, self._noise, eps, c,
                                with_rank_step=self.params.rank_step)

    def _extend_range(self, lo: float, hi: float) -> None:
        geom = self.mech.geometry
        aid = self._work.ids[self._work.active]
        self._env = build_envelope(
            geom, self.mech.space.matrix[aid], self._noise, lo, hi, token_ids=aid,
            rank_c=self.mech.rank_constant if self.params.rank_step else None)
        self.epsilon_range = (lo, hi)
        if self.params.rank_step:
            geom.ensure_neighbours(
                plan_depths(self._env, self._noise, self.mech.rank_constant, geom.C))

    def _annoy_pivots(self, eps: float) -> np.ndarray:
        idx = self.mech.annoy_index()
        out = np.empty(len(self._work.active), dtype=np.int64)
        for t in range(len(out)):
            e = noisy_point(self._P64[t], self._noise.u[t], self._noise.g[t], eps)
            out[t] = idx.get_nns_by_vector(e.astype(np.float32).tolist(), 1)[0]
        return out

    def _render(self, eps: float, out: np.ndarray) -> SanitizedText:
        w = self._work
        geom = self.mech.geometry
        space = self.mech.space
        strings = geom.candidate_strings(space.piece)
        in_ids = w.ids[w.active]
        out_ids = geom.cand[out]
        changed = out_ids != in_ids
        reps: list[tuple[int, int, str, str]] = []
        if changed.any():
            units = w.unit_of[w.active]
            # active tokens are whole units, listed in text order
            bounds = np.flatnonzero(np.diff(units)) + 1
            starts = np.concatenate(([0], bounds))
            ends = np.concatenate((bounds, [len(units)]))
            any_changed = np.logical_or.reduceat(changed, starts)
            for s, e in zip(starts[any_changed].tolist(), ends[any_changed].tolist()):
                u = int(units[s])
                new = "".join(strings[j] for j in out[s:e].tolist())
                reps.append((int(w.unit_start[u]), int(w.unit_end[u]), new, "TOKEN"))
        text, changes = apply_replacements(self.text, reps)
        n_spans = len(self.spans) if self.params.scope in ("pii", "rest") else 0
        info = {
            "epsilon": eps,
            "scope": self.params.scope,
            "tokens_changed": int(changed.sum()),
            "tokens_total": int(len(w.active)),
            "tokens_in_text": int(len(w.ids)),
            "rank_constant": self.mech.rank_constant,
            "rank_step": bool(self.params.rank_step),
            "approximate": bool(self.params.approximate),
            "nearest_neighbour": ("approximate (annoy, %d trees, default search_k)" % ANNOY_TREES
                                  if self.params.approximate else "exact"),
            "embedding": space.name,
            "guarantee": guarantee_sentence(self.params.scope, eps, n_spans,
                                            self.params.rank_step, self.params.approximate,
                                            self._oov),
        }
        return SanitizedText(text=text, method="dx", changes=changes, info=info)


def _active_tokens(tok: Tokenization, spans: Sequence[Span], scope: str) -> np.ndarray:
    T = len(tok.ids)
    if scope == "all" or (scope == "rest" and not spans):
        return np.arange(T, dtype=np.int64)
    if not spans or T == 0:
        return np.zeros(0, dtype=np.int64)
    us, ue = tok.unit_start, tok.unit_end
    hit = np.zeros(len(us), dtype=bool)
    for sp in spans:
        # a unit is in scope if it overlaps the span at all
        hit |= (us < sp.end) & (ue > sp.start)
    if scope == "rest":        # the hybrid: every unit outside the (protected) spans
        hit = ~hit
    return np.flatnonzero(hit[tok.unit_of]).astype(np.int64)


def _reuse_work(new: DxPrepared, old: DxPrepared, geom: Geometry) -> tuple[Noise, Envelope]:
    """Noise and envelope of the new document, copying tokens the old one already had."""
    ow, nw = old._work, new._work
    old_keys = {
        (int(ow.ids[t]), int(ow.occurrence[t])): r for r, t in enumerate(ow.active.tolist())
    }
    rows_old: list[int] = []
    fresh: list[int] = []
    for r, t in enumerate(nw.active.tolist()):
        k = (int(nw.ids[t]), int(nw.occurrence[t]))
        if k in old_keys:
            rows_old.append(old_keys[k])
        else:
            rows_old.append(-1)
            fresh.append(r)
    aid = nw.ids[nw.active]
    n = geom.n
    T = len(aid)
    u = np.empty((T, n))
    g = np.empty(T)
    U = np.empty(T)
    reuse_rows = [r for r in range(T) if rows_old[r] >= 0]
    if reuse_rows:
        src = np.asarray([rows_old[r] for r in reuse_rows])
        u[reuse_rows] = old._noise.u[src]
        g[reuse_rows] = old._noise.g[src]
        U[reuse_rows] = old._noise.U[src]
    if fresh:
        fr = np.asarray(fresh)
        nz = draw_noise(new.seed, aid[fr], nw.occurrence[nw.active][fr], n)
        u[fr], g[fr], U[fr] = nz.u, nz.g, nz.U
        env_new = build_envelope(
            geom, new.mech.space.matrix[aid[fr]], nz, new.epsilon_range[0], new.epsilon_range[1],
            token_ids=aid[fr],
            rank_c=new.mech.rank_constant if new.params.rank_step else None)
    noise = Noise(u, g, U)
    parts = []
    fresh_pos = {r: i for i, r in enumerate(fresh)}
    for r in range(T):
        if rows_old[r] >= 0:
            parts.append(take_envelope(old._env, rows_old[r]))
        else:
            parts.append(take_envelope(env_new, fresh_pos[r]))
    return noise, concat_envelopes(parts, old._env)
