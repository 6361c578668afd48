"""Research variants of the d_X mechanism (never shipped).

``UnrestrictedDx``: any token may replace any token (words get glued and split) — the
setting the published mechanism and the baselines of ``bench_dx`` run in.
``PivotOnlyDx``: the exact nearest-neighbour pivot without the rank step (Feyisetan et
al.'s original mechanism); tests compare its output distribution with a brute force.
"""

from __future__ import annotations

from preflight.core.sanitize.dx import DxMechanism
from preflight.core.sanitize.dx_classes import BoundaryClasses


class UnrestrictedDx(DxMechanism):
    """d_X over the whole candidate vocabulary: word boundaries not kept."""

    @property
    def classes(self) -> BoundaryClasses:
        with self._lock:
            if self._classes is None:
                self._classes = BoundaryClasses.of_space(self.space, restricted=False)
            return self._classes


class PivotOnlyDx(DxMechanism):
    """d_X without the rank step: the output is the exact pivot."""

    rank_step = False


def research_dx(space, *args, word_boundaries: bool = True, rank_step: bool = True,
                **kwargs) -> DxMechanism:
    """The mechanism with the research settings asked for."""
    if word_boundaries and rank_step:
        cls: type[DxMechanism] = DxMechanism
    elif rank_step:
        cls = UnrestrictedDx
    elif word_boundaries:
        cls = PivotOnlyDx
    else:
        cls = type("UnrestrictedPivotDx", (UnrestrictedDx, PivotOnlyDx), {})
    return cls(space, *args, **kwargs)


__all__ = ["PivotOnlyDx", "UnrestrictedDx", "research_dx"]
