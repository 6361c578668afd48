"""A document prepared for d_X: its noise drawn once, sanitized text at any ε.

``DxPrepared`` is built by :meth:`DxMechanism.prepare
<preflight.core.sanitize.dx.DxMechanism.prepare>`; ``at(ε)`` walks the prepared envelope
(:mod:`preflight.core.sanitize.dx_engine`) and the neighbour lists, and is identical to
running the mechanism from scratch at that ε with the same noise.

The tokens in scope are grouped by word-boundary class (:mod:`.dx_classes`); each group
has its class's geometry, its noise and its envelope, so the mechanism of a token is the
mechanism over its class's candidates.
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
    occurrences,
    plan_depths,
    take_envelope,
)
from preflight.core.sanitize.dx_geometry import Geometry
from preflight.core.types import (
    DxReport, SanitizedText, SanitizeReport, Span, apply_replacements,
)

if TYPE_CHECKING:
    from preflight.core.sanitize.dx import DxMechanism


def guarantee_sentence(scope: str, eps: float, n_spans: int, rank_step: bool,
                       oov: int = 0, word_boundaries: bool = True,
                       unclassed: int = 0) -> str:
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
    if word_boundaries and (scope in ("all", "rest") or n_spans):
        s += (" The word-boundary pattern (which tokens start a word, continue one or are "
              "whitespace) is revealed: each token is replaced only by a token of the same "
              "kind, and the text shows the pattern anyway.")
        if unclassed:
            s += (f" {unclassed} token(s) whose pattern no replacement has were left "
                  "unchanged and are not covered.")
    else:
        s += " (Research mode: word boundaries not kept.)"
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
    cls: np.ndarray          # (A,) word-boundary class of each; -1: no candidate, unchanged


@dataclass
class _Group:
    """The tokens in scope of one word-boundary class, with their draws and envelope."""

    label: str
    geom: Geometry
    rows: np.ndarray         # (G,) positions among the tokens in scope (ascending)
    P64: np.ndarray          # (G, n) float64 embeddings of the tokens
    noise: Noise
    env: Envelope


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
        self._groups: list[_Group] = []
        self._oov = 0
        self._lock = threading.Lock()

    @property
    def work(self) -> "_TokenWork":
        """The preparation's token facts (ids, units, the tokens in scope): read by the
        attacks of :mod:`preflight.core.privacy`, never changed."""
        return self._work

    @property
    def dx_part(self) -> "DxPrepared":
        """The d_X part of a preparation (itself; a policy's preparation wraps one)."""
        return self

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
        tok = space.tokenize(text)
        self._oov = int(tok.out_of_vocabulary)
        ids = tok.ids
        occ = occurrences(ids)
        active = _active_tokens(tok, spans, params.scope)
        classes = mech.classes.token_classes(tok, text, space.piece)[active]
        self._work = _TokenWork(ids, tok.unit_of, tok.unit_start, tok.unit_end, occ, active,
                                classes)
        old = None
        if reuse is not None and reuse.seed == seed and reuse.epsilon_range == epsilon_range:
            old = _old_rows(reuse)
        geoms = mech.geometries
        labels = mech.classes.labels
        for k in np.unique(classes[classes >= 0]).tolist():
            rows = np.flatnonzero(classes == k)
            group = _make_group(self, labels[k], geoms[labels[k]], rows, old)
            if group.env is not None and mech.rank_step:
                group.geom.ensure_neighbours(
                    plan_depths(group.env, group.noise, mech.rank_constant, group.geom.C))
            self._groups.append(group)
        return self

    # ----- public API

    def at(self, epsilon: float, *,
           fixed: Sequence[tuple[int, int, str, str]] = ()) -> SanitizedText:
        """The sanitized text at ``epsilon`` (same noise as every other ε). ``fixed``:
        sorted replacements ``(source start, end, text, type)`` of other parts of the
        text (a policy's protected spans) written into the same output in one pass; a
        token change overlapping one of them is dropped (a deleted value's space)."""
        eps = self.mech._require_epsilon(epsilon)
        out = self._outputs(eps)
        return self._render(eps, out, fixed)

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
        return self._work.ids[self._work.active], self._outputs(eps)

    def class_draws(self) -> list[tuple[np.ndarray, np.ndarray, Noise, np.ndarray]]:
        """Per word-boundary class of the tokens in scope: (their positions among the
        tokens in scope, their float64 embeddings, their noise draws, the class's candidate
        ids) — what an independent implementation needs to recompute :meth:`token_outputs`
        (the brute-force yardstick of tests and benchmarks, ``preflight_eval.dx_reference``)."""
        return [(g.rows, g.P64, g.noise, g.geom.cand) for g in self._groups]

    # ----- internals

    def _outputs(self, eps: float) -> np.ndarray:
        """Output token id of each token in scope (its own id if it has no class)."""
        c = self.mech.rank_constant
        out = self._work.ids[self._work.active].copy()
        with self._lock:
            lo, hi = self.epsilon_range
            if not (lo <= eps <= hi):
                self._extend_range(min(lo, eps), max(hi, eps))
            groups = [(g, g.env) for g in self._groups]
        for g, env in groups:
            o = envelope_outputs(g.geom, env, g.P64, g.noise, eps, c,
                                 with_rank_step=self.mech.rank_step)
            out[g.rows] = g.geom.cand[o]
        return out

    def _extend_range(self, lo: float, hi: float) -> None:
        c = self.mech.rank_constant
        for g in self._groups:
            aid = self._work.ids[self._work.active][g.rows]
            g.env = build_envelope(g.geom, self.mech.space.matrix[aid], g.noise, lo, hi,
                                   token_ids=aid, rank_c=c if self.mech.rank_step else None)
            if self.mech.rank_step:
                g.geom.ensure_neighbours(plan_depths(g.env, g.noise, c, g.geom.C))
        self.epsilon_range = (lo, hi)

    def _render(self, eps: float, out_ids: np.ndarray,
                fixed: Sequence[tuple[int, int, str, str]] = ()) -> SanitizedText:
        w = self._work
        space = self.mech.space
        in_ids = w.ids[w.active]
        changed = out_ids != in_ids
        reps: list[tuple[int, int, str, str]] = []
        if changed.any():
            texts = self.mech.token_texts()   # outputs are candidates: complete UTF-8
            units = w.unit_of[w.active]
            # active tokens are whole units, listed in text order
            bounds = np.flatnonzero(np.diff(units)) + 1
            starts = np.concatenate(([0], bounds))
            ends = np.concatenate((bounds, [len(units)]))
            any_changed = np.logical_or.reduceat(changed, starts)
            for s, e in zip(starts[any_changed].tolist(), ends[any_changed].tolist()):
                u = int(units[s])
                new = "".join([texts[j] for j in out_ids[s:e].tolist()])
                reps.append((int(w.unit_start[u]), int(w.unit_end[u]), new, "TOKEN"))
        if fixed:
            reps = merge_fixed(reps, fixed)
        text, changes = apply_replacements(self.text, reps)
        n_spans = len(self.spans) if self.params.scope in ("pii", "rest") else 0
        report = SanitizeReport(
            dx=DxReport(epsilon=eps, scope=self.params.scope,
                        rank_constant=self.mech.rank_constant, embedding=space.name,
                        tokens_changed=int(changed.sum()), tokens_total=int(len(w.active)),
                        tokens_in_text=int(len(w.ids)),
                        rank_step=bool(self.mech.rank_step),
                        word_boundaries=bool(self.mech.classes.restricted)),
            guarantee=guarantee_sentence(self.params.scope, eps, n_spans,
                                         self.mech.rank_step,
                                         self._oov, self.mech.classes.restricted,
                                         int((w.cls < 0).sum())))
        return SanitizedText(text=text, method="dx", changes=changes, report=report)


def merge_fixed(reps: list[tuple[int, int, str, str]],
                 fixed: Sequence[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """Both sorted lists in one, without the token changes that overlap a fixed one."""
    out: list[tuple[int, int, str, str]] = []
    j, n = 0, len(fixed)
    for r in reps:
        while j < n and fixed[j][1] <= r[0]:
            out.append(fixed[j])
            j += 1
        if j < n and fixed[j][0] < r[1]:
            continue                     # overlaps the next fixed replacement
        out.append(r)
    out.extend(fixed[j:])
    return out


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


_OldRows = dict[tuple[int, int, str], tuple[_Group, int]]


def _old_rows(old: DxPrepared) -> _OldRows:
    """(token id, occurrence, class) -> (group, row) of an earlier preparation."""
    w = old._work
    aid, occ = w.ids[w.active], w.occurrence[w.active]
    return {(int(aid[r]), int(occ[r]), g.label): (g, j)
            for g in old._groups for j, r in enumerate(g.rows.tolist())}


def _make_group(prep: DxPrepared, label: str, geom: Geometry, rows: np.ndarray,
                old: _OldRows | None) -> _Group:
    """The group of ``rows``: noise and envelope drawn/built, or copied from ``old`` for
    tokens it already had in the same class (the draw is keyed by id and occurrence, so
    the copy is what a fresh preparation would compute)."""
    w = prep._work
    aid = w.ids[w.active][rows]
    occ = w.occurrence[w.active][rows]
    matrix = prep.mech.space.matrix
    lo, hi = prep.epsilon_range
    rank_c = prep.mech.rank_constant if prep.mech.rank_step else None
    src = [None if old is None else old.get((int(i), int(o), label))
           for i, o in zip(aid.tolist(), occ.tolist())]
    fresh = np.asarray([r for r, s in enumerate(src) if s is None], dtype=np.int64)
    if len(fresh) == len(rows):      # nothing to copy
        noise = draw_noise(prep.seed, aid, occ, geom.n)
        env = build_envelope(
            geom, matrix[aid], noise, lo, hi, token_ids=aid, rank_c=rank_c)
        return _Group(label, geom, rows, matrix[aid].astype(np.float64), noise, env)
    G = len(rows)
    u, g, U = np.empty((G, geom.n)), np.empty(G), np.empty(G)
    parts: list[Envelope | None] = [None] * G
    for r, s in enumerate(src):
        if s is not None:
            og, j = s
            u[r], g[r], U[r] = og.noise.u[j], og.noise.g[j], og.noise.U[j]
            parts[r] = take_envelope(og.env, j)
    if len(fresh):
        nz = draw_noise(prep.seed, aid[fresh], occ[fresh], geom.n)
        u[fresh], g[fresh], U[fresh] = nz.u, nz.g, nz.U
        env_new = build_envelope(geom, matrix[aid[fresh]], nz, lo, hi, token_ids=aid[fresh],
                                 rank_c=rank_c)
        for i, r in enumerate(fresh.tolist()):
            parts[r] = take_envelope(env_new, i)
    env = concat_envelopes(parts, parts[0])  # type: ignore[arg-type]
    return _Group(label, geom, rows, matrix[aid].astype(np.float64), Noise(u, g, U), env)
