"""The window's doorway into the application (Qt-free): :class:`WindowDoorway`.

It implements :class:`preflight.app.doorway.Doorway` over the one composition root,
:func:`preflight.app.services.build_services`; every method is a thin adapter over the
core's API, so the window holds no business logic and the CLI gets the same results for
the same document and settings. Heavy objects are built lazily by the services, on first
use, inside background ops — never at window start.

The detector is the one thing the window holds differently: it lives in a child process
(:mod:`preflight.app.detect_process`, built there by the same services) so Presidio's
long GIL holds never freeze the window.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from preflight.app import ops_status, privacy_report
from preflight.app.doorway import AnswerChunk, Prediction, Progress, held_out_rmse
from preflight.app.presentation import calibration_text
from preflight.app.services import Services, build_services
from preflight.core.config import (
    ProviderSettings,
    SavedPolicy,
    Settings,
    load_settings,
    save_settings,
)
from preflight.core.errors import ConfigError, PreflightError
from preflight.core.org_policy import OrgPolicy
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.placeholder_memory import PlaceholderMemory
from preflight.core.sanitize.policy import PRESETS, Policy, policy_from_mapping
from preflight.core.send.cost import CostEstimate
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.curve import utility_curve
from preflight.core.utility.recommend import Recommendation, recommend

log = logging.getLogger(__name__)

class _TapRestorer:
    """The core's stream restorer that also reports the raw deltas (for the Raw tab)."""

    def __init__(self, vault: Any, on_raw: Callable[[str], None] | None) -> None:
        from preflight.core.sanitize.vault import StreamRestorer

        self._inner = StreamRestorer(vault) if vault is not None else None
        self._on_raw = on_raw

    def feed(self, chunk: str) -> str:
        if self._on_raw is not None:
            self._on_raw(chunk)
        return self._inner.feed(chunk) if self._inner is not None else chunk

    def flush(self) -> str:
        return self._inner.flush() if self._inner is not None else ""

    def notes(self) -> list[str]:
        return self._inner.notes() if self._inner is not None else []


class WindowDoorway:
    """The real :class:`~preflight.app.doorway.Doorway`. One instance per window."""

    def __init__(self, settings: Settings | None = None, *,
                 services: Services | None = None) -> None:
        self.services = services if services is not None else build_services(settings)
        self._lock = threading.RLock()
        self._detector: Any = None
        self._session: Any = None
        self._raw_sink: Callable[[str], None] | None = None
        self._shut = False
        self._provider: str | None = None   # the window's provider (its predictions)
        # The open document's placeholders stay the same across edits and sends (kept in
        # memory only: a pasted document has no name to key a file by).
        self._memory = PlaceholderMemory()

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def org_policy(self) -> OrgPolicy:
        return self.services.org_policy()

    def save_settings(self, settings: Settings) -> None:
        save_settings(settings)
        with self._lock:
            self.services.update_settings(settings)
            if self._detector is not None:
                self._detector.settings = settings      # deny/allow lists changed
            self._session = None

    # -- detection (lane "detect") -------------------------------------------------------
    def _detector_process(self) -> Any:
        with self._lock:
            if self._shut:
                raise PreflightError("Preflight is closing.", "Restart it to continue.")
            if self._detector is None:
                from preflight.app.detect_process import DetectorProcess

                self._detector = DetectorProcess(self.settings)
            return self._detector

    def warm_detector(self) -> list[str]:
        return self._detector_process().warm()

    def detect(self, text: str) -> list[Span]:
        if not text.strip():
            return []
        # edits re-analyze only the paragraphs they touched; the result equals a full
        # pass, and the send path re-scans in full (lane "send")
        return list(self._detector_process().detect_incremental(text))

    # -- policies (lane "dx" for d_X) ----------------------------------------------------
    def policies(self) -> list[tuple[str, str, bool]]:
        """(name, title, uses d_X) of every preset and saved policy, presets first."""
        out = [(p.name, p.title, p.uses_dx) for p in PRESETS.values()]
        return out + [(p.name, p.title, p.uses_dx) for p in self.services.saved_policies()
                      if p.name not in PRESETS]

    def policy(self, name: str | None = None) -> Policy:
        """The named policy (default: the active one in the settings)."""
        return self.services.policy(name)

    def save_policy(self, policy: Policy) -> None:
        """Store ``policy`` among the saved policies (replacing one of the same name)."""
        if policy.name in PRESETS:
            raise ConfigError(f"'{policy.name}' is the name of a built-in policy.",
                              "Choose another name for your policy.")
        row = saved_policy_row(policy)
        policy_from_mapping({k: v for k, v in asdict(row).items() if v is not None},
                            f"policy '{policy.name}'")      # refuses a bad name or key
        with self._lock:
            settings = copy.deepcopy(self.settings)
            settings.policy.saved = [s for s in settings.policy.saved
                                     if s.name != policy.name] + [row]
            self._store(settings)

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
        lo, hi = self.services.dx().epsilon_range
        pol = self.settings.policy
        lo = pol.epsilon_min if pol.epsilon_min else lo
        hi = pol.epsilon_max if pol.epsilon_max else hi
        lo, hi = self.org_policy.clamp_epsilon_range(lo, hi)    # the company's bounds win
        if not (0 < lo < hi):
            raise ConfigError("The ε bounds in the policy are invalid.",
                              "Open Settings → Policy and set 0 < minimum < maximum.")
        return float(lo), float(hi)

    def new_document(self, source: Path | None, text: str) -> None:
        """A document was opened: a file keeps the placeholders of its earlier sends (the
        same memory as the CLI's for that path); anything else starts afresh."""
        self._memory = (self.services.placeholder_memory(str(source), text)
                        if source is not None else PlaceholderMemory())

    def prepare(self, policy: Policy, text: str, spans: Sequence[Span], seed: int) -> Any:
        """A d_X policy prepared once for the slider (``at(ε)``, ``resample``, ``update``)."""
        return self.services.mechanism(policy, memory=self._memory).prepare(
            text, list(spans), SanitizeParams(seed=seed))

    def sanitize(self, policy: Policy, text: str, spans: Sequence[Span], seed: int
                 ) -> tuple[SanitizedText, Any]:
        return self.services.sanitize(policy, text, spans, SanitizeParams(seed=seed),
                                      memory=self._memory)

    # -- utility (fast on "pool", refined/recommend on "slm") ----------------------------
    def set_provider(self, provider: str | None) -> None:
        self._provider = provider

    def _assessor(self, task: Task) -> Any:
        """The assessor of the provider chosen in the window (its own refit, if any)."""
        return self.services.assessor(task, self._provider)

    def _prediction(self, assessment: Any, task: Task) -> Prediction:
        metrics = self._assessor(task).predictor.metrics
        model = "full" if assessment.predicted is not None else "fast"
        status = self.services.calibration_status(self._provider)
        where = self.services.assessor_place().label if model == "full" else ""
        return Prediction(assessment, held_out_rmse(metrics, model, assessment.corrected),
                          calibration_text(status), where)

    def predict_fast(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task | None = None) -> Prediction:
        task = task or SUMMARIZE
        a = self._assessor(task).fast(original, sanitized, list(spans))
        return self._prediction(a, task)

    def predict_refined(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                        task: Task, cancel: threading.Event) -> Prediction:
        a = self._assessor(task).refine(original, sanitized, list(spans),
                                                cancel=cancel)
        return self._prediction(a, task)

    def utility_curve(self, original: str, prepared: Any, spans: Sequence[Span],
                      epsilons: Sequence[float], cancel: threading.Event
                      ) -> list[tuple[float, float]]:
        # one place makes curves (non-decreasing in ε, with the band): core.utility.curve
        return utility_curve(self.services.assessor(SUMMARIZE), original, prepared,
                             epsilons, list(spans), cancel=cancel)

    def recommend(self, original: str, prepared: Any, spans: Sequence[Span], task: Task,
                  cancel: threading.Event, progress: Progress | None = None
                  ) -> Recommendation:
        lo, hi = self.epsilon_range()
        return recommend(original, prepared, self._assessor(task),
                         self.settings.policy.min_utility, spans=list(spans),
                         epsilon_min=lo, epsilon_max=hi, cancel=cancel, progress=progress)

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
                    cancel: threading.Event) -> dict[str, Any]:
        """The local model tries to restore the original (seconds to a minute)."""
        return privacy_report.reconstruction(self.services, original, sanitized,
                                             list(spans), cancel)

    # -- send ------------------------------------------------------------------------------
    def _send_session(self) -> Any:
        with self._lock:
            if self._session is None:
                self._session = self.services.send_session(
                    detector=self._detector_process(),
                    restorer_factory=lambda vault: _TapRestorer(vault, self._raw_sink))
            return self._session

    def provider_names(self) -> list[str]:
        return [p.name for p in self.settings.providers]

    def default_provider(self) -> str | None:
        names = self.provider_names()
        if self.settings.default_provider in names:
            return self.settings.default_provider
        return names[0] if names else None

    def estimate(self, payload: str, task: Task, provider: str | None) -> CostEstimate:
        if provider:   # counted on the exact request body this provider would receive
            return self._send_session().estimate(payload, task, provider)
        # No provider yet: the answer length is still the one the request will ask for.
        task = task.for_answer(self.settings.answer_max_tokens)
        counted = self.services.token_counter().count(task_payload_text(task, payload))
        return CostEstimate(counted.tokens, task.max_tokens, counted.method, 0.0, 0.0,
                            priced=False)

    def prepare_send(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task, provider: str, prediction: Prediction | None,
                     vault: Any = None) -> Any:
        """Lane "detect": the plan re-scans the payload with the (single-owner) detector.

        The window's seed is not passed: the text is already sanitized, and the seed is a
        secret (with it, pseudonyms and d_X noise could be reproduced), so it never
        reaches the plan or the audit log."""
        eps = (sanitized.info or {}).get("epsilon")
        return self._send_session().prepare_send(
            original, provider, sanitized.method, SanitizeParams(epsilon=eps), task,
            spans=list(spans), sanitized=sanitized, vault=vault, memory=self._memory,
            predicted_utility=prediction.value if prediction else None,
            features=prediction.features if prediction and prediction.features else None,
        )

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

    # -- keys ------------------------------------------------------------------------------
    def keyring_status(self) -> Any:
        from preflight.core.send.keys import keyring_status

        return keyring_status()

    def set_key(self, provider: ProviderSettings, key: str, remember: bool) -> str:
        """Store ``provider``'s key, bound to its address; returns where it went
        ("keyring" or "session")."""
        from preflight.core.send.keys import KeyStore, key_account

        if remember:
            KeyStore().set(key_account(provider), key, remember=True)
            return "keyring"
        self.services.session_keys().set(key_account(provider), key)
        return "session"

    def key_source(self, provider: ProviderSettings) -> str:
        from preflight.core.send.keys import KeyStore, resolve_key

        try:
            found = resolve_key(provider, KeyStore(), self.services.session_keys())
        except ConfigError:
            env = f" (the variable {provider.key_env} is empty)" if provider.key_env else ""
            return f"none set{env} — use “Set API key…”"
        return key_where(found.source)

    def check_connection(self, provider: ProviderSettings) -> Any:
        from preflight.core.send.keys import KeyStore, resolve_key
        from preflight.core.send.probe import check_connection, validate_base_url

        validate_base_url(provider)                     # before any key is looked up
        if not self.org_policy.provider_allowed(provider.base_url):
            raise ConfigError(f"The provider address {provider.base_url} is not allowed by "
                              "your organization's policy.",
                              "Ask your IT administrator to add it.")
        key = resolve_key(provider, KeyStore(), self.services.session_keys()).key
        return check_connection(provider, key)

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


def saved_policy_row(policy: Policy) -> SavedPolicy:
    """The settings row of a policy (the keys of a policy file)."""
    d = policy.describe()
    return SavedPolicy(name=policy.name, title=policy.title, description=policy.description,
                       dx=d["dx"], epsilon=policy.epsilon, fallback=d["fallback"],
                       categories=dict(d["by_category"]), types=dict(d["by_type"]))


def key_where(source: str) -> str:
    """A key source of :func:`preflight.core.send.keys.resolve_key` for people."""
    if source.startswith("env:"):
        return f"read from the environment variable {source[4:]}"
    return {"keyring": "stored in the OS keyring",
            "session": "kept in memory for this session (not saved)",
            "none (local server)": "none needed (a server on this computer)"}.get(source, source)


def task_payload_text(task: Task, payload: str) -> str:
    """The messages' text of a chat request for ``task`` (no provider chosen yet)."""
    return "\n".join(m["content"] for m in task.messages(payload))
