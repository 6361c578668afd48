"""Refined or instant: which prediction the window and the CLI show for a setting.

The refined prediction (the local model's answers, features B–D) is a second opinion, not
always a better one. ``preflight_eval.train_utility`` scores both out of fold per setting
kind (train + calibration documents) and stores in the bundle's metrics, under
``refinement``, which one to show for each kind: ``{"placeholder": {"show": "instant",
"failed_instant_pct": 12.0, "failed_refined_pct": 15.0, ...}, ...}``. Where the refined
prediction missed more often, :func:`choose` keeps the instant value and says why in the
user's words; a bundle without verdicts (an older one, a refit) shows the refined value.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from preflight.core.types import SanitizedText
from preflight.core.utility.assess import Assessment
from preflight.core.utility.features import method_indicator

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


def verdict(metrics: Mapping[str, Any], kind: str) -> tuple[bool, str]:
    """(show the refined value?, why not, in the user's words) for setting ``kind``."""
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
                   f"was less accurate on documents it was not trained on{numbers}.")


def choose(assessment: Assessment, sanitized: SanitizedText, metrics: Mapping[str, Any]
           ) -> tuple[Assessment, str]:
    """``assessment`` as it should be shown, and why the refined value is not ("" when it
    is). The refined value withheld stays in ``meta`` (``refined_not_shown``)."""
    if assessment.predicted is None:
        return assessment, ""
    ok, why = verdict(metrics, setting_kind(sanitized))
    if ok:
        return assessment, ""
    meta = dict(assessment.meta, refined_not_shown=round(float(assessment.predicted), 4),
                refined_withheld=why)
    return replace(assessment, predicted=None, estimate=None, meta=meta), why
