"""The composition root: the ONE place that builds the runtime objects.

Size (~520 lines): one method per object it builds, all under one lock and one settings
snapshot; split by topic, "the one place" would become several.

:func:`build_services` turns the user's :class:`~preflight.core.config.Settings` into a
:class:`Services` holder that both faces (the CLI commands and the window's doorway) ask
for everything they use. Each core object receives its collaborators explicitly through
its constructor — the core never looks a runtime service up itself (see
``docs/ARCHITECTURE.md``).

Everything heavy is built on first use, once, under a lock (thread-safe: the window asks
from several worker lanes). Objects that other objects hold but may never call — the SLM
and the sentence embedder inside a send session, the token space inside the d_X
mechanism of a send — are handed over as :class:`Deferred` proxies, so building a session
loads no model and a missing model fails only the step that needs it, with the model
manager's message.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import asdict, replace
from typing import Any, Callable, Sequence

from preflight.app.ports import Deferred, Ports, SlmChoice
from preflight.core.config import ASSESSOR_SLMS, DetectionSettings, Settings
from preflight.core.errors import ModelUnavailableError
from preflight.core.sanitize.base import SanitizeParams, create_mechanism, mechanism_names
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span

log = logging.getLogger(__name__)

#: Collaborators each mechanism's factory takes (the registry passes them through).
_SPACE_MECHANISMS = frozenset({"dx"})

__all__ = ["Deferred", "Ports", "Services", "SlmChoice", "build_services"]


class Services:
    """Lazily built runtime objects for one settings snapshot (see the module doc);
    ``ports`` replaces heavy backends (tests: fakes; the product: none)."""

    def __init__(self, settings: Settings, ports: Ports | None = None) -> None:
        self.settings = settings
        self.ports = ports if ports is not None else Ports()
        self._lock = threading.RLock()
        self._built: dict[str, Any] = {}
        self._assessors: dict[str, Any] = {}

    def update_settings(self, settings: Settings) -> None:
        """Follow a settings change: drop what depends on the changed parts (a changed
        model path reloads the models; detection and policy changes only the detector)."""
        with self._lock:
            old, self.settings = self.settings, settings
            drop = {"models", "detector", "slm_choice"}
            if old.model_paths != settings.model_paths:
                drop |= {"slm", "embedder", "token_space", "dx", "dx_attack", "token_counter"}
                self._assessors.clear()
            if old.assessor_slm != settings.assessor_slm:
                drop.add("slm")               # the d_X space stays: it has its own role
                self._assessors.clear()
            if old.assessor_endpoint != settings.assessor_endpoint:
                self._assessors.clear()
            if not self._assessors:           # the assessors' models go with them
                drop.add("assessor_models")
            for key in drop & set(self._built):
                obj = self._built.pop(key)
                if key == "slm" and hasattr(obj, "close"):
                    obj.close()

    def release(self, *names: str) -> None:
        """Drop built objects (e.g. "detector", "dx", "token_space") so their memory can
        be freed; a later request builds them again. One-shot commands use this to keep
        the peak down (`preflight assess` needs no detector or d_X geometry once the
        document is sanitized)."""
        with self._lock:
            for key in names:
                obj = self._built.pop(key, None)
                if key == "slm" and hasattr(obj, "close"):
                    obj.close()
        from preflight.runtime.heap import return_freed_memory

        return_freed_memory()

    def _once(self, key: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._built:
                self._built[key] = build()
            return self._built[key]

    # -- models ------------------------------------------------------------------------
    @property
    def models(self) -> Any:
        """The :class:`ModelManager`: the core's :class:`~preflight.core.ports.ModelLocator`."""
        def build() -> Any:
            if self.ports.models is not None:
                return self.ports.models(self.settings)
            from preflight.runtime.models import ModelManager

            return ModelManager(settings=self.settings)
        return self._once("models", build)

    def slm_choice(self) -> SlmChoice:
        """The assessor's SLM: the role chosen in the settings (``assessor_slm``) when
        usable, else the first usable one of :data:`ASSESSOR_SLMS` with a warning that
        says why and what to do; the chosen one's error when none is usable."""
        def build() -> SlmChoice:
            chosen = self.settings.assessor_slm
            models = self.models
            try:
                models.path(chosen)
                return SlmChoice(chosen, models.spec(chosen).name)
            except ModelUnavailableError as err:
                for other in (r for r in ASSESSOR_SLMS if r != chosen):
                    try:
                        models.path(other)
                    except ModelUnavailableError:
                        continue
                    warning = (f"The chosen local model ({models.spec(chosen).name}) is not "
                               f"usable: {err.message} Using {models.spec(other).name} "
                               f"instead. {err.hint}")
                    log.warning("%s", warning)
                    return SlmChoice(other, models.spec(other).name, warning)
                raise
        return self._once("slm_choice", build)

    def slm(self) -> Any:
        """The assessor's local SLM (one owner thread inside; shared by everything)."""
        def build() -> Any:
            if self.ports.slm is not None:
                return self.ports.slm()
            from preflight.runtime.slm import LocalSLM

            role = self.slm_choice().role
            return LocalSLM(model_path=self.models.path(role),
                            system_prompt=self.models.spec(role).system_prompt or None)
        return self._once("slm", build)

    def embedder(self) -> Any:
        def build() -> Any:
            if self.ports.embedder is not None:
                return self.ports.embedder()
            from preflight.runtime.embedder import SentenceEmbedder, shared_process_torch_threads
            from preflight.runtime.llama_open import built_with_openmp

            # the local SLM (llama.cpp) runs in this process: torch keeps its threads
            # unless that llama.cpp shares libgomp with it
            threads = shared_process_torch_threads(built_with_openmp())
            return SentenceEmbedder(model_dir=self.models.path("similarity"),
                                    torch_threads=threads)
        return self._once("embedder", build)

    def scope(self) -> Any:
        """What the utility prediction was measured on (a core ``MeasuredScope``; None
        when the install ships none: nothing is said about scope then)."""
        def build() -> Any:
            from preflight.core.utility.scope import MeasuredScope

            return MeasuredScope.load()
        return self._once("scope", build)

    def token_space(self) -> Any:
        """The token embeddings d_X perturbs in: the ``dx_space`` role, whatever SLM the
        assessor uses (the space, its calibration and caches never follow that choice)."""
        def build() -> Any:
            if self.ports.token_space is not None:
                return self.ports.token_space()
            from preflight.runtime.manifest import DX_SPACE_ROLE
            from preflight.runtime.token_space import GGUFTokenSpace

            models = self.models
            return GGUFTokenSpace(models.path(DX_SPACE_ROLE), hash_cache=models.hash_cache)
        return self._once("token_space", build)

    def ner_model_path(self) -> Any:
        """The spaCy model folder; when unusable, the pinned place (the detector then
        runs its pattern recognizers only and says why in its warnings)."""
        try:
            return self.models.path("ner")
        except ModelUnavailableError as err:
            log.warning("NER model unavailable: %s", err.message)
            return self.models.target("ner")

    # -- detection ---------------------------------------------------------------------
    def make_detector(self, detection: DetectionSettings | None = None) -> Any:
        """A fresh :class:`PiiDetector` with the user's detection settings (deny-list,
        allow-list, threshold) under the company's floor: the types the company protects
        ignore the allow-list and a threshold above its maximum
        (:meth:`OrgPolicy.detection_floor`). Not thread-safe to share: one owner each."""
        detection = detection if detection is not None else self.settings.detection
        floor = self.org_file_policy().detection_floor()
        if self.ports.detector is not None:
            return self.ports.detector(detection, floor)
        from preflight.core.pii.detector import PiiDetector

        # the product's detectors read long texts' NER on a second core (ner_process.py);
        # with one core a helper process would only add its memory and its load time
        return PiiDetector(detection, nlp_model_path=self.ner_model_path(), floor=floor,
                           ner_process=(os.cpu_count() or 1) >= 2)

    def detector(self) -> Any:
        """The process-wide detector for this settings snapshot."""
        return self._once("detector", self.make_detector)

    # -- policies and mechanisms ---------------------------------------------------------
    def method_names(self) -> list[str]:
        return mechanism_names()

    def saved_policies(self) -> list[Any]:
        """The user's named policies from the settings (a broken one names itself)."""
        from preflight.core.sanitize.policy import policy_from_mapping

        out = []
        for i, saved in enumerate(self.settings.policy.saved):
            data = {k: v for k, v in asdict(saved).items() if v is not None}
            out.append(policy_from_mapping(
                data, f"settings: policy.saved[{i}] ('{saved.name}')"))
        return out

    def policy_names(self) -> list[str]:
        from preflight.core.sanitize.policy import policy_names

        return policy_names(self.saved_policies())

    def policy(self, name: str | None = None) -> Any:
        """The policy ``name`` (a preset, a saved policy or a TOML file; default: the
        active one in the settings, else the company's default) as it applies on this
        machine: a preset is raised to the company minimums (and says what was raised);
        a policy the user wrote that goes below them is refused with a one-line message."""
        from preflight.core.sanitize.policy import DEFAULT_POLICY, find_policy

        org = self.org_policy()
        active = self.settings.policy.active or DEFAULT_POLICY
        if active == DEFAULT_POLICY and org.default_policy:
            active = org.default_policy
        policy = find_policy(name or active, self.saved_policies())
        if policy.source != "preset":
            org.check_policy(policy)
            return policy
        report = org.tighten_report(policy)
        return replace(report.policy, raised=dict(report.raised)) if report.raised else policy

    def mechanism(self, name: Any, **collaborators: Any) -> Any:
        """A fresh mechanism: the raw d_X mechanism for "dx", else a policy's (``name``
        is a policy name, a policy file or a :class:`Policy`) with what it needs."""
        if isinstance(name, str) and name in _SPACE_MECHANISMS:
            collaborators.setdefault("space", Deferred(self.token_space, "token space"))
            return create_mechanism(name, **collaborators)
        from preflight.core.sanitize.policy import Policy
        from preflight.core.sanitize.policy_apply import PolicyMechanism

        policy = name if isinstance(name, Policy) else self.policy(name)
        return PolicyMechanism(policy, dx=Deferred(self.dx, "d_X mechanism"), **collaborators)

    def dx(self) -> Any:
        """The shared d_X mechanism (it memoizes per-space geometry across documents)."""
        return self._once("dx", lambda: self.mechanism("dx"))

    def dx_attack(self) -> Any:
        """The optimal context-free attack on the shared d_X mechanism's output
        (:class:`~preflight.core.privacy.dx_attack.DxAttack`; ``.run(prepared, ε)``), with
        the committed public-corpus prior; it memoizes its Monte Carlo paths."""
        def build() -> Any:
            from preflight.core.privacy.dx_attack import DxAttack
            from preflight.core.privacy.dx_prior import load_prior

            mech = self.dx()
            prior = self.ports.attack_prior or load_prior
            return DxAttack(mech, prior(mech.space))
        return self._once("dx_attack", build)

    def sanitize(self, policy: Any, text: str, spans: Sequence[Span],
                 params: SanitizeParams = SanitizeParams(), *, memory: Any = None
                 ) -> tuple[SanitizedText, Any]:
        """Sanitize under ``policy`` with a fresh mechanism (one vault per document);
        returns ``(sanitized, vault or None)``. ``memory`` (the document's
        :class:`PlaceholderMemory`) keeps its placeholders and pseudonyms stable across
        sends and edits; it is saved once the text is sanitized."""
        mech = self.mechanism(policy, **({"memory": memory} if memory is not None else {}))
        out = mech.sanitize(text, list(spans), params)
        if memory is not None:
            memory.save()
        return out, mech.vault if getattr(mech, "reversible", False) else None

    @staticmethod
    def placeholder_memory(source: Any, text: str) -> Any:
        """The placeholder memory of a document read from ``source`` ("-": stdin). The
        faces skip it when the user passes a seed: then the seed alone decides, so the
        same seed reproduces the same output."""
        from preflight.core.sanitize.placeholder_memory import PlaceholderMemory, \
            document_identity

        return PlaceholderMemory.open(document_identity(None if source == "-" else source,
                                                        text))

    # -- utility -----------------------------------------------------------------------
    def flow_learner(self) -> Any:
        """The learning-on-the-flow store (pairs and refits per provider) of the assessor's
        SLM: each SLM's features differ, so each has its own prior, pairs and refits."""
        from preflight.core.utility.flow import FlowLearner

        role = self.assessor_slm_role()
        return self._once(f"flow:{role}", lambda: FlowLearner(slm_role=role))

    def assessor_slm_role(self) -> str:
        """The role of the SLM the assessor uses (the chosen one, or the default it falls
        back to); the chosen one when no local SLM is usable at all (a company-hosted
        assessor may still answer)."""
        try:
            return self.slm_choice().role
        except ModelUnavailableError:
            return self.settings.assessor_slm

    def provider_key(self, provider: str | None = None) -> Any:
        """(name, model) of ``provider`` (default: the default provider), or None."""
        from preflight.app.rules import default_provider
        from preflight.core.utility.flow import ProviderKey

        name = provider or default_provider(self.settings)
        for p in self.settings.providers:
            if p.name == name:
                return ProviderKey(p.name, p.model)
        return None

    def predictor(self, provider: str | None = None) -> Any:
        """The utility predictor for ``provider`` (default: the default provider): its
        refit on the user's sends when present and readable, else the shipped one."""
        from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

        key, flow = self.provider_key(provider), self.flow_learner()
        found = flow.predictor_for(key)
        if found is None or found is flow.prior:     # no refit of the user's own
            found = self.company_predictor(key) or found
        # None: the shipped bundle is unusable; loading it again raises the reason.
        return found if found is not None else UtilityPredictor.load(
            shipped_bundle_path(self.assessor_slm_role()))

    def company_predictor(self, key: Any = None) -> Any:
        """The company-trained model the policy distributes for ``key``'s provider (None:
        none named, or refused: see :attr:`company_model_problem`)."""
        spec = self.org_policy().utility_model
        if spec is None or not spec.applies_to(key and key.provider, key and key.model):
            return None
        from preflight.runtime.company_model import company_predictor

        return self._once("company_model", lambda: company_predictor(spec))[0]

    @property
    def company_model_problem(self) -> str | None:
        """Why the company's utility model was refused (the shipped model serves)."""
        return (self._built.get("company_model") or (None, None))[1]

    def calibration_status(self, provider: str | None = None) -> Any:
        """How far ``provider``'s predictions are fitted to the user's own sends."""
        return self.flow_learner().status(self.provider_key(provider))

    def assessor(self, task: Task = SUMMARIZE, provider: str | None = None) -> Any:
        """One :class:`UtilityAssessor` per task and provider, all sharing the SLM and the
        embedder; each uses its provider's predictor (a new one after every refit)."""
        from preflight.core.utility.assess import UtilityAssessor

        predictor = self.predictor(provider)
        pkey = self.provider_key(provider)
        key = "\0".join((task.kind, task.question, task.note, pkey.slug if pkey else ""))
        with self._lock:
            old = self._assessors.get(key)
            if old is None or old.predictor is not predictor:
                models = self.assessor_models()
                self._assessors[key] = UtilityAssessor(
                    slm=models.slm, original_slm=models.original,
                    embedder=Deferred(self.embedder, "sentence embedder"),
                    predictor=predictor, task=task)
            return self._assessors[key]

    def assessor_models(self) -> Any:
        """The assessor's models: the company-hosted assessor (policy, else settings)
        with the in-process SLM behind it, or the in-process SLM alone
        (:class:`~preflight.app.company_assessor.AssessorModels`)."""
        from preflight.app.company_assessor import build_assessor_models

        return self._once("assessor_models", lambda: build_assessor_models(self))

    def assessor_place(self) -> Any:
        """Where the latest assessment ran (an :class:`AssessorPlace`; see its label)."""
        return self.assessor_models().place()

    # -- send --------------------------------------------------------------------------
    def token_counter(self) -> Any:
        def build() -> Any:
            from preflight.core.send.cost import TokenCounter

            if self.ports.tokenizer is not None:
                return TokenCounter(self.ports.tokenizer())
            from preflight.runtime.tokenizer import LlamaTokenizer

            try:
                return TokenCounter(LlamaTokenizer(self.models.path("slm")))
            except ModelUnavailableError:
                return TokenCounter(None)   # the documented chars/4 estimate
        return self._once("token_counter", build)

    def audit(self) -> Any:
        """The local audit log (each write also moves its head in the log's outside
        record, :mod:`~preflight.core.send.audit_anchor`); with a central store in the
        company policy, each write wakes :meth:`audit_sync`."""
        def build() -> Any:
            from preflight.core.send.audit import AuditLog

            job = self.audit_sync()
            return AuditLog(on_change=job.wake if job is not None else None)
        return self._once("audit", build)

    def audit_sink(self) -> Any:
        """A fresh PostgreSQL sink for the policy's central store (None: none named)."""
        central = self.org_policy().central_audit
        if central is None:
            return None
        if self.ports.audit_sink is not None:
            return self.ports.audit_sink(central)
        from preflight.core.send.audit_sync import central_password
        from preflight.core.send.keys import KeyStore
        from preflight.runtime.audit_pg import PgAuditSink

        return PgAuditSink(central, lambda: central_password(central, KeyStore()))

    def audit_sync(self) -> Any:
        """The one background job copying the log to the central store (None: no store);
        it flushes once more when the process exits (at most a few seconds)."""
        def build() -> Any:
            sink = self.audit_sink()
            if sink is None:
                return None
            import atexit

            from preflight.core.send.audit_sync import AuditSyncJob, sync_log

            job = AuditSyncJob(lambda deadline: sync_log(
                self.audit(), sink, deadline=deadline, learning=self.shared_learning()))
            atexit.register(job.close)
            return job
        return self._once("audit_sync", build)

    def shared_learning(self) -> Any:
        """The flow store whose learning pairs the sync also shares (None: the company
        policy does not say ``share_learning_pairs = true``)."""
        return self.flow_learner() if self.org_policy().share_learning_pairs else None

    def session_keys(self) -> Any:
        from preflight.core.send.keys import SessionKeyStore

        return self._once("session_keys", SessionKeyStore)

    def send_session(self, *, detector: Any = None,
                     restorer_factory: Callable[[Any], Any] | None = None) -> Any:
        """A :class:`SendSession` over these services (``detector`` overrides the shared
        one: the window's lives in a child process). A send that names no provider goes
        to :func:`~preflight.app.rules.default_provider`'s, as the window's does."""
        from preflight.app.rules import default_provider
        from preflight.core.send.session import SendSession

        extra = {"restorer_factory": restorer_factory} if restorer_factory else {}
        return SendSession(
            replace(self.settings, default_provider=default_provider(self.settings)),
            detector=detector if detector is not None else Deferred(self.detector,
                                                                    "detector"),
            audit=self.audit(), session_keys=self.session_keys(),
            token_counter=self.token_counter(),
            embedder=Deferred(self.embedder, "sentence embedder"),
            slm=Deferred(self.slm, "local SLM"), mechanism_factory=self.mechanism,
            flow=self.flow_learner(), org_policy=self.org_policy(), **extra)

    def close(self) -> None:
        """Free the models and files this holder opened (best effort, at exit)."""
        with self._lock:
            built = dict(self._built)
        job = built.get("audit_sync")
        if job is not None:
            job.close()
        for key in ("slm", "audit"):
            obj = built.get(key)
            if obj is not None and hasattr(obj, "close"):
                try:
                    obj.close()
                except Exception:  # noqa: BLE001 - best effort at exit
                    log.debug("closing %s failed", key, exc_info=True)

    # -- company policy ----------------------------------------------------------------
    def org_file_policy(self) -> Any:
        """The company policy file as read (:class:`~preflight.core.org_policy.OrgPolicy`),
        once per process; a broken file gives a policy that refuses every send."""
        from preflight.core.org_policy import load_org_policy

        return self._once("org_file_policy", load_org_policy)

    def org_policy(self) -> Any:
        """The company policy in effect: the file's, refusing every send while the audit
        log its rules read is not the one this computer wrote
        (:func:`~preflight.core.send.audit_presence.check_presence`)."""
        def build() -> Any:
            from preflight.core.send.audit_presence import check_presence

            return check_presence(self.org_file_policy())
        return self._once("org_policy", build)


def build_services(settings: Settings | None = None, *,
                   detection: DetectionSettings | None = None,
                   ports: Ports | None = None) -> Services:
    """The services both faces use. ``settings`` defaults to the user's saved settings;
    ``detection`` replaces their detection part (the CLI's per-run --deny/--allow);
    ``ports`` replaces heavy backends (see :class:`~preflight.app.ports.Ports`)."""
    if settings is None:
        from preflight.core.config import load_settings

        settings = load_settings()
    if detection is not None:
        settings = replace(settings, detection=detection)
    return Services(settings, ports)
