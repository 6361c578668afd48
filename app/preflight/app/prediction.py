"""What the window shows about a cloud answer's expected utility: :class:`Prediction`.

A core :class:`~preflight.core.utility.assess.Assessment` with its error bar (the bundle's
conformal band, or the held-out RMSE of an older bundle), the provider's calibration and,
for the instant value, its place on the document's non-decreasing utility curve.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from preflight.core.utility.assess import Assessment
from preflight.core.utility.curve import CurvePoint, read_curve
from preflight.core.utility.features import as_mapping
from preflight.core.utility.scope import ScopeVerdict


@dataclass(frozen=True)
class Prediction:
    """An assessment of the cloud answer's utility and the error bar around it.

    The band is the assessment's conformal interval when the regressor has one
    (``level`` its nominal coverage); else, for an older bundle, ``value ± rmse`` with
    ``rmse`` the held-out RMSE of the regressor that made the prediction, clipped to −1…1.
    """

    assessment: Assessment
    rmse: float | None = None
    calibration: str = ""            # presentation.calibration_text of the provider
    where: str = ""                  # where a refined assessment ran (AssessorPlace.label)
    # The instant value (and band) as it stands on the document's non-decreasing utility
    # curve (see :meth:`on_curve`); None: the raw prediction. A refined prediction (with
    # the local model) is a measurement of its own and is never moved.
    placed: CurvePoint | None = None
    # Why an instant value is shown: no refined one follows for this setting
    # (app.refinement), or a refined value shown for this setting was for another text (a
    # new noise sample, an edit); "" otherwise.
    note: str = ""
    # An instant value that a refined one will follow (the window says it is coming).
    refines: bool = False
    # The document and task against what the prediction was measured on (None: no
    # measured scope shipped — nothing is said).
    scope: ScopeVerdict | None = None

    def on_curve(self, curve: Sequence[Any], epsilon: float) -> "Prediction":
        """This prediction, made at ``epsilon``, read from ``curve`` (a core
        ``UtilityCurve`` or ``(ε, utility)`` pairs): the number beside the chart then
        agrees with it and never falls as ε grows. A refined prediction (a measurement
        with the local model) is returned unchanged, as is one without a curve."""
        if self.refined or not curve:
            return self
        points = getattr(curve, "points", None) or [CurvePoint(float(e), float(u))
                                                     for e, u in curve]
        return replace(self, placed=read_curve(points, float(epsilon)))

    @property
    def explained(self) -> Any:
        """The estimate behind :attr:`value` (band, unsanitized expectation, drivers), with
        the value and band read from the curve when the prediction was placed on it."""
        est = getattr(self.assessment, "explained", None)
        if est is None or self.placed is None or self.refined:
            return est
        return replace(est, value=float(self.placed.utility),
                       low=self.placed.low if self.placed.low is not None else est.low,
                       high=self.placed.high if self.placed.high is not None else est.high)

    @property
    def value(self) -> float:
        if self.placed is not None and not self.refined:
            return float(self.placed.utility)
        return float(self.assessment.best)

    @property
    def refined(self) -> bool:
        return self.assessment.predicted is not None

    @property
    def features(self) -> dict[str, float]:
        return dict(as_mapping(self.assessment.features))

    @property
    def _band(self) -> Any:
        est = getattr(self.assessment, "explained", None)
        return est if est is not None and est.low is not None else None

    @property
    def level(self) -> float | None:
        return self._band.level if self._band is not None else None

    @property
    def low(self) -> float | None:
        if self.placed is not None and self.placed.low is not None and not self.refined:
            return self.placed.low
        if self._band is not None:
            return self._band.low
        return None if self.rmse is None else max(-1.0, self.value - self.rmse)

    @property
    def high(self) -> float | None:
        if self.placed is not None and self.placed.high is not None and not self.refined:
            return self.placed.high
        if self._band is not None:
            return self._band.high
        return None if self.rmse is None else min(1.0, self.value + self.rmse)


def prediction_for(services: Any, provider: str | None, metrics: Mapping[str, Any],
                   original: str, task: Any, assessment: Assessment, note: str = "",
                   refines: bool = False) -> Prediction:
    """The window's prediction of ``assessment`` for ``provider`` and ``task``: its error
    bar, the provider's calibration, where a refined one ran, and the document and task
    against what the prediction was measured on."""
    from preflight.app.presentation import calibration_text

    model = "full" if assessment.predicted is not None else "fast"
    where = services.assessor_place().label if model == "full" else ""
    scope = services.scope()
    return Prediction(assessment, held_out_rmse(metrics, model, assessment.corrected),
                      calibration_text(services.calibration_status(provider)), where,
                      note=note, refines=refines,
                      scope=None if scope is None else scope.verdict(original, task))


def scope_text(verdict: ScopeVerdict | None) -> str:
    """Where a document or task lies outside what the prediction was trained on, said with
    what that was and, when it was read, how often the value missed on kinds of document
    it never trained on ("" when inside, or no scope shipped): the window's marked line
    and `preflight assess`'s."""
    if verdict is None or verdict.inside:
        return ""
    why = []
    if not verdict.length_inside:
        why.append(f"this document has {verdict.words:,} words, the documents it was "
                   f"trained on had {verdict.shortest:,}–{verdict.longest:,}")
    if not verdict.task_measured:
        why.append("it was trained on summaries only, not on questions, instructions of "
                   "your own or follow-ups")
    said = f"Outside what it was trained on: {'; '.join(why)}. Read the number as a rough guide"
    unseen = verdict.unseen
    if unseen is not None:
        question = (unseen.missed_questions if not verdict.task_measured
                    and verdict.task_kind == "question" else None)
        if question is not None:
            said += (f": on questions about kinds of document it never trained on, it was "
                     f"off by more than 0.1 on {question:.0%} of sends")
        else:
            said += (f": on kinds of document it never trained on, it was off by more "
                     f"than 0.1 on {unseen.missed:.0%} of sends")
    return said + "."


def measured_on_text(verdict: ScopeVerdict | None) -> str:
    """What the prediction was trained and measured on, and how it did on kinds it never
    trained on, when that was read ("" when no scope shipped)."""
    if verdict is None:
        return ""
    said = (f"Trained and measured on {verdict.measured_on}, documents of "
            f"{verdict.shortest:,}–{verdict.longest:,} words")
    unseen = verdict.unseen
    if unseen is None:
        return said + "; other kinds of text were not measured."
    return (f"{said}. On {unseen.kinds} it never trained on ({unseen.documents:,} "
            f"documents, read once) it was off by more than 0.1 from the usefulness "
            f"measured after the send on {unseen.missed:.0%} of {unseen.sends:,} sends.")


def held_out_rmse(metrics: Mapping[str, Any], model: str, corrected: bool = False
                  ) -> float | None:
    """The held-out RMSE of regressor ``model`` ("fast" or "full") in a bundle's metrics.

    ``preflight_eval.train_utility`` stores them under ``metrics["held_out"][variant]
    [model]`` (variant "plain" or "corrected"); a bundle written before that keeps only
    the evaluation report's rows, read through :func:`_labelled_held_out`.
    """
    held = metrics.get("held_out")
    table = held if isinstance(held, Mapping) else _labelled_held_out(metrics)
    variant = table.get("corrected" if corrected else "plain")
    if not isinstance(variant, Mapping) and corrected:
        variant = table.get("plain")
    entry = variant.get(model) if isinstance(variant, Mapping) else None
    rmse = entry.get("rmse") if isinstance(entry, Mapping) else None
    return float(rmse) if isinstance(rmse, (int, float)) and rmse >= 0 else None


def _labelled_held_out(metrics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The keyed table of a bundle written before it existed: its metrics hold the report's
    rows per variant, labelled ("fast (no model call)"), the first word the model's name
    (the first row of a name wins, as the report lists the bundle's own model first)."""
    out: dict[str, dict[str, Any]] = {}
    for variant in ("plain", "corrected"):
        rows = metrics.get(variant)
        if isinstance(rows, Mapping):
            table = out.setdefault(variant, {})
            for label, entry in rows.items():
                table.setdefault(str(label).split(" ", 1)[0], entry)
    return out
