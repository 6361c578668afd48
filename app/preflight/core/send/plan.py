"""The send plan (everything shown before a send), its findings and the confirmation rules.

A :class:`Finding` is what the re-scan of the payload reports (:mod:`.rescan`): a leak or
a validated identifier or secret blocks the send until the user accepts it explicitly; a
note (a name the NER model guesses, a value the policy keeps) is shown but does not block.
A detector running degraded (:func:`degraded_finding`) blocks too: then the re-scan
itself cannot be trusted.

Resends (:func:`needs_resend_ack`, :func:`company_counts_resend`): several differently
noised copies of one text can be averaged, so a send that adds d_X ε to a document sent
before needs the user's explicit acknowledgment; a send without d_X adds ε 0 and needs
none. A company that forbids resends refuses every d_X resend, and any send of a document
sent before outside the conversation its earlier sends were part of.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from preflight.core.config import ProviderSettings
from preflight.core.errors import PreflightError
from preflight.core.pii.floor import BLOCKING_CATEGORIES  # noqa: F401 - re-exported
from preflight.core.ports import Detector
from preflight.core.privacy.ledger import EpsilonLedger
from preflight.core.send.audit import Fingerprint, PriorSend
from preflight.core.send.cost import CostEstimate
from preflight.core.send.providers import PreparedRequest
from preflight.core.tasks import Task
from preflight.core.types import Category, SanitizedText, Span

log = logging.getLogger(__name__)

DEGRADED_DETECTOR_ID = "detector-degraded"


class SendBlocked(PreflightError):
    """The send needs a confirmation the user has not given."""


@dataclass(frozen=True)
class Finding:
    """A piece of PII the re-scan found in the payload (or the degraded-detector notice).

    ``id`` is stable for the same type and value, so an override given once survives a
    re-preparation of the same text (e.g. after moving the ε slider). ``kind`` says why:
    ``leak`` (a value of the original the policy protects), ``validated`` (an identifier
    or secret on checksum/format evidence), ``note`` (not blocking) or ``degraded``.
    """

    id: str
    type: str
    category: Category
    value: str
    part: str              # "document", "instruction" or "detector"
    start: int             # offsets into that part
    end: int
    score: float
    blocking: bool
    reason: str
    kind: str = "note"

    @property
    def rememberable(self) -> bool:
        """Whether "don't flag this again" may add the value to the allow-list: never a
        secret (an allow-listed key would leave unnoticed in every later document) nor
        the degraded-detector notice."""
        return self.kind != "degraded" and self.category is not Category.SECRET

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "type": self.type, "category": self.category.value,
            "value": self.value, "part": self.part, "start": self.start, "end": self.end,
            "score": round(self.score, 4), "blocking": self.blocking, "reason": self.reason,
            "kind": self.kind,
        }


def finding_id(type_: str, value: str) -> str:
    digest = hashlib.sha256(f"{type_}\0{' '.join(value.split()).casefold()}".encode())
    return f"{type_.lower()}-{digest.hexdigest()[:10]}"


@dataclass(frozen=True)
class SendPlan:
    """Everything shown before a send. Immutable: a changed choice is a new plan.

    ``seed`` stays in memory only: it is in neither :meth:`to_json` nor the audit log.
    """

    provider: ProviderSettings
    task: Task
    request: PreparedRequest
    original: str = field(repr=False)
    sanitized: SanitizedText = field(repr=False)
    method: str
    epsilon: float | None
    seed: int | None = field(repr=False)
    fingerprint: Fingerprint
    cost: CostEstimate
    findings: tuple[Finding, ...]
    prior_sends: tuple[PriorSend, ...]
    predicted_utility: float | None = None
    features: dict[str, float] | None = field(default=None, repr=False)
    vault: Any = field(default=None, repr=False)
    notices: tuple[str, ...] = ()      # sentences the user must read (e.g. cleartext HTTP)
    ledger: EpsilonLedger | None = None  # the document's ε before and after this send
    # the user's own question and instruction as typed (never sent: the request carries
    # them protected); the answer check reads them beside the document
    user_text: str = field(default="", repr=False)
    # the document's conversation (:class:`~preflight.core.send.conversation.Conversation`)
    # and this send's turn in it (1: its first send; the request carries earlier turns)
    conversation: Any = field(default=None, repr=False)
    turn: int = 1

    @property
    def conversation_id(self) -> str | None:
        return self.conversation.id if self.conversation is not None else None

    @property
    def follow_up(self) -> bool:
        """Whether this send continues a conversation (earlier turns in the request)."""
        return self.turn > 1

    @property
    def this_send_epsilon(self) -> float:
        return self.ledger.this_send if self.ledger is not None else 0.0

    @property
    def resend_needs_ack(self) -> bool:
        return needs_resend_ack(self.prior_sends, self.this_send_epsilon)

    @property
    def payload(self) -> bytes:
        """The exact request body that will leave the machine."""
        return self.request.body

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.blocking)

    @property
    def degraded_detection(self) -> Finding | None:
        return next((f for f in self.findings if f.id == DEGRADED_DETECTOR_ID), None)

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
            "task": self.task.kind,
            "cost": self.cost.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "blocking": [f.id for f in self.blocking],
            "prior_sends": [p.to_json() for p in self.prior_sends],
            "predicted_utility": self.predicted_utility,
            "document_sha256": self.fingerprint.sha256,
            "notices": list(self.notices),
            "epsilon_ledger": self.ledger.to_json() if self.ledger is not None else None,
            "conversation": {"id": self.conversation_id, "turn": self.turn},
            "resend_acknowledgment_needed": self.resend_needs_ack,
        }


@dataclass(frozen=True)
class Confirmation:
    """The user's explicit decision. Overrides name findings one by one (by id).

    ``accept_degraded_detection`` accepts sending although the detector runs degraded
    (its finding's id in ``overrides`` counts as the same explicit acceptance).
    """

    confirmed: bool = False
    overrides: frozenset[str] = frozenset()
    resend_acknowledged: bool = False
    accept_degraded_detection: bool = False


def check_confirmation(plan: SendPlan, confirmation: Confirmation) -> None:
    """Raise :class:`SendBlocked` unless ``confirmation`` covers ``plan``'s findings (the
    ledger is checked by the session, which owns the audit log)."""
    if not confirmation.confirmed:
        raise SendBlocked("The send was not confirmed.",
                          "Review the payload and confirm: answer 'y', or pass --yes.", fix="confirm")
    degraded = plan.degraded_detection
    if degraded is not None and not (confirmation.accept_degraded_detection
                                     or degraded.id in confirmation.overrides):
        raise SendBlocked(
            f"The PII detector runs degraded ({degraded.value}); the re-scan of the "
            "payload may miss names and other identifiers.",
            "Fix the detector (preflight models install), or accept this explicitly: "
            "--accept-degraded-detection.", fix="accept-degraded",
        )
    missing = [f for f in plan.blocking
               if f.id != DEGRADED_DETECTOR_ID and f.id not in confirmation.overrides]
    if missing:
        listed = ", ".join(f"{f.type} '{f.value}' ({f.id})" for f in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        typed = [f for f in missing if f.part == "instruction"]
        typed_values = ", ".join(f"'{f.value}'" for f in typed[:3])
        raise SendBlocked(
            f"The payload still contains {len(missing)} identifier(s) or secret(s): "
            f"{listed}{more}.",
            (f"Remove {typed_values} from the question or instruction you typed (a "
             "stronger policy does not change what you typed), or override it explicitly: "
             "--allow ID." if typed else
             "Choose a stronger policy, or override each item explicitly: --allow ID for "
             "each; --remember-allow ID also stops flagging a false positive."),
            fix="allow-typed" if typed else "allow", subject=typed_values,
        )


def needs_resend_ack(priors: Sequence[PriorSend], this_send: float) -> bool:
    """Whether a send must be acknowledged as a resend: the document was sent before and
    this send adds d_X ε (its noise could be averaged with the earlier copies')."""
    return bool(priors) and this_send > 0


def company_counts_resend(priors: Sequence[PriorSend], this_send: float,
                          conversation_id: str | None) -> bool:
    """Whether a company's ``allow_resend = false`` refuses this send: a d_X send of a
    document sent before, or any send of it outside the conversation of its earlier
    sends (a follow-up without d_X is the same exchange and adds ε 0)."""
    if not priors:
        return False
    return this_send > 0 or any(conversation_id is None or p.conversation != conversation_id
                                for p in priors)


def check_resend(plan: SendPlan, confirmation: Confirmation, priors: Sequence[PriorSend],
                 this_send: float, allow_resend: bool) -> None:
    """Raise :class:`SendBlocked` when ``plan`` is a resend the company forbids, one the
    user has not acknowledged, or a turn its conversation has moved past (``priors``: the
    document's earlier sends as of now; ``this_send``: the ε ``plan`` adds)."""
    if company_counts_resend(priors, this_send, plan.conversation_id) and not allow_resend:
        raise SendBlocked(f"This document was already sent {len(priors)} time(s), and "
                          "your organization's policy does not allow sending it again.",
                          "Keep it local, or ask your IT administrator.")
    if plan.conversation is not None and plan.turn != plan.conversation.next_turn:
        raise SendBlocked("The conversation moved on since this send was prepared.",
                          "Send the question again.")
    if needs_resend_ack(priors, this_send) and not confirmation.resend_acknowledged:
        raise SendBlocked(
            f"This document was already sent {len(priors)} time(s) "
            f"(last: {priors[-1].created_at}, match: {priors[-1].match}).",
            f"This send adds ε {this_send:g} of d_X noise, and several differently noised "
            "copies of one text can be averaged to undo it. Confirm the resend explicitly "
            "(--allow-resend), or use a policy without d_X.", fix="allow-resend",
            subject=f"{this_send:g}")


def degraded_finding(detector: Detector) -> Finding | None:
    """A blocking finding when ``detector`` says it runs degraded (e.g. no NER model)."""
    warnings = [w for w in (getattr(detector, "warnings", None) or []) if w]
    if not warnings:
        return None
    text = "; ".join(warnings)
    return Finding(
        DEGRADED_DETECTOR_ID, "DETECTOR_DEGRADED", Category.DIRECT_IDENTIFIER, text,
        "detector", 0, 0, 1.0, True,
        f"the PII detector runs degraded, so identifiers it cannot find would leave "
        f"unnoticed: {text}", "degraded",
    )


def fast_features(text: str, sanitized: SanitizedText, spans: Sequence[Span]
                  ) -> dict[str, float] | None:
    """The utility features learning needs (never blocks a send)."""
    from preflight.core.utility.features import fast_features as compute

    try:
        return compute(text, sanitized, list(spans)).as_dict()
    except Exception as exc:  # noqa: BLE001 - features are for learning, never block a send
        log.info("features not computed (%s)", type(exc).__name__)
        return None
