"""Recommend the most private ε whose predicted utility still meets the user's minimum.

Utility rises (roughly monotonically) with ε. :func:`recommend` computes the instant curve
over a log-spaced ε grid (no model call: each point is one ``prepared.at(ε)`` plus the
instant regressor), made non-decreasing in ε by
:func:`~preflight.core.utility.curve.utility_curve` — the same curve the window draws —
and chooses the smallest ε where that curve, read as
:func:`~preflight.core.utility.curve.read_curve` reads it (linear in log ε between grid
points), reaches the minimum: the number shown at the chosen ε is the one the search
decided on, and it never falls as ε grows. If nothing qualifies, the decision is
``keep_local`` and nothing leaves the machine.

No local model runs: a refined value measures one noise sample and can fall as ε grows
(:mod:`preflight.app.refinement`). The search that checked candidates with the local
model (shift or bisection widening) lives in :mod:`preflight_eval.refined_search`, where
:mod:`preflight_eval.search_study` and the speed benchmark still measure it. A setting
without d_X has nothing to search: :func:`judge` decides on its one output, refined where
the bundle says the refinement helps.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

from preflight.core.errors import Cancelled, ConfigError
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.assess import Assessment, UtilityAssessor
from preflight.core.utility.curve import UtilityCurve, read_curve, utility_curve

CURVE_POINTS = 12          # the instant curve's grid (the window's chart uses it too)
Progress = Callable[[float, str], None]


class Prepared(Protocol):
    """A document prepared once for every ε (``DxPrepared``)."""

    epsilon_range: tuple[float, float]

    def at(self, epsilon: float) -> SanitizedText: ...


@dataclass(frozen=True)
class Recommendation:
    decision: str                       # "send" | "keep_local"
    epsilon: float | None               # chosen ε (None when keeping local)
    predicted_utility: float | None     # the prediction decided on at the chosen ε, refined
                                        # unless ``refined`` is False (keep_local: at the
                                        # largest ε tried)
    predicted_utility_fast: float | None
    min_utility: float
    local_answer: str | None            # the SLM's answer on the original (keep_local;
                                        # None when the decision ran no local model)
    sanitized: SanitizedText | None = None
    assessment: Assessment | None = None
    slm_calls: int = 0
    probes: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    curve: UtilityCurve | None = None   # the instant curve the search started from
    refined: bool = True                # decided on the local model's check (else instant)

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "refined": self.refined,
            "epsilon": None if self.epsilon is None else round(self.epsilon, 4),
            "predicted_utility": _r(self.predicted_utility),
            "predicted_utility_fast": _r(self.predicted_utility_fast),
            "min_utility": self.min_utility,
            "local_answer": self.local_answer,
            "slm_calls": self.slm_calls,
            "probes": list(self.probes),
        }


def log_grid(lo: float, hi: float, n: int) -> list[float]:
    """``n`` values spaced evenly on a log scale between ``lo`` and ``hi``."""
    if n < 2 or hi <= lo:
        return [lo]
    a, b = math.log(lo), math.log(hi)
    return [math.exp(a + (b - a) * i / (n - 1)) for i in range(n)]


def prepared_range(prepared: Any) -> tuple[float, float]:
    """The calibrated ε range a prepared document was built for."""
    lo, hi = prepared.epsilon_range
    return float(lo), float(hi)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def recommend(
    original: str,
    prepared: Prepared,
    assessor: UtilityAssessor,
    min_utility: float,
    *,
    spans: Sequence[Span] = (),
    epsilon_min: float | None = None,
    epsilon_max: float | None = None,
    correct: bool = False,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> Recommendation:
    """The smallest ε in the policy bounds whose instant prediction, on the document's
    non-decreasing curve, reaches ``min_utility``; ``keep_local`` if none does."""
    lo, hi = epsilon_bounds(prepared, epsilon_min, epsilon_max)
    report = progress or (lambda _f, _m: None)
    curve = utility_curve(
        assessor, original, prepared, log_grid(lo, hi, CURVE_POINTS), spans,
        correct=correct, cancel=cancel,
        on_point=lambda i, eps: report(
            i / CURVE_POINTS,
            f"instant estimate at ε {eps:.3g} (setting {i + 1} of {CURVE_POINTS})"))
    if cancel is not None and cancel.is_set() or len(curve) < CURVE_POINTS:
        raise Cancelled()
    probes = tuple({"epsilon": round(e, 4), "stage": "curve", "predicted": round(u, 4)}
                   for e, u in curve)
    eps = first_reaching(curve, min_utility)
    at = read_curve(curve.points, hi if eps is None else eps)
    res = assessor.fast(original, prepared.at(at.epsilon), spans, correct=correct)
    est = res.estimate_fast               # the number and band as the curve reads them
    res = replace(res, predicted_fast=at.utility, estimate_fast=None if est is None else
                  replace(est, value=at.utility, low=at.low if at.low is not None else est.low,
                          high=at.high if at.high is not None else est.high))
    report(1.0, "done")
    if eps is None:
        return Recommendation("keep_local", None, at.utility, at.utility, min_utility, None,
                              None, res, 0, probes, curve, refined=False)
    return Recommendation("send", eps, at.utility, at.utility, min_utility, None,
                          prepared.at(eps), res, 0, probes, curve, refined=False)


def epsilon_bounds(prepared: Any, epsilon_min: float | None, epsilon_max: float | None
                   ) -> tuple[float, float]:
    """The search's ε bounds: the given ones, else the preparation's calibrated range."""
    lo_cal, hi_cal = prepared_range(prepared)
    lo = float(epsilon_min) if epsilon_min is not None else float(lo_cal)
    hi = float(epsilon_max) if epsilon_max is not None else float(hi_cal)
    if not (lo > 0 and hi >= lo):
        raise ConfigError(
            f"The ε bounds [{lo:g}, {hi:g}] are not a valid range.",
            "Give 0 < --epsilon-min ≤ --epsilon-max.", fix="epsilon-range",
        )
    return lo, hi


def first_reaching(curve: UtilityCurve, level: float) -> float | None:
    """The smallest ε at which ``curve``, read as :func:`read_curve` reads it, reaches
    ``level`` (None when it never does)."""
    pts = list(curve.points)
    passing = [i for i, p in enumerate(pts) if p.utility >= level]
    if not passing:
        return None
    i = passing[0]
    if i == 0:
        return pts[0].epsilon
    a, b = pts[i - 1], pts[i]
    t = (level - a.utility) / (b.utility - a.utility)
    eps = math.exp(math.log(a.epsilon) + t * (math.log(b.epsilon) - math.log(a.epsilon)))
    for _ in range(64):    # rounding may leave the interpolation a hair under the level
        got = read_curve(pts, eps)
        if got is not None and got.utility >= level:
            return eps
        eps = min(b.epsilon, eps * (1 + 1e-9))
    return b.epsilon


def judge(
    original: str,
    sanitized: SanitizedText,
    assessor: UtilityAssessor,
    min_utility: float,
    *,
    spans: Sequence[Span] = (),
    correct: bool = False,
    cancel: threading.Event | None = None,
    vault: Any = None,
    refine: bool = True,
) -> Recommendation:
    """The decision for a policy without d_X (nothing to search): send its one output if
    the refined prediction (``refine=False``: the instant one; no local model runs)
    reaches ``min_utility``, else keep the document local.
    ``vault``: the sanitization's (see :meth:`UtilityAssessor.measure`)."""
    if not refine:
        res = assessor.fast(original, sanitized, spans, correct=correct)
        value = float(res.predicted_fast)
        probes = ({"epsilon": None, "stage": "fast", "predicted": round(value, 4)},)
        if value >= min_utility:
            return Recommendation("send", None, value, value, min_utility, None, sanitized,
                                  res, 0, probes, refined=False)
        return Recommendation("keep_local", None, value, value, min_utility, None, None, res,
                              0, probes, refined=False)
    calls_before = assessor.slm_calls
    local_answer, _, _ = assessor.original_answer(original, cancel)
    res = assessor.refine(original, sanitized, spans, correct=correct, cancel=cancel,
                          vault=vault)
    probes = ({"epsilon": None, "stage": "refined", "predicted": round(float(res.predicted), 4)},)
    calls = assessor.slm_calls - calls_before
    if res.predicted >= min_utility:
        return Recommendation("send", None, res.predicted, res.predicted_fast, min_utility,
                              None, sanitized, res, calls, probes)
    return Recommendation("keep_local", None, res.predicted, res.predicted_fast, min_utility,
                          local_answer, None, res, calls, probes)
