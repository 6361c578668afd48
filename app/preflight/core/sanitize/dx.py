"""d_X-privacy sanitization over token embeddings, exact and fast enough for a slider.

``DxMechanism.prepare(text, spans, params)`` draws the noise of every token once and
computes, for the whole calibrated ε range, which vocabulary token is the exact nearest
neighbour of the noisy embedding (see :mod:`preflight.core.sanitize.dx_engine`). After
that, ``DxPrepared.at(ε)`` returns the sanitized text for any ε in milliseconds and is
identical to running the mechanism from scratch at that ε with the same noise.

The mechanism takes its token space through the constructor and owns everything derived
from it (geometry, neighbour lists, calibration): build one per space and
keep it. Modules: :mod:`.dx_prepared` (a prepared document), :mod:`.dx_engine` (the
numerics), :mod:`.dx_geometry`,
:mod:`.dx_store` (what is kept on disk), :mod:`.dx_calibration`.

Word boundaries (:mod:`.dx_classes`): a token that starts a word is replaced only by a
token that starts a word, a continuation only by a continuation, whitespace only by
whitespace — the mechanism runs, exactly, over the candidate set of the token's class (one
geometry and neighbour table per class), so the output never glues or splits words. The
class pattern is revealed (the text shows it anyway).

The product always keeps word boundaries and applies the rank step, and the
nearest-neighbour search is always exact — an approximate index silently changes the
output distribution (the seeds show it with annoy). Research variants (words not kept,
the pivot alone) are subclasses in ``preflight_eval.dx_variants``.
"""

from __future__ import annotations

import math
import secrets
import threading
from pathlib import Path
from typing import Any, Sequence

from preflight.core.errors import ConfigError, InputError
from preflight.core.ports import Progress, TokenSpace
from preflight.core.sanitize import dx_store
from preflight.core.sanitize.base import SanitizeParams, register
from preflight.core.sanitize.dx_classes import BoundaryClasses
from preflight.core.sanitize.dx_geometry import Geometry
from preflight.core.sanitize.dx_prepared import DxPrepared, guarantee_sentence
from preflight.core.sanitize.dx_store import TABLE_K
from preflight.core.types import SanitizedText, Span

SCOPES = ("all", "pii", "rest")   # "rest": tokens outside the spans (a policy's hybrid)

__all__ = [
    "SCOPES", "TABLE_K", "DxMechanism", "DxPrepared", "build_neighbour_table",
    "guarantee_sentence",
]


class DxMechanism:
    """Exact d_X-privacy over token embeddings (Algorithm 1 + the rank step)."""

    name = "dx"
    #: Whether the output is re-drawn by rank around the exact pivot (Asghar et al.); a
    #: research subclass may output the pivot alone (Feyisetan et al.)
    rank_step: bool = True

    def __init__(
        self,
        space: TokenSpace,
        rank_constant: float | None = None,
        *,
        epsilon_range: tuple[float, float] | None = None,
    ) -> None:
        """``space``: the token embedding space (the composition root builds the default,
        the SLM's token embeddings, and keeps one mechanism per space);
        ``rank_constant`` and ``epsilon_range`` default to the space's calibration."""
        if space is None:
            raise ConfigError(
                "The d_X mechanism needs a token embedding space.",
                "Build it through the application's services (they load the installed "
                "SLM's embeddings), or pass space= to create_mechanism('dx', ...).",
            )
        self._space = space
        self._rank_constant = rank_constant
        self._calibration: dict | None = None
        self._classes: BoundaryClasses | None = None
        self._geometries: dict[str, Geometry] | None = None
        self._whole: Geometry | None = None
        self._texts: list[str] | None = None
        if epsilon_range is not None:
            lo, hi = float(epsilon_range[0]), float(epsilon_range[1])
            if not (0 < lo <= hi and math.isfinite(hi)):
                raise ConfigError(f"Invalid ε range {epsilon_range}.", "Use 0 < low <= high.")
            if rank_constant is None:
                raise ConfigError("An explicit ε range needs an explicit rank constant.",
                                  "Pass rank_constant too.")
            self._calibration = {"rank_constant": rank_constant, "epsilon_range": [lo, hi]}
        self._lock = threading.RLock()

    # ----- the space and what is derived from it (built once, kept by this mechanism)

    @property
    def space(self) -> TokenSpace:
        return self._space

    @property
    def classes(self) -> BoundaryClasses:
        """The word-boundary classes of the candidate vocabulary."""
        with self._lock:
            if self._classes is None:
                self._classes = BoundaryClasses.of_space(self._space)
            return self._classes

    @property
    def geometries(self) -> dict[str, Geometry]:
        """One candidate geometry per class (each memoizes its neighbour lists across
        documents); loads the classes' neighbour tables from disk when they were built."""
        with self._lock:
            if self._geometries is None:
                cls = self.classes
                geoms = {lab: Geometry(self._space.matrix, cls.members[lab])
                         for lab in cls.labels}
                dx_store.load_tables(self._space, cls, geoms)
                self._geometries = geoms
            return self._geometries

    @property
    def geometry(self) -> Geometry:
        """The whole candidate vocabulary's geometry (calibration, the reference search
        and research scripts; the mechanism itself runs on :attr:`geometries`)."""
        with self._lock:
            if not self.classes.restricted:     # one class: the whole vocabulary
                return self.geometries[next(iter(self.geometries))]
            if self._whole is None:
                self._whole = Geometry(self._space.matrix, self._space.candidate_ids)
            return self._whole

    def token_texts(self) -> list[str]:
        """The text of every token id (decoded once; the render of every ``at``)."""
        with self._lock:
            if self._texts is None:
                piece = self._space.piece
                self._texts = [piece(i).decode("utf-8", "replace")
                               for i in range(int(self._space.matrix.shape[0]))]
            return self._texts

    @property
    def calibration(self) -> dict:
        with self._lock:
            if self._calibration is None:
                self._calibration = dx_store.load_calibration(self._space, self._calibrate)
            return self._calibration

    def _calibrate(self) -> dict:
        from preflight.core.sanitize.dx_calibration import calibrate, default_sample_text

        return calibrate(self._space, default_sample_text(), geom=self.geometry)

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
            "nearest_neighbour": "exact",
            "neighbour_table_cached": (
                dx_store.installed_table_path(space, self.classes).is_file()
                or dx_store.cached_table_path(space, self.classes).is_file()),
            "word_boundaries": self.classes.describe(),
            "revealed": "the word-boundary pattern (which tokens start a word, continue "
                        "one, or are whitespace): the text shows it anyway"
                        if self.classes.restricted else "nothing beyond the output",
        }

    # ----- the Mechanism protocol

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        """Sanitize at ``params.epsilon`` (required)."""
        eps = self._require_epsilon(params.epsilon)
        if params.scope not in SCOPES:
            raise ConfigError(
                f"Unknown d_X scope '{params.scope}'.", "Use --scope all or --scope pii.", fix="dx-scope"
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
                f"Unknown d_X scope '{params.scope}'.", "Use --scope all or --scope pii.", fix="dx-scope"
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
                fix="epsilon")
        try:
            e = float(eps)
        except (TypeError, ValueError):
            raise ConfigError(f"ε must be a number, not {eps!r}.",
                              "Pass e.g. --epsilon 50.", fix="epsilon") from None
        if not math.isfinite(e) or e <= 0:
            raise ConfigError(f"ε must be a positive number, not {eps}.", "Pass e.g. --epsilon 50.",
                              fix="epsilon")
        return e

    def warm_up(self, progress=None, cancel=None) -> None:
        """One-time per-embedding work that makes later preparations fast: calibration
        and the neighbour table (cached on disk). Safe to run in a background thread."""
        _ = self.calibration
        self.build_neighbour_table(progress=progress, cancel=cancel)

    def build_neighbour_table(self, progress: Progress | None = None, cancel=None,
                              dest: Path | None = None) -> Path:
        """Build (once) and store the neighbour table of every word-boundary class (one
        file); ``dest`` defaults to the per-user cache (the model installer passes
        :meth:`installed_table_path`)."""
        return dx_store.build_tables(self._space, self.classes, self.geometries, progress,
                                     cancel, dest)

    def installed_table_path(self) -> Path:
        """Where `preflight models install` puts this space's neighbour tables."""
        return dx_store.installed_table_path(self._space, self.classes)


@register("dx")
def _factory(space: TokenSpace | None = None, rank_constant: float | None = None,
             epsilon_range: tuple[float, float] | None = None, **_: Any) -> DxMechanism:
    return DxMechanism(space=space, rank_constant=rank_constant,  # type: ignore[arg-type]
                       epsilon_range=epsilon_range)


def build_neighbour_table(space: TokenSpace, progress: Progress | None = None, cancel=None,
                          dest: Path | None = None) -> Path:
    """Build and store ``space``'s neighbour tables with geometries of their own
    (scripts; a running app calls :meth:`DxMechanism.build_neighbour_table`)."""
    classes = BoundaryClasses.of_space(space)
    geoms = {lab: Geometry(space.matrix, classes.members[lab]) for lab in classes.labels}
    return dx_store.build_tables(space, classes, geoms, progress, cancel, dest)
