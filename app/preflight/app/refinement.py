"""Refined or instant: which prediction the window and the CLI show for a setting.

The refined prediction (the local model's answers, features B–D) is a second opinion, not
always a better one, and it costs a local-model run of seconds. Two rules decide, the same
for both faces:

* **Along ε the number never falls.** A d_X setting's number is read from the document's
  non-decreasing instant curve (:mod:`preflight.core.utility.curve`); a refined value is a
  measurement of one noise sample, and two of them at ε₁ < ε₂ can fall. Carrying one
  sample's refinement to other ε as an offset, or its local-model features, made the
  prediction worse than the instant one out of fold (``python -m
  preflight_eval.refined_offset_study``), so d_X settings ("dx", "identifiers-dx") show the
  instant value, and "Find best ε" searches on that curve (:func:`search`).
* **Elsewhere the refinement has to earn its place.** ``preflight_eval.train_utility``
  scores both out of fold per setting kind (train + calibration documents) and stores in
  the bundle's metrics, under ``refinement``, which one to show: "refined" only where the
  refinement measurably helps (see ``preflight_eval.refinement_verdict``), e.g.
  ``{"placeholder": {"show": "instant", "failed_instant_pct": 48.0,
  "failed_refined_pct": 49.2, "gain_ci": [-6.8, 4.5], ...}, ...}``. A bundle without
  verdicts (an older one) shows the refined value.

Where the instant value is shown, the local model does not run for it (:func:`measure`),
and the reason is said in the user's words.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from preflight.core.types import SanitizedText, Span
from preflight.core.utility.assess import Assessment
from preflight.core.utility.features import method_indicator
from preflight.core.utility.recommend import Recommendation, judge, recommend

#: How each setting kind is named to the user.
KIND_WORDS = {"identifiers": "the identifiers policy", "identifiers-dx": "the hybrid policy",
              "dx": "d_X noise", "placeholder": "placeholders", "pseudonym": "pseudonyms",
              "generalize": "generalized values", "redact": "redaction"}


def setting_kind(sanitized: SanitizedText) -> str:
    """The training data's name for the kind of sanitization ``sanitized`` is: an
    operator's own name, "dx" for whole-text d_X, "identifiers-dx" for a policy with d_X
    on the rest, a preset policy's name, else the action that replaced the most spans."""
    policy = sanitized.report.policy
    if policy is None:
        return sanitized.method
    if sanitized.report.epsilon is not None:
        return "dx" if policy.dx == "all" else "identifiers-dx"
    if policy.name in KIND_WORDS:
        return policy.name
    return method_indicator(sanitized)


#: Setting kinds whose number moves along the ε slider: always read from the curve.
ALONG_EPSILON = ("dx", "identifiers-dx")
ALONG_EPSILON_WHY = ("The instant estimate is shown: along the ε slider the number must "
                     "never fall as ε grows, and the local model's check measures one noise "
                     "sample, which can.")


def verdict(metrics: Mapping[str, Any], kind: str) -> tuple[bool, str]:
    """(show the refined value?, why not, in the user's words) for setting ``kind``."""
    if kind in ALONG_EPSILON:
        return False, ALONG_EPSILON_WHY
    table = metrics.get("refinement") if isinstance(metrics, Mapping) else None
    entry = table.get(kind) if isinstance(table, Mapping) else None
    if not isinstance(entry, Mapping) or entry.get("show") != "instant":
        return True, ""
    what = KIND_WORDS.get(kind, kind)
    try:
        refined, instant = float(entry["failed_refined_pct"]), float(entry["failed_instant_pct"])
        numbers = (f" (off by more than 0.1 on {refined:.0f} % of held-out sends, the "
                   f"instant estimate on {instant:.0f} %)")
    except (KeyError, TypeError, ValueError):
        numbers = ""
    return False, (f"The instant estimate is shown: for {what}, the local model's check "
                   f"did not make the estimate measurably more accurate on documents it "
                   f"was not trained on{numbers}.")


def expected(metrics: Mapping[str, Any], sanitized: SanitizedText) -> tuple[bool, str]:
    """:func:`verdict` for the setting ``sanitized`` was made with."""
    return verdict(metrics, setting_kind(sanitized))


def measure(assessor: Any, original: str, sanitized: SanitizedText, spans: Sequence[Span],
            **refine_kwargs: Any) -> tuple[Assessment, str]:
    """The assessment both faces show for ``sanitized``, and why it is the instant one
    ("" when refined): the refined assessment (``assessor.refine(**refine_kwargs)``) where
    the rules above allow it, else the instant one, with the reason in ``meta``
    (``refined_withheld``), without running the local model."""
    ok, why = expected(assessor.predictor.metrics, sanitized)
    if ok:
        return assessor.refine(original, sanitized, list(spans), **refine_kwargs), ""
    a = assessor.fast(original, sanitized, list(spans),
                      correct=bool(refine_kwargs.get("correct", False)))
    return replace(a, meta=dict(a.meta, refined_withheld=why)), why


def search(original: str, prepared: Any, assessor: Any, min_utility: float,
           **kwargs: Any) -> Recommendation:
    """"Find best ε" as both faces run it: on the instant curve the window draws and
    whose value `assess` prints (every d_X setting is :data:`ALONG_EPSILON`)."""
    return recommend(original, prepared, assessor, min_utility, **kwargs)


def decide(original: str, sanitized: SanitizedText, assessor: Any, min_utility: float,
           **kwargs: Any) -> Recommendation:
    """Send or keep local for a setting without d_X, on the value the faces show for it."""
    ok, _why = expected(assessor.predictor.metrics, sanitized)
    return judge(original, sanitized, assessor, min_utility, refine=ok, **kwargs)
