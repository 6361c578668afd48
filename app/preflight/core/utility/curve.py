"""The utility-versus-ε curve of one document: made in one place, non-decreasing.

The regressors are monotone in every feature that moves with ε (see
:mod:`preflight.core.utility.fitting`), but the fast features of one document do not all
move in lockstep along the slider (d_X noise at a higher ε may change a token it left
alone at a lower one), and a bundle from an older format carries no constraint at all.
The curve the user sees — chart, sweep, recommendation — is therefore made here and
projected onto the non-decreasing curves by isotonic regression (the closest one in least
squares, which unlike a running maximum does not inflate the curve), for the value and
each edge of the band.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from preflight.core.types import Span


@dataclass(frozen=True)
class CurvePoint:
    epsilon: float
    utility: float
    low: float | None = None
    high: float | None = None


class UtilityCurve(list):
    """The curve as ``(ε, utility)`` pairs (what the chart and tests read) with the band
    kept alongside: :attr:`points` has low/high per ε and :attr:`level` the band's
    nominal coverage (None when the regressor has no calibrated band)."""

    def __init__(self, points: Sequence[CurvePoint], level: float | None = None) -> None:
        super().__init__((p.epsilon, p.utility) for p in points)
        self.points = tuple(points)
        self.level = level

    def band(self) -> list[tuple[float, float, float]]:
        return [(p.epsilon, p.low, p.high) for p in self.points
                if p.low is not None and p.high is not None]


def non_decreasing(values: Sequence[float]) -> list[float]:
    """The least-squares non-decreasing fit of ``values`` (pool-adjacent-violators)."""
    if len(values) < 2:
        return [float(v) for v in values]
    from sklearn.isotonic import IsotonicRegression

    y = np.asarray(values, dtype=float)
    fitted = IsotonicRegression(increasing=True).fit_transform(np.arange(len(y)), y)
    return [float(v) for v in fitted]


def monotone_curve(raw: Sequence[CurvePoint], level: float | None = None) -> UtilityCurve:
    """``raw`` points (sorted by ε here) with utility and band made non-decreasing."""
    pts = sorted(raw, key=lambda p: p.epsilon)
    util = non_decreasing([p.utility for p in pts])
    has_band = pts and all(p.low is not None and p.high is not None for p in pts)
    lows = non_decreasing([p.low for p in pts]) if has_band else [None] * len(pts)
    highs = non_decreasing([p.high for p in pts]) if has_band else [None] * len(pts)
    return UtilityCurve([CurvePoint(p.epsilon, u, lo, hi)
                         for p, u, lo, hi in zip(pts, util, lows, highs)],
                        level if has_band else None)


def read_curve(curve: Sequence[CurvePoint], epsilon: float) -> CurvePoint | None:
    """The curve's value (and band) at ``epsilon``: linear in log ε between the two grid
    points around it, the end value outside the grid. Read this way, the number shown for
    one ε (the slider's, `assess --epsilon`) never falls as ε grows — for a fixed document,
    policy and seed — and always agrees with the chart. None for an empty curve."""
    pts = sorted(curve, key=lambda p: p.epsilon)
    if not pts:
        return None
    eps = float(epsilon)
    if eps <= pts[0].epsilon or len(pts) == 1:
        return replace(pts[0], epsilon=eps)
    if eps >= pts[-1].epsilon:
        return replace(pts[-1], epsilon=eps)
    i = next(k for k in range(1, len(pts)) if pts[k].epsilon >= eps)
    a, b = pts[i - 1], pts[i]
    t = (math.log(eps) - math.log(a.epsilon)) / (math.log(b.epsilon) - math.log(a.epsilon))

    def mix(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else x + t * (y - x)

    return CurvePoint(eps, mix(a.utility, b.utility), mix(a.low, b.low), mix(a.high, b.high))


def utility_curve(assessor: Any, original: str, prepared: Any, epsilons: Sequence[float],
                  spans: Sequence[Span] = (), *, correct: bool = False,
                  cancel: threading.Event | None = None,
                  on_point: Callable[[int, float], None] | None = None) -> UtilityCurve:
    """The instant prediction (and its band) at each ε of ``epsilons`` for one prepared
    document, made non-decreasing. Stops early (a shorter curve) when cancelled.
    ``on_point(i, ε)`` is called before the i-th ε is evaluated (progress)."""
    raw: list[CurvePoint] = []
    level = None
    for i, eps in enumerate(epsilons):
        if cancel is not None and cancel.is_set():
            break
        if on_point is not None:
            on_point(i, float(eps))
        a = assessor.fast(original, prepared.at(eps), list(spans), correct=correct,
                          explain=False)
        est = a.estimate_fast
        low = est.low if est is not None else None
        high = est.high if est is not None else None
        level = est.level if est is not None else None
        raw.append(CurvePoint(float(eps), float(a.predicted_fast), low, high))
    return monotone_curve(raw, level)
