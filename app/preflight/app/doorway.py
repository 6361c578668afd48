"""What the window may ask of the application: the :class:`Doorway` protocol.

The window (``preflight.qt``) types its backend against this protocol; the real
implementation is :class:`preflight.app.window_doorway.WindowDoorway` (over
:func:`preflight.app.services.build_services`) and the window's unit tests use
``tests/qt/fakes.py::FakeBackend``. ``tests/app/test_doorway_contract.py`` fails when either
drifts from the protocol (method names or signatures).

Results are the core's own types — :class:`~preflight.core.types.SanitizedText`,
:class:`~preflight.core.utility.recommend.Recommendation`,
:class:`~preflight.core.send.cost.CostEstimate`, the send session's plan and results — plus
two small values only the window needs: :class:`Prediction` (a core
:class:`~preflight.core.utility.assess.Assessment` with the regressor's held-out error)
and :class:`AnswerChunk`.

Threading: each method is called from one lane only (see ``preflight.qt.controllers``):
detection and send planning on "detect", d_X on "dx", anything touching the local SLM on
"slm", the instant prediction on "pool"; the privacy figures: the cheap facts on "pool",
the attack on the d_X noise on "attack" (seconds, cancelled when the slider moves), the
reconstruction attack with the local SLM on "slm" (only when the user asks).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from preflight.core.config import ProviderSettings, Settings
from preflight.core.org_policy import OrgPolicy
from preflight.core.sanitize.policy import Policy
from preflight.core.send.cost import CostEstimate
from preflight.core.tasks import Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.assess import Assessment
from preflight.core.utility.curve import CurvePoint, read_curve
from preflight.core.utility.features import as_mapping
from preflight.core.utility.recommend import Recommendation

Progress = Callable[[float, str], None]


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


@dataclass(frozen=True)
class AnswerChunk:
    restored: str                    # text to append to the restored view
    raw: str                         # text to append to the raw view


def held_out_rmse(metrics: Mapping[str, Any], model: str, corrected: bool = False
                  ) -> float | None:
    """The held-out RMSE of regressor ``model`` ("fast" or "full") in a bundle's metrics.

    ``preflight_eval.train_utility`` stores ``{variant: {model label: {"rmse": ...}}}``
    with variant "plain" or "corrected" and labels such as "fast (no model call)"; the
    label's first word is the bundle's model name.
    """
    variant = metrics.get("corrected" if corrected else "plain")
    if not isinstance(variant, Mapping) and corrected:
        variant = metrics.get("plain")
    if not isinstance(variant, Mapping):
        return None
    for label, entry in variant.items():
        if str(label).split(" ", 1)[0] == model and isinstance(entry, Mapping):
            rmse = entry.get("rmse")
            if isinstance(rmse, (int, float)) and rmse >= 0:
                return float(rmse)
    return None


class Doorway(Protocol):
    """Everything the window asks of the application (see the module doc)."""

    settings: Settings
    org_policy: OrgPolicy          # the company policy (locked settings, send banner)

    def save_settings(self, settings: Settings) -> None: ...

    # detection (lane "detect")
    def warm_detector(self) -> list[str]: ...

    def detect(self, text: str) -> list[Span]: ...

    # policies (lane "dx" for d_X)
    def policies(self) -> list[tuple[str, str, bool]]: ...

    def policy(self, name: str | None = None) -> Policy: ...

    def save_policy(self, policy: Policy) -> None: ...

    def set_active_policy(self, name: str) -> None: ...

    def epsilon_range(self) -> tuple[float, float]: ...

    def prepare(self, policy: Policy, text: str, spans: Sequence[Span], seed: int) -> Any: ...

    def new_document(self, source: Path | None, text: str) -> None: ...

    def sanitize(self, policy: Policy, text: str, spans: Sequence[Span], seed: int
                 ) -> tuple[SanitizedText, Any]: ...

    # utility (fast on "pool", refined and recommend on "slm")
    def set_provider(self, provider: str | None) -> None:
        """The provider the predictions are for (each has its own refit on the flow)."""

    def predict_fast(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task | None = None) -> Prediction: ...

    def predict_refined(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                        task: Task, cancel: threading.Event) -> Prediction: ...

    def utility_curve(self, original: str, prepared: Any, spans: Sequence[Span],
                      epsilons: Sequence[float], cancel: threading.Event
                      ) -> list[tuple[float, float]]: ...

    def recommend(self, original: str, prepared: Any, spans: Sequence[Span], task: Task,
                  cancel: threading.Event, progress: Progress | None = None
                  ) -> Recommendation:
        """The most private ε that meets the minimum utility; ``progress`` hears about
        each ε evaluated."""

    # privacy (facts on "pool", the d_X attack on "attack", reconstruction on "slm"); the
    # results are the JSON-ready parts of preflight.app.privacy_report.privacy_report
    def privacy_facts(self, original: str, sanitized: SanitizedText, spans: Sequence[Span]
                      ) -> dict[str, Any]: ...

    def dx_attack(self, prepared: Any, epsilon: float, spans: Sequence[Span], curve: bool,
                  cancel: threading.Event) -> dict[str, Any]: ...

    def reconstruct(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                    cancel: threading.Event) -> dict[str, Any]: ...

    # send
    def provider_names(self) -> list[str]: ...

    def default_provider(self) -> str | None: ...

    def estimate(self, payload: str, task: Task, provider: str | None) -> CostEstimate: ...

    def prepare_send(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task, provider: str, prediction: Prediction | None,
                     vault: Any = None) -> Any: ...

    def confirmation_for(self, plan: Any, overrides: Sequence[str], resend_ok: bool
                         ) -> Any: ...

    def execute_send(self, plan: Any, confirmation: Any,
                     on_chunk: Callable[[AnswerChunk], None],
                     cancel: threading.Event) -> Any: ...

    def run_local(self, task: Task, text: str, on_token: Callable[[str], None],
                  cancel: threading.Event) -> Any: ...

    # keys
    def keyring_status(self) -> Any: ...

    def set_key(self, provider: ProviderSettings, key: str, remember: bool) -> str:
        """Store ``provider``'s key, bound to its address (scheme, host, port); returns
        where it went ("keyring" or "session")."""

    def key_source(self, provider: ProviderSettings) -> str:
        """Where the key of ``provider`` (saved or not yet) comes from, as a phrase."""

    def check_connection(self, provider: ProviderSettings) -> Any:
        """"Test connection": GET ``<base_url>/models`` with the key (never document
        text); a report with ``.message`` ("Connected — N models"), or a PreflightError."""

    # history
    def history(self) -> list[dict[str, Any]]: ...

    def export_history(self, path: Path) -> int: ...

    # models
    def model_status(self) -> list[Any]: ...

    def install_models(self, progress: Progress, cancel: threading.Event) -> list[Any]: ...

    def download_model(self, repo_id: str, filename: str, role: str, progress: Progress,
                       cancel: threading.Event) -> Path: ...

    def use_model(self, role: str, path: Path | None) -> None: ...

    # company deployment (lane "ops"; see preflight.app.ops_status)
    def utility_model_status(self) -> Any:
        """The utility model the window's provider uses (a :class:`UtilityModelStatus`:
        shipped, company, or the company's refused and why); may fetch the company's."""

    def central_audit_status(self) -> Any:
        """Start the central audit store's sync when the company policy names one and
        say how it stands (a :class:`CentralAuditStatus`; None: no central store)."""

    def company_limits(self) -> list[str]:
        """One line per user setting the company policy narrows (the allow-list and
        threshold for the types it protects, an assessor server it does not allow)."""

    def check_assessor(self, url: str, model: str) -> Any:
        """"Test" of a company assessor: GET ``<url>/v1/models`` (never document text);
        a report with ``.message``, or a PreflightError."""

    def shutdown(self) -> None: ...
