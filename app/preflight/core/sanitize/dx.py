"""d_X-privacy sanitization over token embeddings, exact and fast enough for a slider.

``DxMechanism.prepare(text, spans, params)`` draws the noise of every token once and
computes, for the whole calibrated ε range, which vocabulary token is the exact nearest
neighbour of the noisy embedding (see :mod:`preflight.core.sanitize.dx_engine`). After
that, ``DxPrepared.at(ε)`` returns the sanitized text for any ε in milliseconds and is
identical to running the mechanism from scratch at that ε with the same noise.

Research flags (``SanitizeParams``): ``rank_step=False`` outputs the pivot itself (the
original Feyisetan et al. mechanism); ``approximate=True`` finds the pivot with an annoy
index at its default search_k — the seeds show this silently changes the output
distribution, so it is labelled "approximate" in ``info`` and in the guarantee.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core import paths
from preflight.core.errors import ConfigError, InputError
from preflight.core.sanitize.base import SanitizeParams, register
from preflight.core.sanitize.dx_engine import (
    Envelope,
    Geometry,
    Noise,
    build_envelope,
    draw_noise,
    envelope_pivots,
    noisy_point,
    occurrences,
    plan_depths,
    rank_of,
)
from preflight.core.types import SanitizedText, Span, apply_replacements

log = logging.getLogger(__name__)

SCOPES = ("all", "pii")
ANNOY_TREES = 50  # the annoy index of the approximate research flag (default search_k)


# --------------------------------------------------------------------------- shared state

_geom_lock = threading.Lock()
_geometries: dict[str, Geometry] = {}


TABLE_K = 64   # neighbour-table depth: covers the rank step's draws in the calibrated range


def geometry_for(space: Any) -> Geometry:
    """One :class:`Geometry` per embedding (it memoizes neighbour lists across documents);
    loads the embedding's neighbour table from the cache when it was built."""
    with _geom_lock:
        geom = _geometries.get(space.key)
        if geom is None:
            geom = Geometry(space.matrix, space.candidate_ids)
            if len(_geometries) >= 2:  # keep memory bounded: ~120 MB per default space
                _geometries.pop(next(iter(_geometries)))
            _geometries[space.key] = geom
            _load_table(space, geom)
        return geom


def _table_name(space: Any) -> str:
    # The candidate set is part of the name: a changed vocabulary filter must never reuse
    # a table whose rows refer to other tokens.
    cand = hashlib.sha256(np.asarray(space.candidate_ids, dtype=np.int64).tobytes())
    return f"neighbours_k{TABLE_K}_{cand.hexdigest()[:12]}.npz"


def installed_table_path(space: Any) -> Path:
    """Where `preflight models install` puts the table, beside the models (shipped in the
    installer's bundle, shared by every user and test run)."""
    return paths.models_dir() / "derived" / "dx" / space.key / _table_name(space)


def _table_path(space: Any) -> Path:
    """The per-user cache copy, built on first use when the install has none."""
    return paths.cache_dir() / "dx" / space.key / _table_name(space)


def _load_table(space: Any, geom: Geometry) -> bool:
    for f in (installed_table_path(space), _table_path(space)):
        if not f.is_file():
            continue
        try:
            with np.load(f, allow_pickle=False) as z:
                geom.set_table(z["table"], z["table_len"])
            return True
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unreadable neighbour table %s: %s", f, exc)
    return False


def build_neighbour_table(space: Any, progress=None, cancel=None,
                          dest: Path | None = None) -> Path:
    """Build (once) and store the first-K neighbour lists of the whole vocabulary, so
    preparing a document needs no neighbour search (see docs: ~a minute on 2 cores).

    ``dest`` defaults to the per-user cache; the model installer passes
    :func:`installed_table_path`."""
    geom = geometry_for(space)
    f = dest or _table_path(space)
    if f.is_file() and (geom.table is not None or _load_table(space, geom)):
        return f
    if dest is None and installed_table_path(space).is_file() and geom.table is not None:
        return installed_table_path(space)
    table, tlen = geom.build_table(TABLE_K, progress=progress, cancel=cancel)
    dtype = np.uint16 if geom.C < 2 ** 16 else np.int32
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f.stem + ".tmp.npz")
    np.savez(tmp, table=table.astype(dtype), table_len=tlen.astype(np.int32))
    tmp.replace(f)
    geom.set_table(table.astype(dtype), tlen)
    return f


def _candidate_strings(space: Any, geom: Geometry) -> list[str]:
    cached = getattr(geom, "_strings", None)
    if cached is None:
        cached = [space.piece(int(i)).decode("utf-8") for i in geom.cand]
        geom._strings = cached  # type: ignore[attr-defined]
    return cached


def load_calibration(space: Any, *, compute: bool = True) -> dict:
    """The calibrated (rank constant, ε range) of a space: shipped in resources/dx/ for
    the default embedding, else computed once and cached under cache_dir()."""
    shipped = paths.resource_path("dx", f"{space.key}.json")
    cached = paths.cache_dir() / "dx" / space.key / "calibration.json"
    for f in (shipped, cached):
        if f.is_file():
            try:
                return json.loads(f.read_text("utf-8"))
            except (OSError, ValueError):
                log.warning("ignoring unreadable calibration %s", f)
    if not compute:
        raise ConfigError(
            f"No d_X calibration for the embedding {space.name}.",
            "Run `python -m preflight_eval.calibrate_dx` to compute it.",
        )
    from preflight.core.sanitize.dx_calibration import calibrate, default_sample_text

    log.info("calibrating d_X for %s (first use)", space.name)
    result = calibrate(space, default_sample_text())
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result, indent=2), "utf-8")
    return result


# --------------------------------------------------------------------------- mechanism


class DxMechanism:
    """Exact d_X-privacy over token embeddings (Algorithm 1 + the rank step)."""

    name = "dx"

    def __init__(
        self,
        space: Any | None = None,
        rank_constant: float | None = None,
        *,
        epsilon_range: tuple[float, float] | None = None,
    ) -> None:
        """``space`` defaults to the SLM's token embeddings (loaded on first use);
        ``rank_constant`` and ``epsilon_range`` default to the space's calibration."""
        self._space = space
        self._rank_constant = rank_constant
        self._calibration: dict | None = None
        if epsilon_range is not None:
            lo, hi = float(epsilon_range[0]), float(epsilon_range[1])
            if not (0 < lo <= hi and math.isfinite(hi)):
                raise ConfigError(f"Invalid ε range {epsilon_range}.", "Use 0 < low <= high.")
            if rank_constant is None:
                raise ConfigError("An explicit ε range needs an explicit rank constant.",
                                  "Pass rank_constant too.")
            self._calibration = {"rank_constant": rank_constant, "epsilon_range": [lo, hi]}
        self._lock = threading.RLock()

    # ----- lazy collaborators

    @property
    def space(self) -> Any:
        with self._lock:
            if self._space is None:
                from preflight.runtime.token_space import default_token_space

                self._space = default_token_space()
            return self._space

    @property
    def geometry(self) -> Geometry:
        return geometry_for(self.space)

    @property
    def calibration(self) -> dict:
        if self._calibration is None:
            self._calibration = load_calibration(self.space)
        return self._calibration

    @property
    def rank_constant(self) -> float:
        if self._rank_constant is not None:
            return float(self._rank_constant)
        return float(self.calibration["rank_constant"])

    @property
    def epsilon_range(self) -> tuple[float, float]:
        lo, hi = self.calibration["epsilon_range"]
        return float(lo), float(hi)

    def describe(self) -> dict[str, Any]:
        """Facts for ``preflight info --json`` ("dx" section)."""
        space = self.space
        return {
            "embedding": space.name,
            "embedding_sha256": space.key,
            "vocab_size": int(space.matrix.shape[0]),
            "dim": int(space.matrix.shape[1]),
            "rank_constant": self.rank_constant,
            "epsilon_range": list(self.epsilon_range),
            "vocabulary_filter": space.filter_info(),
            "calibration_rule": self.calibration.get(
                "rule", "given explicitly (not calibrated)"),
            "nearest_neighbour": "exact (approximate annoy search only with the research flag)",
            "neighbour_table_cached": (installed_table_path(space).is_file()
                                       or _table_path(space).is_file()),
        }

    # ----- the Mechanism protocol

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        """Sanitize at ``params.epsilon`` (required)."""
        eps = self._require_epsilon(params.epsilon)
        if params.scope not in SCOPES:
            raise ConfigError(
                f"Unknown d_X scope '{params.scope}'.", "Use --scope all or --scope pii."
            )
        # one ε only: prepare just that point (same outputs as prepare(...).at(eps), less
        # work — no envelope over the whole slider range)
        seed = params.seed if params.seed is not None else secrets.randbits(63)
        return DxPrepared._build(self, text, tuple(spans), params, int(seed), (eps, eps)).at(eps)

    def prepare(
        self, text: str, spans: Sequence[Span], params: SanitizeParams
    ) -> "DxPrepared":
        """One-time per-document work; then :meth:`DxPrepared.at` is fast for any ε."""
        if params.scope not in SCOPES:
            raise ConfigError(
                f"Unknown d_X scope '{params.scope}'.", "Use --scope all or --scope pii."
            )
        if not isinstance(text, str):
            raise InputError("The document is not text.", "Pass a text document.")
        seed = params.seed if params.seed is not None else secrets.randbits(63)
        lo, hi = self.epsilon_range
        if params.epsilon is not None:
            e = self._require_epsilon(params.epsilon)
            lo, hi = min(lo, e), max(hi, e)
        return DxPrepared._build(self, text, tuple(spans), params, int(seed), (lo, hi))

    def _require_epsilon(self, eps: float | None) -> float:
        if eps is None:
            lo, hi = self.epsilon_range
            raise ConfigError(
                "d_X needs a privacy level ε.",
                f"Pass --epsilon E; the calibrated range for this embedding is "
                f"{lo:.3g} (most tokens replaced) to {hi:.3g} (most tokens kept).",
            )
        try:
            e = float(eps)
        except (TypeError, ValueError):
            raise ConfigError(f"ε must be a number, not {eps!r}.",
                              "Pass e.g. --epsilon 50.") from None
        if not math.isfinite(e) or e <= 0:
            raise ConfigError(f"ε must be a positive number, not {eps}.", "Pass e.g. --epsilon 50.")
        return e

    def warm_up(self, progress=None, cancel=None) -> None:
        """One-time per-embedding work that makes later preparations fast: calibration
        and the neighbour table (cached on disk). Safe to run in a background thread."""
        _ = self.calibration
        build_neighbour_table(self.space, progress=progress, cancel=cancel)

    # ----- approximate research flag

    def annoy_index(self):
        """Annoy index over the candidate embeddings (built once, cached on disk)."""
        with self._lock:
            idx = getattr(self, "_annoy", None)
            if idx is not None:
                return idx
            from annoy import AnnoyIndex

            geom = self.geometry
            f = paths.cache_dir() / "dx" / self.space.key / f"annoy_{ANNOY_TREES}.ann"
            idx = AnnoyIndex(geom.n, "euclidean")
            if f.is_file():
                idx.load(str(f))
            else:
                for j in range(geom.C):
                    idx.add_item(j, geom.phi[j])
                idx.set_seed(0)
                # one job: deterministic, and the threaded build can hang
                idx.build(ANNOY_TREES, n_jobs=1)
                f.parent.mkdir(parents=True, exist_ok=True)
                tmp = f.with_suffix(".tmp")
                idx.save(str(tmp))
                tmp.replace(f)
                idx.unload()
                idx = AnnoyIndex(geom.n, "euclidean")
                idx.load(str(f))
            self._annoy = idx
            return idx


@register("dx")
def _factory(space: Any | None = None, rank_constant: float | None = None,
             epsilon_range: tuple[float, float] | None = None, **_: Any) -> DxMechanism:
    return DxMechanism(space=space, rank_constant=rank_constant, epsilon_range=epsilon_range)


_default_mech: DxMechanism | None = None


def describe() -> dict[str, Any]:
    """The "dx" section of ``preflight info --json`` for the default embedding."""
    global _default_mech
    if _default_mech is None:
        _default_mech = DxMechanism()
    return _default_mech.describe()


# --------------------------------------------------------------------------- prepared


def guarantee_sentence(scope: str, eps: float, n_spans: int, rank_step: bool,
                       approximate: bool, oov: int = 0) -> str:
    if scope == "all":
        s = (f"ε-d_X-privacy with ε = {eps:.4g} holds for every token of the text, "
             f"whatever the PII detection found.")
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
        self.eps_range: tuple[float, float]
        self._work: _TokenWork
        self._P64: np.ndarray
        self._noise: Noise
        self._env: Envelope | None
        self._oov = 0
        self._lock = threading.Lock()

    # ----- construction

    @classmethod
    def _build(cls, mech: DxMechanism, text: str, spans: tuple[Span, ...],
               params: SanitizeParams, seed: int, eps_range: tuple[float, float],
               reuse: "DxPrepared | None" = None) -> "DxPrepared":
        self = cls()
        self.mech, self.text, self.spans = mech, text, spans
        self.params = replace(params, seed=seed)
        self.seed = seed
        self.eps_range = eps_range
        space = mech.space
        geom = mech.geometry
        tok = space.tokenize(text)
        self._oov = int(getattr(space, "out_of_vocabulary", 0) or 0)
        ids = tok.ids
        occ = occurrences(ids)
        active = _active_tokens(tok, spans, params.scope)
        self._work = _TokenWork(ids, tok.unit_of, tok.unit_start, tok.unit_end, occ, active)
        aid = ids[active]
        self._P64 = space.matrix[aid].astype(np.float64)
        if reuse is not None and reuse.seed == seed and reuse._env is not None \
                and reuse.eps_range == eps_range:
            self._noise, self._env = _reuse_work(self, reuse, geom)
        else:
            self._noise = draw_noise(seed, aid, occ[active], geom.n)
            self._env = None if params.approximate else build_envelope(
                geom, space.matrix[aid], self._noise, eps_range[0], eps_range[1],
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
                                 int(new_seed), self.eps_range)

    def update(self, new_text: str, new_spans: Sequence[Span]) -> "DxPrepared":
        """The edited document, re-preparing only tokens whose draw is new.

        A token's noise is keyed by (seed, token id, occurrence number), so the result is
        identical to ``prepare(new_text, new_spans, params)`` with the same seed.
        """
        return DxPrepared._build(self.mech, new_text, tuple(new_spans), self.params,
                                 self.seed, self.eps_range, reuse=self)

    def token_outputs(self, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
        """(input ids, output ids) of the tokens in scope at ``epsilon`` (for evaluation)."""
        eps = self.mech._require_epsilon(epsilon)
        out = self._outputs(eps)
        return self._work.ids[self._work.active], self.mech.geometry.cand[out]

    def reference_outputs(self, epsilon: float) -> np.ndarray:
        """Output ids by the per-ε exact search with the same noise: a full scan of the
        vocabulary for the pivot and a full ranking for the rank step (slow; the
        yardstick of tests and benchmarks)."""
        from preflight.core.sanitize.dx_engine import exact_outputs

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
        if len(self._work.active) == 0:
            return np.zeros(0, dtype=np.int64)
        if self.params.approximate:
            piv = self._annoy_pivots(eps)
        else:
            with self._lock:
                lo, hi = self.eps_range
                if not (lo <= eps <= hi):
                    self._extend_range(min(lo, eps), max(hi, eps))
                env = self._env
            piv = envelope_pivots(geom, env, self._P64, self._noise, eps)
        if not self.params.rank_step:
            return piv
        ks = rank_of(self._noise.U, eps, self.mech.rank_constant, geom.C)
        out = piv.copy()
        kth = geom.kth
        for t in np.flatnonzero(ks > 0).tolist():
            out[t] = kth(int(piv[t]), int(ks[t]))
        return out

    def _extend_range(self, lo: float, hi: float) -> None:
        geom = self.mech.geometry
        aid = self._work.ids[self._work.active]
        self._env = build_envelope(
            geom, self.mech.space.matrix[aid], self._noise, lo, hi, token_ids=aid,
            rank_c=self.mech.rank_constant if self.params.rank_step else None)
        self.eps_range = (lo, hi)
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
        strings = _candidate_strings(space, geom)
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
        n_spans = len(self.spans) if self.params.scope == "pii" else 0
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


def _active_tokens(tok: Any, spans: Sequence[Span], scope: str) -> np.ndarray:
    T = len(tok.ids)
    if scope == "all":
        return np.arange(T, dtype=np.int64)
    if not spans or T == 0:
        return np.zeros(0, dtype=np.int64)
    us, ue = tok.unit_start, tok.unit_end
    hit = np.zeros(len(us), dtype=bool)
    for sp in spans:
        # a unit is in scope if it overlaps the span at all
        hit |= (us < sp.end) & (ue > sp.start)
    return np.flatnonzero(hit[tok.unit_of]).astype(np.int64)


def _reuse_work(new: DxPrepared, old: DxPrepared, geom: Geometry) -> tuple[Noise, Envelope]:
    """Noise and envelope of the new document, copying tokens the old one already had."""
    from preflight.core.sanitize.dx_engine import concat_envelopes, take_envelope

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
    pieces: list[Envelope | None] = [None] * T
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
            geom, new.mech.space.matrix[aid[fr]], nz, new.eps_range[0], new.eps_range[1],
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
