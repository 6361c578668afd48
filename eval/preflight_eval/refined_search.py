"""The search for the best ε that checks candidates with the local model: the product's
"Find best ε" before issue 47, kept for the studies that measure it.

The product searches the instant curve alone (:func:`preflight.core.utility.recommend.
recommend`): a refined value measures one noise sample and can fall as ε grows. This search
started from the same curve and then:

1. took the first grid step that passes and bisected log ε inside that step, each probe
   held between the curve's values at the step's ends;
2. refined that candidate with the SLM (one generation; the SLM's answer on the original
   computed once and cached);
3. if the refined prediction fell short, it said by how much the instant curve is
   optimistic on *this* document: move to where the instant curve clears the minimum by
   that gap (plus :data:`SHIFT_MARGIN`), or to where it stops rising if it never does,
   and refine there; if that passes more than :data:`TIGHTEN_RATIO` above the first
   candidate, check their midpoint once; if it falls short, check the policy's largest
   ε (``widen="shift"``; ``widen="bisect"``: a bisection on refined predictions);
4. if nothing qualified, ``keep_local`` with the SLM's answer on the original.

:mod:`preflight_eval.search_study` measures the two widenings on documents the regressor
never saw; :mod:`preflight_eval.bench_utility` times this search beside the product's.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Sequence

from preflight.core.errors import Cancelled
from preflight.core.types import Span
from preflight.core.utility.assess import Assessment, UtilityAssessor
from preflight.core.utility.curve import utility_curve
from preflight.core.utility.recommend import (
    CURVE_POINTS, Prepared, Progress, Recommendation, epsilon_bounds, log_grid,
)

# How far above the observed gap the second candidate aims: the gap (instant − refined) of
# one document moves between two ε by at most this much in 75 % of the training documents'
# consecutive d_X settings (out-of-fold predictions; preflight_eval.search_study
# --margin-from-data --rows 3278: 0.042 over 712 pairs since the instant model reads the
# document's form; 0.066 before; with the default SLM's features, --rows 2908 --slm-role
# slm_qwen05: 0.044), so the second candidate passes about three times in four.
SHIFT_MARGIN = 0.04
WIDENINGS = ("shift", "bisect")
# A passing second check more than this factor above the failed first one is followed by
# one check at their geometric midpoint: a bisection from the first candidate to the
# largest ε (the widening before) narrows to about sqrt(253 / 55) ≈ 2.1 on the default
# range, so the shift's choice is never coarser than that.
TIGHTEN_RATIO = 2.0


class _Steps:
    """Progress of a search, reported before each ε it evaluates.

    The bar has one unit per local-model run (the original, then at most ``refinements``
    checks) and one for the whole instant phase (curve and bisection: one regressor call
    per ε, much cheaper than a run), so it does not race through the instant settings
    and then stall on the slow ones."""

    def __init__(self, progress: Progress | None, refinements: int) -> None:
        self.report = progress or (lambda _f, _m: None)
        self.runs_total = 1 + refinements
        self.units = self.runs_total + 1
        self.runs = 0              # local-model runs started
        self.instant_share = 0.0   # of the instant phase, done

    def _fraction(self, runs_done: int) -> float:
        return min(1.0, (runs_done + self.instant_share) / self.units)

    def slm(self, what: str) -> None:
        if self.runs:
            self.instant_share = 1.0   # checks follow the instant phase, however short
        self.runs += 1
        self.report(self._fraction(self.runs - 1),
                    f"{what} (run {self.runs} of at most {self.runs_total})")

    def instant(self, share: float, what: str) -> None:
        self.instant_share = min(1.0, max(self.instant_share, share))
        self.report(self._fraction(self.runs), what)

    def done(self) -> None:
        self.report(1.0, "done")


def recommend_refined(
    original: str,
    prepared: Prepared,
    assessor: UtilityAssessor,
    min_utility: float,
    *,
    max_refinements: int = 3,
    fast_steps: int = 8,
    widen: str = "shift",
    shift_margin: float = SHIFT_MARGIN,
    spans: Sequence[Span] = (),
    epsilon_min: float | None = None,
    epsilon_max: float | None = None,
    correct: bool = False,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> Recommendation:
    """Find the smallest ε in the policy bounds whose refined prediction ≥ ``min_utility``.

    ``widen``: what follows a candidate that falls short (see the module docstring);
    ``shift_margin``: how far above the observed gap the second candidate aims."""
    if widen not in WIDENINGS:
        raise ValueError(f"widen must be one of {WIDENINGS}, not {widen!r}")
    lo, hi = epsilon_bounds(prepared, epsilon_min, epsilon_max)
    steps = _Steps(progress, max(1, max_refinements))
    probes: list[dict[str, Any]] = []
    calls_before = assessor.slm_calls

    def check() -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled()

    def fast(eps: float, floor: float, ceiling: float, step: int) -> float:
        check()
        steps.instant((CURVE_POINTS + step) / (CURVE_POINTS + fast_steps),
                      f"narrowing down at ε {eps:.3g} (step {step + 1} of {fast_steps})")
        raw = assessor.fast(original, prepared.at(eps), spans, correct=correct,
                            explain=False).predicted_fast
        value = min(max(raw, floor), ceiling)     # inside the monotone curve's step
        probes.append({"epsilon": round(eps, 4), "stage": "fast", "predicted": round(value, 4)})
        return value

    refined_cache: dict[float, Assessment] = {}

    def refined(eps: float) -> Assessment:
        if eps not in refined_cache:
            check()
            steps.slm(f"checking ε {eps:.3g} with the local model")
            res = assessor.refine(original, prepared.at(eps), spans, correct=correct,
                                  cancel=cancel, vault=getattr(prepared, "vault", None))
            refined_cache[eps] = res
            probes.append({"epsilon": round(eps, 4), "stage": "refined",
                           "predicted": round(float(res.predicted), 4)})
        return refined_cache[eps]

    # 1. the answer on the original: feature C, and the fallback if we keep it local
    steps.slm("the local model reads the original")
    local_answer, _, _ = assessor.original_answer(original, cancel)

    # 2. the monotone instant curve, then bisection inside the first step that passes
    curve = utility_curve(
        assessor, original, prepared, log_grid(lo, hi, CURVE_POINTS), spans,
        correct=correct, cancel=cancel,
        on_point=lambda i, eps: steps.instant(
            i / (CURVE_POINTS + fast_steps),
            f"instant estimate at ε {eps:.3g} (setting {i + 1} of {CURVE_POINTS})"))
    check()
    for eps, value in curve:
        probes.append({"epsilon": round(eps, 4), "stage": "curve", "predicted": round(value, 4)})

    def crossing(level: float) -> tuple[float, float]:
        """The smallest ε whose instant prediction reaches ``level``, and that prediction
        (the largest ε and its value when none does)."""
        passing = [i for i, (_e, u) in enumerate(curve) if u >= level]
        if not passing:
            return hi, curve[-1][1]
        if passing[0] == 0:
            return lo, curve[0][1]
        i = passing[0]
        (e0, u0), (e1, u1) = curve[i - 1], curve[i]
        a, b, at_b = math.log(e0), math.log(e1), u1     # fails at a, passes at b
        for step in range(fast_steps):
            mid = (a + b) / 2
            value = fast(math.exp(mid), u0, u1, step)
            if value >= level:
                b, at_b = mid, value
            else:
                a = mid
        return math.exp(b), at_b

    candidate, instant_at_candidate = crossing(min_utility)

    # 3. refine the candidate; if it falls short, correct by the gap, then try hi
    best: tuple[float, Assessment] | None = None
    budget = max(1, max_refinements)
    res = refined(candidate)
    budget -= 1
    if res.predicted >= min_utility:
        best = (candidate, res)
    elif widen == "shift":
        tried = candidate
        if candidate < hi and budget > 0:
            gap = instant_at_candidate - float(res.predicted)
            # no further than where the instant curve stops rising: beyond it the instant
            # model expects no more utility, only less privacy
            top = curve[-1][1]
            shifted, _ = crossing(min(min_utility + gap + shift_margin, top))
            tried = shifted if shifted > candidate else hi
            res2 = refined(tried)
            budget -= 1
            if res2.predicted >= min_utility:
                best = (tried, res2)
                # a wide step (a flat instant curve turns the gap into a large ε) is
                # halved once, so the choice is at least as tight as a bisection's
                if tried > TIGHTEN_RATIO * candidate and budget > 0:
                    mid = math.sqrt(candidate * tried)
                    res_mid = refined(mid)
                    budget -= 1
                    if res_mid.predicted >= min_utility:
                        best = (mid, res_mid)
        if best is None and tried < hi and budget > 0:
            res_hi = refined(hi)
            if res_hi.predicted >= min_utility:
                best = (hi, res_hi)
    elif candidate < hi and budget > 0:
        res_hi = refined(hi)
        budget -= 1
        if res_hi.predicted >= min_utility:
            best = (hi, res_hi)
            a, b = math.log(candidate), math.log(hi)
            while budget > 0:
                check()
                mid = math.exp((a + b) / 2)
                res_mid = refined(mid)
                budget -= 1
                if res_mid.predicted >= min_utility:
                    best = (mid, res_mid)
                    b = math.log(mid)
                else:
                    a = math.log(mid)
    steps.done()
    calls = assessor.slm_calls - calls_before
    if best is None:
        last = refined_cache[max(refined_cache)]
        # Report what the most useful allowed ε would reach, so the user sees the gap.
        return Recommendation(
            "keep_local", None, last.predicted, last.predicted_fast, min_utility,
            local_answer, None, last, calls, tuple(probes), curve,
        )
    eps, res = best
    return Recommendation(
        "send", eps, res.predicted, res.predicted_fast, min_utility, None,
        prepared.at(eps), res, calls, tuple(probes), curve,
    )
