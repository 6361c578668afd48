"""The window's application layer (Qt-free): :class:`WindowDoorway`, one per window.

Everything the window asks of the application goes through this one class, over the one
composition root (:func:`preflight.app.services.build_services`). Each method is a thin
adapter over the core's API and the rules both faces share (:mod:`preflight.app.rules`),
so the window holds no business logic and the CLI gets the same results for the same
document and settings. Heavy objects are built lazily by the services, on first use,
inside background ops — never at window start. The window's tests drive this same class
over services whose heavy ports are fakes (:class:`~preflight.app.ports.Ports`).

Threading: each method is called from one lane only (see ``preflight.qt.qt_workers``):
detection and send planning on "detect", d_X on "dx", anything touching the local SLM on
"slm", the instant prediction on "pool"; the privacy figures: the cheap facts on "pool",
the attack on the d_X noise on "attack" (cancelled when the slider moves), the
reconstruction attack with the local SLM on "slm" (only when the user asks).

The detector is the one thing the window holds differently: it lives in a child process
(:mod:`preflight.app.detect_process`, built there by the same services) so Presidio's
long GIL holds never freeze the window. ``detector_host`` replaces that process (the
window's tests: a host in this process over the services' detector port).
"""

from __future__ import annotations

import copy
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from preflight.app import deny_list, ops_status, privacy_report, provider_keys, refinement, rules
from preflight.app.answer_stream import AnswerChunk, TapRestorer
from preflight.app.policy_rows import policy_choices, with_saved_policy
from preflight.app.prediction import Prediction, prediction_for
from preflight.app.services import Services, build_services
from preflight.core.config import ProviderSettings, Settings, load_settings, save_settings
from preflight.core.errors import PreflightError
from preflight.core.org_policy import OrgPolicy
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.placeholder_memory import PlaceholderMemory
from preflight.core.sanitize.policy import Action, Policy
from preflight.core.send.conversation import Conversation
from preflight.core.send.cost import CostEstimate
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.curve import utility_curve
from preflight.core.utility.recommend import Recommendation

Progress = Callable[[float, str], None]

log = logging.getLogger(__name__)


class WindowDoorway:
    """The application as one window sees it (see the module doc)."""

    def __init__(self, settings: Settings | None = None, *,
                 services: Services | None = None,
                 detector_host: Callable[[Settings], Any] | None = None) -> None:
        self.services = services if services is not None else build_services(settings)
        self._detector_host = detector_host
        self._lock = threading.RLock()
        self._detector: Any = None
        self._session: Any = None
        self._raw_sink: Callable[[str], None] | None = None
        self._shut = False
        self._provider: str | None = None   # the window's provider (its predictions)
        self._org: OrgPolicy | None = None
        # The open document's placeholders stay the same across edits and sends (in memory
        # only: a pasted document has no name to key a file by); its sends: one conversation
        self._memory = PlaceholderMemory()
        self.deny = deny_list.DenyListDoor(lambda: self.settings, self.save_settings,
                                           lambda: self._detector)
        self.conversation = Conversation()

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def org_policy(self) -> OrgPolicy:
        """The company policy in effect (read once: the window asks for it on its own
        thread, which must never wait for the services' lock while a model loads)."""
        if self._org is None:
            self._org = self.services.org_policy()
        return self._org

    def save_settings(self, settings: Settings) -> None:
        save_settings(settings)
        with self._lock:
            self.services.update_settings(settings)
            self.deny.retarget()                        # deny/allow lists changed
            self._session = None

    # -- detection (lane "detect") -------------------------------------------------------
    def _detector_process(self) -> Any:
        with self._lock:
            if self._shut:
                raise PreflightError("Preflight is closing.", "Restart it to continue.")
            if self._detector is None:
                host = self._detector_host
                if host is None:
                    from preflight.app.detect_process import DetectorProcess as host
                self._detector = host(self.deny.for_detection(self.settings))
            return self._detector

    def warm_detector(self) -> list[str]:
        return self._detector_process().warm()

    def detect(self, text: str, progress: Any = None, cancel: Any = None) -> list[Span]:
        """Edits re-analyze only the paragraphs they touched (the result equals a full
        pass); ``progress(share, words)`` and ``cancel`` reach the child's detector."""
        return list(self._detector_process().detect_incremental(
            text, progress=progress, cancel=cancel)) if text.strip() else []

    # -- policies (lane "dx" for d_X) ----------------------------------------------------
    def policies(self) -> list[tuple[str, str, bool]]:
        """(name, title, uses d_X) of every preset and saved policy, presets first."""
        return policy_choices(self.services)

    def policy(self, name: str | None = None) -> Policy:
        """The named policy (default: the active one in the settings)."""
        return self.services.policy(name)

    def save_policy(self, policy: Policy) -> None:
        """Store ``policy`` among the saved policies (replacing one of the same name)."""
        with self._lock:
            self._store(with_saved_policy(self.settings, policy))

    def set_active_policy(self, name: str) -> None:
        """Make ``name`` the policy new documents (and the CLI) start with."""
        self.services.policy(name)          # an unknown name fails here, with its hint
        with self._lock:
            settings = copy.deepcopy(self.settings)
            settings.policy.active = name
            self._store(settings)

    def _store(self, settings: Settings) -> None:
        save_settings(settings)
        self.services.update_settings(settings)

    def epsilon_range(self) -> tuple[float, float]:
        """The slider's range: :func:`preflight.app.rules.epsilon_range` (lane "dx")."""
        return rules.epsilon_range(self.services.dx().epsilon_range, self.settings,
                                   self.org_policy)

    def min_utility(self) -> float:
        """The minimum utility a send must reach (:func:`preflight.app.rules.min_utility`;
        cheap: the window asks on its own thread)."""
        return rules.min_utility(self.settings, self.org_policy)

    def with_actions(self, policy: Policy, changes: dict[str, Action]) -> Policy:
        """The legend: ``policy`` with ``changes`` for this document, within the company's
        locks (:func:`preflight.app.rules.modified_policy`)."""
        return rules.modified_policy(self.org_policy, policy, changes)

    def protect(self, policy: Policy, types: Sequence[str]) -> Policy:
        """"Protect these" (:func:`preflight.app.rules.protected`)."""
        return rules.protected(self.org_policy, policy, types)

    def new_document(self, source: Path | None, text: str) -> None:
        """A document was opened: a new conversation; a file keeps the placeholders of its
        earlier sends (the CLI's memory for that path), anything else starts afresh."""
        self._memory = (self.services.placeholder_memory(str(source), text)
                        if source is not None else PlaceholderMemory())
        self.deny.new_document()        # "this document only" values end with it
        self.conversation = Conversation()

    @property
    def document_memory(self) -> PlaceholderMemory:
        """The current document's placeholder numbering. A background step takes it when
        it is scheduled, so a step of the last document still running when a new one
        starts never numbers its values in the new document's memory."""
        return self._memory

    def prepare(self, policy: Policy, text: str, spans: Sequence[Span], seed: int,
                memory: PlaceholderMemory | None = None) -> Any:
        """A d_X policy prepared once for the slider (``at(ε)``, ``resample``, ``update``)."""
        memory = memory if memory is not None else self._memory
        return self.services.mechanism(policy, memory=memory).prepare(
            text, list(spans), SanitizeParams(seed=seed))

    def sanitize(self, policy: Policy, text: str, spans: Sequence[Span], seed: int,
                 memory: PlaceholderMemory | None = None) -> tuple[SanitizedText, Any]:
        memory = memory if memory is not None else self._memory
        return self.services.sanitize(policy, text, spans, SanitizeParams(seed=seed),
                                      memory=memory)

    # -- utility (fast on "pool", refined/recommend on "slm") ----------------------------
    def set_provider(self, provider: str | None) -> None:
        """The provider the predictions are for (each has its own refit on the flow)."""
        self._provider = provider

    def _assessor(self, task: Task) -> Any:
        """The assessor of the provider chosen in the window (its own refit, if any)."""
        return self.services.assessor(task, self._provider)

    def _prediction(self, original: str, assessment: Any, task: Task, note: str = "",
                    refines: bool = False) -> Prediction:
        return prediction_for(self.services, self._provider, self._assessor(
            task).predictor.metrics, original, task, assessment, note, refines)

    def predict_fast(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task | None = None) -> Prediction:
        """The instant prediction; where no refined one will follow (app.refinement), why."""
        assessor = self._assessor(task or SUMMARIZE)
        ok, why = refinement.expected(assessor.predictor.metrics, sanitized)
        a = assessor.fast(original, sanitized, list(spans))
        return self._prediction(original, a, task or SUMMARIZE, why, refines=ok)

    def predict_refined(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                        task: Task, cancel: threading.Event, vault: Any = None) -> Prediction:
        a, why = refinement.measure(self._assessor(task), original, sanitized, spans,
                                    cancel=cancel, vault=vault)    # the faces' rule
        if why:   # no refined value; the local model loads all the same, as it did for one:
            getattr(self.services.slm(), "load", lambda: None)()   # Keep local, re-identify
        return self._prediction(original, a, task, why)

    def utility_curve(self, original: str, prepared: Any, spans: Sequence[Span],
                      epsilons: Sequence[float], cancel: threading.Event) -> list:
        # one place makes curves (non-decreasing in ε, with the band): core.utility.curve
        return utility_curve(self.services.assessor(SUMMARIZE), original, prepared,
                             epsilons, list(spans), cancel=cancel)

    def recommend(self, original: str, prepared: Any, spans: Sequence[Span], task: Task,
                  cancel: threading.Event, progress: Progress | None = None
                  ) -> Recommendation:
        """The most private ε that meets the minimum utility (as `preflight recommend`)."""
        lo, hi = self.epsilon_range()
        return refinement.search(original, prepared, self._assessor(task),
                                 self.min_utility(), spans=list(spans), epsilon_min=lo,
                                 epsilon_max=hi, cancel=cancel, progress=progress)

    # -- privacy (facts on "pool", d_X attack on "attack", reconstruction on "slm") ------
    def privacy_facts(self, original: str, sanitized: SanitizedText, spans: Sequence[Span]
                      ) -> dict[str, Any]:
        """Quasi-identifiers left and the document's ε ledger (milliseconds)."""
        return privacy_report.privacy_facts(self.services, original, sanitized, list(spans))

    def dx_attack(self, prepared: Any, epsilon: float, spans: Sequence[Span], curve: bool,
                  cancel: threading.Event) -> dict[str, Any]:
        """The optimal attack on the d_X noise at ``epsilon`` (with ``curve``: over the ε
        grid too; seconds cold, under one warm)."""
        return privacy_report.dx_attack(self.services, prepared, epsilon, list(spans),
                                        curve=curve, cancel=cancel)

    def reconstruct(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                    cancel: threading.Event, progress: Callable | None = None) -> dict[str, Any]:
        """The local model tries to restore the original (progress per step; cancellable)."""
        return privacy_report.reconstruction(self.services, original, sanitized,
                                             list(spans), cancel, progress)

    # -- send ------------------------------------------------------------------------------
    def _send_session(self) -> Any:
        with self._lock:
            if self._session is None:
                self._session = self.services.send_session(
                    detector=self._detector_process(),
                    restorer_factory=lambda vault: TapRestorer(vault, self._raw_sink))
            return self._session

    def provider_names(self) -> list[str]:
        return [p.name for p in self.settings.providers]

    def default_provider(self) -> str | None:
        return rules.default_provider(self.settings)

    def estimate(self, payload: str, task: Task, provider: str | None) -> CostEstimate:
        task = self.conversation.follow(task)     # a follow-up carries the earlier turns
        if provider:   # counted on the exact request body this provider would receive
            return self._send_session().estimate(payload, task, provider)
        # No provider yet: the answer length is still the one the request will ask for.
        task = task.for_answer(self.settings.answer_max_tokens)
        text = "\n".join(m["content"] for m in task.messages(payload))   # the messages
        counted = self.services.token_counter().count(text)
        return CostEstimate(counted.tokens, task.max_tokens, counted.method, 0.0, 0.0,
                            priced=False)

    def prepare_send(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task, provider: str, prediction: Prediction | None,
                     vault: Any = None) -> Any:
        """Lane "detect": the plan re-scans the payload with the (single-owner) detector.

        The window's seed is not passed: the text is already sanitized, and the seed is a
        secret (with it, pseudonyms and d_X noise could be reproduced), so it never
        reaches the plan or the audit log."""
        feats = prediction.features if prediction and prediction.features else None
        return self._send_session().prepare_send(
            original, provider, sanitized.method, SanitizeParams(epsilon=sanitized.epsilon),
            task, spans=list(spans), sanitized=sanitized, vault=vault, memory=self._memory,
            conversation=self.conversation, features=feats,
            predicted_utility=prediction.value if prediction else None)

    def confirmation_for(self, plan: Any, overrides: Sequence[str], resend_ok: bool) -> Any:
        from preflight.core.send.session import Confirmation
        return Confirmation(confirmed=True, overrides=frozenset(overrides),
                            resend_acknowledged=resend_ok)

    def execute_send(self, plan: Any, confirmation: Any,
                     on_chunk: Callable[[AnswerChunk], None], cancel: threading.Event) -> Any:
        raw: list[str] = []

        def on_restored(text: str) -> None:
            on_chunk(AnswerChunk(text, "".join(raw)))
            raw.clear()

        self._raw_sink = raw.append
        try:
            result = self._send_session().execute(plan, confirmation, on_chunk=on_restored,
                                            cancel=cancel)
        finally:
            self._raw_sink = None
        if raw:
            on_chunk(AnswerChunk("", "".join(raw)))
        return result

    # -- local answer (lane "slm") -------------------------------------------------------
    def run_local(self, task: Task, text: str, on_token: Callable[[str], None],
                  cancel: threading.Event) -> Any:
        return self._send_session().keep_local(text, task, on_token=on_token, cancel=cancel)

    # -- keys (see preflight.app.provider_keys) ---------------------------------------------
    def keyring_status(self) -> Any:
        return provider_keys.keyring_status()

    def set_key(self, provider: ProviderSettings, key: str, remember: bool) -> str:
        """Store ``provider``'s key, bound to its address; returns "keyring" or "session"."""
        return provider_keys.set_key(self.services, provider, key, remember)

    def headers_as_sent(self, plan: Any) -> list[tuple[str, str]]:
        """The confirmation's headers: as they will leave (the key's value never shown)."""
        return provider_keys.headers_as_sent(self.services, plan.provider, plan.request)

    def key_source(self, provider: ProviderSettings) -> str:
        """Where the key of ``provider`` (saved or not yet) comes from, as a phrase."""
        return provider_keys.key_source(self.services, provider)

    def check_connection(self, provider: ProviderSettings) -> Any:
        """"Test connection": GET ``<base_url>/models`` with the key (never document
        text); a report with ``.message`` ("Connected — N models"), or a PreflightError."""
        return provider_keys.check_connection(self.services, provider)

    # -- history ---------------------------------------------------------------------------
    def history(self) -> list[dict[str, Any]]:
        return list(reversed(self.services.audit().records()))

    def export_history(self, path: Path) -> int:
        # the save dialog has already asked before replacing an existing file
        return self.services.audit().export(path, overwrite=True)

    # -- models ----------------------------------------------------------------------------
    def model_status(self) -> list[Any]:
        return list(self.services.models.status())

    def install_models(self, progress: Progress, cancel: threading.Event) -> list[Any]:
        """The default models plus the assessor SLM chosen in the settings."""
        models = self.services.models
        roles = [s.role for s in models.manifest.models if not s.optional]
        roles += [r for r in (self.settings.assessor_slm,) if r not in roles]
        return models.install(roles=roles, progress=progress, cancel=cancel)

    def download_model(self, repo_id: str, filename: str, role: str, progress: Progress,
                       cancel: threading.Event) -> Path:
        return self.services.models.download(repo_id, filename, role, progress=progress,
                                             cancel=cancel)

    def use_model(self, role: str, path: Path | None) -> None:
        self.services.models.use(role, path)
        with self._lock:
            self.services.update_settings(load_settings())
            self._session = None

    # -- company deployment (lane "ops") ----------------------------------------------------
    def utility_model_status(self) -> Any:
        return ops_status.utility_model_status(self.services, self._provider)

    def central_audit_status(self) -> Any:
        return ops_status.central_audit_status(self.services)

    def company_limits(self) -> list[str]:
        from preflight.app.company_limits import limits_on_settings

        return limits_on_settings(self.org_policy, self.settings)

    def check_assessor(self, url: str, model: str) -> Any:
        return ops_status.check_assessor(url, model)

    def shutdown(self) -> None:
        """End the detector's child process (an op waiting on it fails at once), then
        free the models; nothing starts a new child afterwards."""
        with self._lock:
            self._shut = True
            det = self._detector
        if det is not None:
            det.shutdown()
        self.services.close()
