"""The send path as two UI-free steps the faces drive.

1. :meth:`SendSession.prepare_send` sanitizes (or takes an already sanitized text), builds
   the exact request, counts its tokens, estimates the cost, re-scans every string of the
   payload with the detector and checks the per-document ledger. The result is a
   :class:`SendPlan`: everything the user must see before deciding (:mod:`.plan`).
2. :meth:`SendSession.execute` sends the plan only with a :class:`Confirmation` that
   covers every blocking finding (a degraded detector included) and any earlier send of
   the same document (:mod:`.execute`), checks the answer against the document with the
   session's detector (:mod:`.answer_review`), then hands the realized utility — the
   similarity discounted by what the check flagged — to the flow learner
   (:mod:`.learning`; when that fails the record is marked pending and
   :meth:`flush_pending_learning` retries later — the answer never waits for learning).

:meth:`SendSession.keep_local` is the alternative: the local SLM answers on the original,
nothing leaves the machine (:mod:`.local`); its answer is checked the same way.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable, Sequence

from preflight.core.config import ProviderSettings, Settings, load_settings
from preflight.core.errors import ConfigError, ProviderError
from preflight.core.org_policy import OrgPolicy, load_org_policy
from preflight.core.ports import Detector, Embedder, LanguageModel, Tokenizer
from preflight.core.privacy.ledger import EpsilonLedger, ledger_for, send_epsilon
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.send import logfilter, transport
from preflight.core.send.answer_review import review_answer
from preflight.core.send.audit import AuditLog, AuditWriteError, Fingerprint, PriorSend
from preflight.core.send.cost import (
    CostEstimate, TokenCounter, count_request_tokens, estimate_cost,
)
from preflight.core.send.execute import SendResult, default_restorer, send_plan
from preflight.core.send.keys import KeyStore, SessionKeyStore, resolve_key
from preflight.core.send.learning import FlowRecorder
from preflight.core.send.local import LocalResult, answer_locally
from preflight.core.send.conversation import Conversation
from preflight.core.send.plan import (
    BLOCKING_CATEGORIES, DEGRADED_DETECTOR_ID, Confirmation, Finding, SendBlocked, SendPlan,
    check_confirmation, check_resend, fast_features, finding_id,
)
from preflight.core.send.request_scope import protect_request
from preflight.core.send.rescan import rescan
from preflight.core.send.providers import ProviderClient, StreamBroken, create_client
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span


class SendSession:
    """Prepares and executes sends. Every collaborator comes in through the constructor.

    Args:
        settings: user settings (None: loaded from the settings file).
        detector: the PII detector (:class:`~preflight.core.ports.Detector`); None builds
            the core's PiiDetector with the user's detection settings on first use.
        audit: the audit log; None opens the default one on first use.
        keystore / session_keys: where API keys come from (OS keyring / this run only).
        tokenizer: a :class:`~preflight.core.ports.Tokenizer` for token counts; None
            counts with the chars/4 estimate (and says so).
        token_counter: a ready counter (overrides ``tokenizer``; tests pass fakes).
        embedder: the :class:`~preflight.core.ports.Embedder` for the realized utility;
            None leaves learning pending.
        flow: the flow learner (``record(features, realized, meta)``); None builds the
            core's FlowLearner when first needed.
        slm: the local :class:`~preflight.core.ports.LanguageModel` for keep-local; None
            makes :meth:`keep_local` explain that no local model is available.
        client_factory: ProviderSettings → ProviderClient (tests wrap the real one).
        restorer_factory: vault → object with ``feed(chunk)``/``flush()``.
        mechanism_factory: builds a mechanism by name with collaborators (the
            composition root's, which adds the d_X token space); default
            :func:`create_mechanism`.
        environ: environment for ``key_env`` lookups (None: ``os.environ``).
        org_policy: the company policy (None: read from its file); a broken one refuses
            every send, and its provider allow-list, ε bounds and override/resend rules
            are checked when a plan is made and again before it is sent.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        detector: Detector | None = None,
        audit: AuditLog | None = None,
        keystore: KeyStore | None = None,
        session_keys: SessionKeyStore | None = None,
        tokenizer: Tokenizer | None = None,
        token_counter: TokenCounter | None = None,
        embedder: Embedder | None = None,
        flow: Any = None,
        slm: LanguageModel | None = None,
        client_factory: Callable[[ProviderSettings], ProviderClient] = create_client,
        restorer_factory: Callable[[Any], Any] = default_restorer,
        mechanism_factory: Callable[..., Any] = create_mechanism,
        environ: dict[str, str] | None = None,
        org_policy: OrgPolicy | None = None,
    ) -> None:
        logfilter.install()
        self.settings = settings if settings is not None else load_settings()
        self._detector = detector
        self._audit = audit
        self.keystore = keystore if keystore is not None else KeyStore()
        self.session_keys = session_keys if session_keys is not None else SessionKeyStore()
        self.token_counter = token_counter if token_counter is not None else TokenCounter(
            tokenizer)
        self._embedder = embedder
        self._flow = flow
        self._learner: FlowRecorder | None = None
        self._slm = slm
        self._client_factory = client_factory
        self._restorer_factory = restorer_factory
        self._mechanism_factory = mechanism_factory
        self._environ = environ
        self.org_policy = org_policy if org_policy is not None else load_org_policy()
        self._lock = threading.Lock()

    # -- collaborators built on first use --

    @property
    def detector(self) -> Detector:
        if self._detector is None:
            from preflight.core.pii.detector import PiiDetector

            self._detector = _build_detector(PiiDetector, self.settings)
        return self._detector

    @property
    def audit(self) -> AuditLog:
        if self._audit is None:
            self._audit = AuditLog()
        return self._audit

    @property
    def learner(self) -> FlowRecorder:
        if self._learner is None:
            self._learner = FlowRecorder(
                self.audit, self._embedder, self._flow,
                checker=lambda original, answer: review_answer(original, answer,
                                                               self.detector)[0])
        return self._learner

    def provider(self, name: str | ProviderSettings | None) -> ProviderSettings:
        if isinstance(name, ProviderSettings):
            return name
        name = name or self.settings.default_provider
        for p in self.settings.providers:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.settings.providers) or "none yet"
        raise ConfigError(
            f"No provider named '{name}'." if name else "No provider was chosen.",
            f"Configured providers: {known}. Add one with `preflight providers add NAME "
            "--base-url URL --model MODEL`.", fix="add-provider",
        )

    def answer_task(self, task: Task) -> Task:
        """``task`` with the user's answer length (Settings → Answers): what the provider
        and the local model are asked for. The utility assessor keeps its own cap."""
        return task.for_answer(self.settings.answer_max_tokens)

    def estimate(self, sanitized_text: str, task: Task,
                 provider: str | ProviderSettings | None) -> CostEstimate:
        """Token count and cost of sending ``sanitized_text`` for ``task``, counted on the
        exact request body the provider would receive (for live estimates in a face)."""
        settings = self.provider(provider)
        task = self.answer_task(task)
        request = self._client_factory(settings).build_request(task, sanitized_text)
        return estimate_cost(count_request_tokens(request, self.token_counter),
                             task.max_tokens, settings)

    # -- step 1 --

    def prepare_send(
        self,
        text: str,
        provider: str | ProviderSettings | None,
        method: str,
        params: SanitizeParams = SanitizeParams(),
        task: Task = SUMMARIZE,
        *,
        spans: Sequence[Span] | None = None,
        sanitized: SanitizedText | None = None,
        vault: Any = None,
        memory: Any = None,
        predicted_utility: float | None = None,
        features: dict[str, float] | None = None,
        conversation: Conversation | None = None,
    ) -> SendPlan:
        """Build the plan for sending ``text`` sanitized by ``method`` to ``provider``.

        The window passes ``sanitized``/``spans``/``vault`` it already has; the CLI lets
        this method detect and sanitize. ``memory`` (a reversible method's
        :class:`~preflight.core.sanitize.placeholder_memory.PlaceholderMemory`) keeps the
        document's tokens stable across sends; it is saved once the text is sanitized. It
        also tells which values earlier sends protected: they are protected again wherever
        they appear in this request (:mod:`.request_scope`). ``conversation``: the
        document's conversation; the request carries its earlier turns (a follow-up).
        """
        settings = self.provider(provider)
        task = self.answer_task(task)
        turn = conversation.next_turn if conversation is not None else 1
        if conversation is not None:
            task = conversation.follow(task)
        self.org_policy.check_provider(settings.base_url)   # fail closed when broken
        if params.epsilon is not None:
            self.org_policy.check_epsilon(params.epsilon)
        if not text.strip():
            raise ConfigError("The document is empty.", "Give a document with some text.")
        if task.kind == "question" and not task.question.strip():
            raise ConfigError("The question is empty.", "Type the question first.",
                              fix="question")
        transport.check_cleartext(settings)   # before any work: say it first
        if sanitized is None:
            if spans is None:
                spans = self.detector.detect(text)
            collab = {"vault": vault} if vault is not None else {}
            if memory is not None:
                collab["memory"] = memory
            mechanism = self._mechanism_factory(method, **collab)
            sanitized = mechanism.sanitize(text, spans, params)
            if memory is not None:
                memory.save()
            # the vault travels beside the output: the reversible mechanism's own
            vault = vault if vault is not None else getattr(mechanism, "vault", None)
        if spans is None:
            spans = self.detector.detect(text)  # the window passed only the sanitized text
        # the question and the custom instruction: the document's policy and vault; a
        # value found in any part (or an earlier send) is protected in all of them
        user_text = "\n".join(t for t in (task.question, task.note) if t.strip())
        scope = protect_request(task, detector=self.detector, original=text,
                                sanitized=sanitized, spans=spans, vault=vault, memory=memory,
                                allowed=self.settings.detection.allow_list)
        task, sanitized, vault = scope.task, scope.sanitized, scope.vault
        client = self._client_factory(settings)
        request = client.build_request(task, sanitized.text)
        cost = estimate_cost(count_request_tokens(request, self.token_counter),
                             task.max_tokens, settings)
        findings = rescan(self.detector, text, sanitized, request, spans, scope.values)
        fingerprint = Fingerprint.of(text)
        priors = tuple(self.audit.prior_sends(fingerprint))
        epsilon = params.epsilon if params.epsilon is not None else sanitized.epsilon
        if epsilon is not None:
            self.org_policy.check_epsilon(epsilon)
        if features is None:
            features = fast_features(text, sanitized, spans or ())
        notices = tuple(n for n in (transport.cleartext_warning(settings),
                                    transport.proxy_notice(settings)) if n)
        ledger = ledger_for(priors, send_epsilon(sanitized), self.org_policy.max_document_epsilon)
        return SendPlan(
            ledger=ledger,
            provider=settings, task=task, request=request, original=text, user_text=user_text,
            sanitized=sanitized, method=sanitized.method or method, epsilon=epsilon,
            seed=params.seed, fingerprint=fingerprint, cost=cost, findings=findings,
            prior_sends=priors, predicted_utility=predicted_utility, features=features,
            vault=vault, notices=notices, conversation=conversation, turn=turn,
        )

    # -- step 2 --

    def check(self, plan: SendPlan, confirmation: Confirmation) -> tuple[PriorSend, ...]:
        """Raise :class:`SendBlocked` unless ``confirmation`` allows ``plan``."""
        _check_org(self.org_policy, plan, confirmation)
        # Re-check the ledger now: another send may have happened since the plan was made.
        priors = tuple(self.audit.prior_sends(plan.fingerprint))
        self.check_epsilon_ledger(plan, priors)
        check_confirmation(plan, confirmation)
        check_resend(plan, confirmation, priors, send_epsilon(plan.sanitized),
                     self.org_policy.allow_resend)
        return priors

    def epsilon_ledger(self, plan: SendPlan,
                       priors: Sequence[PriorSend] | None = None) -> EpsilonLedger:
        """The document's ε ledger as of now (``priors``: the ledger's rows, if read)."""
        if priors is None:
            priors = self.audit.prior_sends(plan.fingerprint)
        return ledger_for(priors, send_epsilon(plan.sanitized),
                          self.org_policy.max_document_epsilon)

    def check_epsilon_ledger(self, plan: SendPlan,
                             priors: Sequence[PriorSend] | None = None) -> None:
        """Raise :class:`SendBlocked` when ``plan`` would take its document above the
        company's ``max_document_epsilon`` (sequential composition of its sends)."""
        reason = self.epsilon_ledger(plan, priors).block_reason()
        if reason is not None:
            raise SendBlocked(*reason)

    def execute(
        self,
        plan: SendPlan,
        confirmation: Confirmation,
        on_chunk: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        learn: bool = True,
    ) -> SendResult:
        """Send ``plan`` (after :meth:`check`), streaming restored text to ``on_chunk``."""
        self.check(plan, confirmation)
        key = resolve_key(plan.provider, self.keystore, self.session_keys, self._environ)
        self._register_provider_keys()      # redacted wherever the answer echoes one
        result = send_plan(
            plan, client=self._client_factory(plan.provider), key=key.key, audit=self.audit,
            restorer=self._restorer_factory(plan.vault), counter=self.token_counter,
            store_original=self.settings.store_original_in_audit, learn=learn,
            on_chunk=on_chunk, cancel=cancel,
        )
        if plan.conversation is not None:   # the next question continues from this answer
            plan.conversation.add(plan.turn, plan.task, result.answer_raw)
        # the restored answer against the original (and the user's own question: a fact
        # the user wrote is not invented); the payload names what came through the
        # sanitization's noise
        checked = f"{plan.original}\n\n{plan.user_text}" if plan.user_text else plan.original
        check, note = review_answer(checked, result.answer, self.detector,
                                    plan.sanitized.text)
        result = replace(result, answer_check=check,
                         notes=result.notes + ((note,) if note else ()))
        if not learn or result.audit_error:
            return result            # the answer not stored: nothing to learn from later
        try:
            realized, learning = self.learner.learn(result.record_id, plan.original,
                                                    result.answer, plan.features, plan,
                                                    plan.predicted_utility, check=check)
        except AuditWriteError as err:   # the answer is the user's whatever the log does
            return replace(result, learning="pending", audit_error=(
                f"The answer is shown, but the audit log could not record what was learnt "
                f"from it ({err.reason}); it is tried again later."))
        if realized is None:
            return replace(result, learning=learning)
        return replace(result, realized_utility=realized.utility,
                       similarity=realized.similarity, learning=learning)

    def _register_provider_keys(self) -> None:
        """Make the keys of every configured provider known to the answer guard (a
        provider may echo a key it should never have seen); the plan's vault secrets
        are registered by :func:`send_plan`."""
        for provider in self.settings.providers:
            try:
                resolve_key(provider, self.keystore, self.session_keys, self._environ)
            except ConfigError:
                pass                              # no key stored for it: nothing to hide

    def flush_pending_learning(self) -> int:
        """See :meth:`FlowRecorder.flush_pending`."""
        return self.learner.flush_pending()

    # -- keep local --

    def keep_local(
        self,
        text: str,
        task: Task = SUMMARIZE,
        on_token: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LocalResult:
        """The local SLM answers on the original text; nothing is sent anywhere. The
        answer is checked against ``text`` as a cloud answer is."""
        result = answer_locally(self._slm, self.audit, text, self.answer_task(task),
                                store_original=self.settings.store_original_in_audit,
                                on_token=on_token, cancel=cancel)
        user_text = "\n".join(t for t in (task.question, task.note) if t.strip())
        check, note = review_answer(f"{text}\n\n{user_text}" if user_text else text,
                                    result.answer, self.detector)
        return replace(result, answer_check=check,
                       notes=result.notes + ((note,) if note else ()))


def _check_org(org: OrgPolicy, plan: SendPlan, confirmation: Confirmation) -> None:
    """The company policy's say on this send: a broken file or a provider outside the
    allow-list refuses it; so do per-item overrides and a degraded detector when the
    company forbids them (whatever the user accepted)."""
    org.check_provider(plan.provider.base_url)
    if plan.epsilon is not None:
        org.check_epsilon(plan.epsilon)
    refusal = org.overrides_refusal(sorted(confirmation.overrides - {DEGRADED_DETECTOR_ID}))
    degraded = plan.degraded_detection
    if refusal is None and degraded is not None:
        refusal = org.degraded_refusal(degraded.value)
    if refusal is not None:
        raise SendBlocked(*refusal)


def _build_detector(cls: Any, settings: Settings) -> Any:
    """Build the real detector with the user's detection settings where it accepts them."""
    try:
        return cls(settings=settings.detection)
    except TypeError:
        return cls()


__all__ = [
    "BLOCKING_CATEGORIES", "Confirmation", "DEGRADED_DETECTOR_ID", "Finding", "LocalResult",
    "ProviderError", "SendBlocked", "SendPlan", "SendResult", "SendSession", "StreamBroken",
    "finding_id",
]
