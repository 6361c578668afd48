"""The send path as two UI-free steps the faces drive.

1. :meth:`SendSession.prepare_send` sanitizes (or takes an already sanitized text), builds
   the exact request, counts tokens, estimates the cost, re-scans every string of the
   payload with the detector and checks the per-document ledger. The result is a
   :class:`SendPlan`: everything the user must see before deciding.
2. :meth:`SendSession.execute` sends the plan only with a :class:`Confirmation` that
   covers every blocking finding and any earlier send of the same document. It writes
   the audit record *before* the request leaves, streams the answer through the
   placeholder restorer, and finally hands the realized utility to the flow learner
   (when that fails the record is marked pending and :meth:`flush_pending_learning`
   retries later — the answer never waits for learning).

:meth:`SendSession.keep_local` is the alternative: the local SLM answers on the original,
nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from preflight.core.config import ProviderSettings, Settings, load_settings
from preflight.core.errors import Cancelled, ConfigError, PreflightError, ProviderError
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.send import logfilter
from preflight.core.send.audit import AuditLog, Fingerprint, PriorSend
from preflight.core.send.cost import CostEstimate, TokenCounter, estimate_cost, price
from preflight.core.send.keys import KeyStore, SessionKeyStore, resolve_key
from preflight.core.send.providers import (
    PreparedRequest, ProviderClient, StreamBroken, create_client,
)
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import Category, SanitizedText, Span

log = logging.getLogger(__name__)

BLOCKING_CATEGORIES = (Category.DIRECT_IDENTIFIER, Category.SECRET)
_SAVE_EVERY_S = 0.25   # how often the streaming answer is committed to the audit log


class SendBlocked(PreflightError):
    """The send needs a confirmation the user has not given."""


@dataclass(frozen=True)
class Finding:
    """A piece of PII the re-scan found in the payload.

    ``id`` is stable for the same type and value, so an override given once survives a
    re-preparation of the same text (e.g. after moving the ε slider).
    """

    id: str
    type: str
    category: Category
    value: str
    part: str              # "document" or "instruction"
    start: int             # offsets into that part
    end: int
    score: float
    blocking: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "type": self.type, "category": self.category.value,
            "value": self.value, "part": self.part, "start": self.start, "end": self.end,
            "score": round(self.score, 4), "blocking": self.blocking, "reason": self.reason,
        }


def finding_id(type_: str, value: str) -> str:
    digest = hashlib.sha256(f"{type_}\0{' '.join(value.split()).casefold()}".encode())
    return f"{type_.lower()}-{digest.hexdigest()[:10]}"


@dataclass(frozen=True)
class SendPlan:
    """Everything shown before a send. Immutable: a changed choice is a new plan."""

    provider: ProviderSettings
    task: Task
    request: PreparedRequest
    original: str = field(repr=False)
    sanitized: SanitizedText = field(repr=False)
    method: str
    epsilon: float | None
    seed: int | None
    fingerprint: Fingerprint
    cost: CostEstimate
    findings: tuple[Finding, ...]
    prior_sends: tuple[PriorSend, ...]
    predicted_utility: float | None = None
    features: dict[str, float] | None = field(default=None, repr=False)
    vault: Any = field(default=None, repr=False)

    @property
    def payload(self) -> bytes:
        """The exact request body that will leave the machine."""
        return self.request.body

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.blocking)

    def to_json(self) -> dict[str, Any]:
        return {
            "provider": self.provider.name,
            "model": self.provider.model,
            "api_style": self.provider.api_style,
            "url": self.request.url,
            "headers": [list(h) for h in self.request.display_headers()],
            "payload": self.payload.decode("utf-8"),
            "payload_bytes": len(self.payload),
            "method": self.method,
            "epsilon": self.epsilon,
            "seed": self.seed,
            "task": self.task.kind,
            "cost": self.cost.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "blocking": [f.id for f in self.blocking],
            "prior_sends": [p.to_json() for p in self.prior_sends],
            "predicted_utility": self.predicted_utility,
            "document_sha256": self.fingerprint.sha256,
        }


@dataclass(frozen=True)
class Confirmation:
    """The user's explicit decision. Overrides name findings one by one (by id)."""

    confirmed: bool = False
    overrides: frozenset[str] = frozenset()
    resend_acknowledged: bool = False


@dataclass(frozen=True)
class SendResult:
    record_id: int
    answer: str                # placeholders/pseudonyms restored
    answer_raw: str            # as the provider sent it
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    token_method: str
    cost: float
    attempts: int
    realized_utility: float | None
    learning: str              # "recorded" | "pending" | "skipped"

    def to_json(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id, "answer": self.answer, "answer_raw": self.answer_raw,
            "finish_reason": self.finish_reason, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "token_method": self.token_method,
            "cost": round(self.cost, 6), "attempts": self.attempts,
            "realized_utility": self.realized_utility, "learning": self.learning,
        }


@dataclass(frozen=True)
class LocalResult:
    record_id: int
    answer: str

    def to_json(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "answer": self.answer, "sent": False}


class _IdentityRestorer:
    def feed(self, chunk: str) -> str:
        return chunk

    def flush(self) -> str:
        return ""


def _default_restorer(vault: Any) -> Any:
    if vault is None:
        return _IdentityRestorer()
    from preflight.core.sanitize.vault import StreamRestorer

    return StreamRestorer(vault)


class SendSession:
    """Prepares and executes sends. Collaborators come in through the constructor; each
    ``None`` means "the real one, built lazily on first use"."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        detector: Any = None,
        audit: AuditLog | None = None,
        keystore: KeyStore | None = None,
        session_keys: SessionKeyStore | None = None,
        token_counter: TokenCounter | None = None,
        embedder: Any = None,
        flow: Any = None,
        slm: Any = None,
        client_factory: Callable[[ProviderSettings], ProviderClient] = create_client,
        restorer_factory: Callable[[Any], Any] = _default_restorer,
        mechanism_collaborators: dict[str, Any] | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        logfilter.install()
        self.settings = settings if settings is not None else load_settings()
        self._detector = detector
        self._audit = audit
        self.keystore = keystore if keystore is not None else KeyStore()
        self.session_keys = session_keys if session_keys is not None else SessionKeyStore()
        self._counter = token_counter
        self._embedder = embedder
        self._flow = flow
        self._slm = slm
        self._client_factory = client_factory
        self._restorer_factory = restorer_factory
        self._mech_collab = mechanism_collaborators or {}
        self._environ = environ
        self._lock = threading.Lock()

    # -- lazy collaborators --

    @property
    def detector(self) -> Any:
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
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter()
        return self._counter

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
            "--base-url URL --model MODEL`.",
        )

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
        predicted_utility: float | None = None,
        features: dict[str, float] | None = None,
    ) -> SendPlan:
        """Build the plan for sending ``text`` sanitized by ``method`` to ``provider``.

        The window passes ``sanitized``/``spans``/``vault`` it already has; the CLI lets
        this method detect and sanitize.
        """
        settings = self.provider(provider)
        if not text.strip():
            raise ConfigError("The document is empty.", "Give a document with some text.")
        if task.kind == "question" and not task.question.strip():
            raise ConfigError("The question is empty.", "Pass --question with the question.")
        if sanitized is None:
            if spans is None:
                spans = self.detector.detect(text)
            collab = dict(self._mech_collab)
            if vault is not None:
                collab.setdefault("vault", vault)
            mechanism = create_mechanism(method, **collab)
            sanitized = mechanism.sanitize(text, spans, params)
            vault = vault if vault is not None else _find_vault(mechanism, sanitized)
        client = self._client_factory(settings)
        request = client.build_request(task, sanitized.text)
        counted = self.token_counter.count("\n".join(request.content_texts))
        cost = estimate_cost(counted, task.max_tokens, settings)
        if spans is None:
            spans = self.detector.detect(text)  # the window passed only the sanitized text
        findings = self._rescan(text, sanitized, request, spans)
        fingerprint = Fingerprint.of(text)
        priors = tuple(self.audit.prior_sends(fingerprint))
        epsilon = params.epsilon if params.epsilon is not None else sanitized.info.get("epsilon")
        if features is None:
            features = _fast_features(text, sanitized, spans or ())
        return SendPlan(
            provider=settings, task=task, request=request, original=text,
            sanitized=sanitized, method=sanitized.method or method, epsilon=epsilon,
            seed=params.seed, fingerprint=fingerprint, cost=cost, findings=findings,
            prior_sends=priors, predicted_utility=predicted_utility, features=features,
            vault=vault,
        )

    def _rescan(self, original: str, sanitized: SanitizedText, request: PreparedRequest,
                original_spans: Sequence[Span] = ()) -> tuple[Finding, ...]:
        """Detect PII in every string of the payload a model reads.

        Two checks: the detector runs on each string, and every identifier or secret value
        detected in the *original* is searched for verbatim (case-insensitively) — a name
        the detector flagged once but missed at a second mention, in a context where the
        re-scan misses it too, must still block. A detected value that sanitization itself
        put there (inside a change, and not a value of the original) is a surrogate, not a
        leak; everything else in a blocking category blocks until overridden.
        """
        folded_original = original.casefold()
        out: dict[str, Finding] = {}
        known = {
            (s.type, original[s.start:s.end]): s for s in original_spans
            if s.category in BLOCKING_CATEGORIES and len(original[s.start:s.end].strip()) >= 3
        }
        for content in request.content_texts:
            doc_at = content.find(sanitized.text) if sanitized.text else -1
            for (typ, value), span in known.items():
                # Whole words only: the name "Ann" must not match inside "Annual".
                pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
                for m in re.finditer(pattern, content, re.IGNORECASE):
                    in_doc = doc_at >= 0 and doc_at <= m.start() and m.end() <= doc_at + len(
                        sanitized.text)
                    start = m.start() - doc_at if in_doc else m.start()
                    end = m.end() - doc_at if in_doc else m.end()
                    fid = finding_id(typ, value)
                    if fid in out:
                        continue
                    out[fid] = Finding(
                        fid, typ, span.category, m.group(0),
                        "document" if in_doc else "instruction", start, end, span.score, True,
                        "detected in the original and still in the payload unchanged",
                    )
        for content in request.content_texts:
            doc_at = content.find(sanitized.text) if sanitized.text else -1
            for span in self.detector.detect(content):
                value = content[span.start:span.end]
                in_doc = doc_at >= 0 and doc_at <= span.start and span.end <= doc_at + len(
                    sanitized.text)
                part = "document" if in_doc else "instruction"
                start = span.start - doc_at if in_doc else span.start
                end = span.end - doc_at if in_doc else span.end
                introduced = (
                    in_doc
                    and _inside_changes(sanitized, start, end)
                    and value.casefold() not in folded_original
                )
                blocking = span.category in BLOCKING_CATEGORIES and not introduced
                if introduced:
                    reason = "put there by sanitization (a surrogate, not from the original)"
                elif blocking:
                    reason = (f"a {span.category.value.replace('_', ' ')} would leave the "
                              f"machine: {span.why}")
                else:
                    reason = f"remains in the text ({span.category.value.replace('_', ' ')})"
                fid = finding_id(span.type, value)
                prev = out.get(fid)
                if prev is None or (blocking and not prev.blocking):
                    out[fid] = Finding(fid, span.type, span.category, value, part, start, end,
                                       span.score, blocking, reason)
        return tuple(sorted(out.values(), key=lambda f: (not f.blocking, f.part, f.start)))

    # -- step 2 --

    def check(self, plan: SendPlan, confirmation: Confirmation) -> tuple[PriorSend, ...]:
        """Raise :class:`SendBlocked` unless ``confirmation`` allows ``plan``."""
        if not confirmation.confirmed:
            raise SendBlocked("The send was not confirmed.",
                              "Review the payload and confirm (CLI: answer 'y' or pass --yes).")
        missing = [f for f in plan.blocking if f.id not in confirmation.overrides]
        if missing:
            listed = ", ".join(f"{f.type} '{f.value}' ({f.id})" for f in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise SendBlocked(
                f"The payload still contains {len(missing)} identifier(s) or secret(s): "
                f"{listed}{more}.",
                "Choose a stronger method, or override each item explicitly "
                "(CLI: --allow ID for each).",
            )
        # Re-check the ledger now: another send may have happened since the plan was made.
        priors = tuple(self.audit.prior_sends(plan.fingerprint))
        if priors and not confirmation.resend_acknowledged:
            raise SendBlocked(
                f"This document was already sent {len(priors)} time(s) "
                f"(last: {priors[-1].created_at}, match: {priors[-1].match}).",
                "Several differently sanitized copies of one text can be averaged to undo "
                "the noise. Confirm the resend explicitly (CLI: --allow-resend).",
            )
        return priors

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
        client = self._client_factory(plan.provider)
        audit = self.audit
        record_id = audit.begin(
            kind="send", status="sending", fingerprint=plan.fingerprint,
            provider=plan.provider.name, model=plan.provider.model, url=plan.request.url,
            method=plan.method, epsilon=plan.epsilon, seed=plan.seed, task=plan.task.kind,
            payload=plan.payload,
            original_text=plan.original if self.settings.store_original_in_audit else None,
            input_tokens=plan.cost.input_tokens, token_method=plan.cost.token_method,
            cost_estimate=plan.cost.max_total if plan.cost.priced else None,
            predicted_utility=plan.predicted_utility,
            overrides=[f.id for f in plan.blocking],
        )
        restorer = self._restorer_factory(plan.vault)
        raw_parts: list[str] = []
        shown_parts: list[str] = []
        attempts = [0]
        last_save = [time.monotonic()]

        def save(**extra: Any) -> None:
            audit.update(record_id, answer_raw="".join(raw_parts),
                         answer_restored="".join(shown_parts), **extra)

        def on_attempt(n: int) -> None:
            attempts[0] = n
            audit.update(record_id, attempts=n)

        def on_accepted() -> None:
            audit.update(record_id, status="streaming", delivered=1)

        def on_delta(delta: str) -> None:
            raw_parts.append(delta)
            shown = restorer.feed(delta)
            if shown:
                shown_parts.append(shown)
                if on_chunk:
                    on_chunk(shown)
            now = time.monotonic()
            if now - last_save[0] >= _SAVE_EVERY_S:
                last_save[0] = now
                save()

        try:
            reply = client.send(plan.request, key.key, on_delta=on_delta, cancel=cancel,
                                on_attempt=on_attempt, on_accepted=on_accepted)
        except BaseException as exc:
            tail = _safe_flush(restorer)
            if tail:
                shown_parts.append(tail)
                if on_chunk:
                    on_chunk(tail)
            status = "cancelled" if isinstance(exc, (Cancelled, KeyboardInterrupt)) else "failed"
            fields: dict[str, Any] = {"status": status, "error": _error_text(exc)}
            delivered = getattr(exc, "delivered", None)
            if delivered is False:
                fields["delivered"] = 0
            save(**fields)
            raise
        tail = _safe_flush(restorer)
        if tail:
            shown_parts.append(tail)
            if on_chunk:
                on_chunk(tail)
        answer_raw = "".join(raw_parts)
        answer = "".join(shown_parts)
        in_tokens = int(reply.usage.get("prompt_tokens") or plan.cost.input_tokens)
        if reply.usage.get("completion_tokens"):
            out_tokens, token_method = int(reply.usage["completion_tokens"]), "provider usage"
        else:
            counted = self.token_counter.count(answer_raw)
            out_tokens, token_method = counted.tokens, counted.method
        cost = price(in_tokens, out_tokens, plan.provider)
        save(status="done", delivered=1, input_tokens=in_tokens, output_tokens=out_tokens,
             cost=cost, attempts=reply.attempts, flow_pending=1 if learn else 0)
        realized, learning = (None, "skipped")
        if learn:
            realized, learning = self._learn(record_id, plan.original, answer, plan.features,
                                             plan, plan.predicted_utility)
        return SendResult(record_id, answer, answer_raw, reply.finish_reason, in_tokens,
                          out_tokens, token_method, cost, reply.attempts, realized, learning)

    # -- learning on the flow --

    def _learn(self, record_id: int, original: str, answer: str,
               features: dict[str, float] | None, plan: SendPlan | None,
               predicted: float | None) -> tuple[float | None, str]:
        if not answer.strip():
            self.audit.update(record_id, flow_pending=0)
            return None, "skipped"
        realized: float | None = None
        try:
            if self._embedder is None:
                from preflight.runtime.embedder import SentenceEmbedder

                self._embedder = SentenceEmbedder()
            realized = float(self._embedder.similarity(original, answer))
            if math.isnan(realized):
                raise ValueError("similarity is NaN")
            self.audit.update(record_id, realized_utility=realized)
        except Exception as exc:  # noqa: BLE001 - learning never costs the user the answer
            log.warning("realized utility not computed yet (%s); kept for later",
                        type(exc).__name__)
            return None, "pending"
        try:
            if self._flow is None:
                from preflight.core.utility.flow import FlowLearner

                self._flow = FlowLearner()
            meta = {"record_id": record_id, "predicted_utility": predicted}
            if plan is not None:
                meta.update(provider=plan.provider.name, model=plan.provider.model,
                            method=plan.method, epsilon=plan.epsilon, task=plan.task.kind)
            self._flow.record(dict(features or {}), realized, meta)
            self.audit.update(record_id, flow_pending=0)
            return realized, "recorded"
        except Exception as exc:  # noqa: BLE001
            log.warning("flow learner unavailable (%s); the pair is kept for later",
                        type(exc).__name__)
            return realized, "pending"

    def flush_pending_learning(self) -> int:
        """Hand finished sends still marked pending to the flow learner; returns how many
        were recorded. Needs the original text (stored only with the user's opt-in) when
        the realized utility was never computed."""
        done = 0
        for row in self.audit.pending_flow():
            answer = row["answer_restored"] or ""
            if row["realized_utility"] is None and not row["original_text"]:
                continue
            if row["realized_utility"] is not None:
                realized = float(row["realized_utility"])
                try:
                    if self._flow is None:
                        from preflight.core.utility.flow import FlowLearner

                        self._flow = FlowLearner()
                    self._flow.record({"epsilon": row["epsilon"]}, realized,
                                      {"record_id": row["id"], "method": row["method"]})
                    self.audit.update(row["id"], flow_pending=0)
                    done += 1
                except Exception as exc:  # noqa: BLE001
                    log.warning("flow learner still unavailable (%s)", type(exc).__name__)
                    break
            else:
                _, state = self._learn(row["id"], row["original_text"], answer,
                                       {"epsilon": row["epsilon"]}, None,
                                       row["predicted_utility"])
                done += state == "recorded"
        return done

    # -- keep local --

    def keep_local(
        self,
        text: str,
        task: Task = SUMMARIZE,
        on_token: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LocalResult:
        """The local SLM answers on the original text; nothing is sent anywhere."""
        if self._slm is None:
            from preflight.runtime.slm import LocalSLM

            self._slm = LocalSLM()
        fingerprint = Fingerprint.of(text)
        record_id = self.audit.begin(
            kind="local", status="local", fingerprint=fingerprint, provider="local",
            task=task.kind,
            original_text=text if self.settings.store_original_in_audit else None,
        )
        try:
            answer = self._slm.run(task, text, on_token=on_token, cancel=cancel)
        except BaseException as exc:
            self.audit.update(record_id, error=_error_text(exc))
            raise
        self.audit.update(record_id, answer_restored=answer, answer_raw=answer)
        return LocalResult(record_id, answer)


# --- helpers ---------------------------------------------------------------------------


def _build_detector(cls: Any, settings: Settings) -> Any:
    """Build the real detector with the user's detection settings where it accepts them."""
    try:
        return cls(settings=settings.detection)
    except TypeError:
        return cls()


def _find_vault(mechanism: Any, sanitized: SanitizedText) -> Any:
    vault = sanitized.info.get("vault") if isinstance(sanitized.info, dict) else None
    return vault if vault is not None else getattr(mechanism, "vault", None)


def _inside_changes(sanitized: SanitizedText, start: int, end: int) -> bool:
    for change in sanitized.changes:
        if change.start <= start and end <= change.end:
            return True
        if change.start >= end:
            break
    return False


def _fast_features(text: str, sanitized: SanitizedText, spans: Sequence[Span]
                   ) -> dict[str, float] | None:
    try:
        from preflight.core.utility.features import fast_features
    except ImportError:
        return None
    try:
        return dict(fast_features(text, sanitized, list(spans)))
    except Exception as exc:  # noqa: BLE001 - features are for learning, never block a send
        log.info("features not computed (%s)", type(exc).__name__)
        return None


def _safe_flush(restorer: Any) -> str:
    try:
        return restorer.flush() or ""
    except Exception:  # noqa: BLE001
        return ""


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, PreflightError):
        return logfilter.redact(str(exc))[:500]
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return type(exc).__name__


__all__ = [
    "Confirmation", "Finding", "LocalResult", "SendBlocked", "SendPlan", "SendResult",
    "SendSession", "ProviderError", "StreamBroken", "finding_id",
]
