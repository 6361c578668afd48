"""Executing a confirmed plan: audit first, send, stream through the restorer, audit
the outcome.

The answer arrives guarded (:mod:`.answer_guard`, applied in :mod:`.stream`): what the
audit stores as ``answer_raw`` has no control sequence and no stored secret. Notes about
the answer — secrets or link targets left as placeholders, sequences removed, keys
redacted — travel beside it (``SendResult.notes``), never inside its text, so nothing in
the answer can pass for Preflight's own words.

The record is written before any byte leaves (``sending``), every HTTP request is added
to its ``requests`` list (URL, then status) before it leaves, the answer is committed as
it streams, and the final status says what happened to the body: ``done``,
``truncated``, ``rejected``/``redirected`` (it reached the provider, which refused it or
pointed elsewhere), ``failed`` (``delivered`` 0 when it certainly never left) or
``cancelled``.

An audit write that fails before a request leaves stops that request (nothing unaudited
leaves); once the provider has the text, a failing write never costs the answer: it is
kept for the next write, and what the log could not store is said in
:attr:`SendResult.audit_error` (:mod:`.audit_writer`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from preflight.core.errors import Cancelled, PreflightError
from preflight.core.sanitize.restoring import is_secret_type
from preflight.core.send import logfilter
from preflight.core.send.answer_guard import neutralize
from preflight.core.send.audit import AuditLog, AuditWriteError
from preflight.core.send.audit_writer import RecordWriter
from preflight.core.send.cost import TokenCounter, price
from preflight.core.send.masking import override_label
from preflight.core.send.plan import SendPlan
from preflight.core.send.providers import ProviderClient
from preflight.core.send.stream import MAX_ANSWER_CHARS
from preflight.core.utility.answer_check import AnswerCheck

SAVE_EVERY_S = 0.25   # how often the streaming answer is committed to the audit log


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
    realized_utility: float | None   # shown and learned from: the similarity discounted
    learning: str                    # by unsupported facts ("recorded"|"pending"|"skipped")
    truncated: bool = False    # the answer hit MAX_ANSWER_CHARS and was cut
    requests: tuple[dict[str, Any], ...] = ()   # every HTTP request: {"url", "status"}
    notes: tuple[str, ...] = ()    # shown beside the answer, never inside it (see below)
    audit_error: str | None = None   # what the audit log could not record, for the user
    answer_check: AnswerCheck | None = None   # the answer's facts against the document
    similarity: float | None = None  # the paper's cosine of document and answer (raw)

    def to_json(self) -> dict[str, Any]:
        return {
            "record_id": self.record_id, "answer": self.answer, "answer_raw": self.answer_raw,
            "finish_reason": self.finish_reason, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "token_method": self.token_method,
            "cost": round(self.cost, 6), "attempts": self.attempts,
            "realized_utility": self.realized_utility, "learning": self.learning,
            "truncated": self.truncated, "answer_limit_chars": MAX_ANSWER_CHARS,
            "requests": list(self.requests), "notes": list(self.notes),
            "audit_error": self.audit_error, "similarity": self.similarity,
            "answer_check": self.answer_check.to_json() if self.answer_check else None,
        }


class IdentityRestorer:
    def feed(self, chunk: str) -> str:
        return chunk

    def flush(self) -> str:
        return ""


def default_restorer(vault: Any) -> Any:
    if vault is None:
        return IdentityRestorer()
    from preflight.core.sanitize.vault import StreamRestorer

    return StreamRestorer(vault)


def send_plan(
    plan: SendPlan,
    *,
    client: ProviderClient,
    key: str | None,
    audit: AuditLog,
    restorer: Any,
    counter: TokenCounter,
    store_original: bool,
    learn: bool,
    on_chunk: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> SendResult:
    """Send ``plan`` (already checked) and audit every step; learning is the caller's."""
    for entry in getattr(plan.vault, "entries", ()):      # the document's own secrets:
        if is_secret_type(entry.type):                     # redacted if the answer has one
            logfilter.register_secret(entry.original)
    try:
        record_id = _begin(plan, audit, store_original)
    except AuditWriteError as err:
        raise AuditWriteError(f"{err.message} Nothing was sent.", err.hint) from None
    record = RecordWriter(audit, record_id)
    raw_parts: list[str] = []
    shown_parts: list[str] = []
    hops: list[dict[str, Any]] = []
    last_save = [time.monotonic()]

    def fields(**extra: Any) -> dict[str, Any]:
        # The restored answer holds the real names: stored only with the original text.
        restored = {"answer_restored": "".join(shown_parts)} if store_original else {}
        return {"answer_raw": "".join(raw_parts), **restored, **extra}

    def show(text: str) -> None:
        text = neutralize(text)     # restored originals are plain text too
        if text:
            shown_parts.append(text)
            if on_chunk:
                on_chunk(text)

    def on_request(url: str, status: int | None, proxy: str | None = None) -> None:
        if status is not None:
            hops[-1]["status"] = status
            record.soon(requests=json.dumps(hops))
            return
        # the URL as the HTTP client sends it, and the proxy it takes
        hops.append({"url": url, "status": None, **({"proxy": proxy} if proxy else {})})
        try:
            record.now(requests=json.dumps(hops))      # durable before it leaves
        except AuditWriteError as err:
            hops.pop()                                 # it did not leave
            stop = AuditWriteError(f"{err.message} The request was not sent.", err.hint)
            stop.delivered = False if not hops else None  # type: ignore[attr-defined]
            raise stop from None

    def on_delta(delta: str) -> None:
        raw_parts.append(delta)
        show(restorer.feed(delta))
        now = time.monotonic()
        if now - last_save[0] >= SAVE_EVERY_S:
            last_save[0] = now
            record.soon(**fields())

    try:
        reply = client.send(
            plan.request, key, on_delta=on_delta, cancel=cancel,
            on_attempt=lambda n: record.soon(attempts=n),
            on_accepted=lambda: record.soon(status="streaming", delivered=1),
            on_request=on_request,
        )
    except BaseException as exc:
        show(_safe_flush(restorer))
        note = record.finish(**fields(requests=json.dumps(hops), **_failure_fields(exc)))
        if note and isinstance(exc, PreflightError):
            exc.hint = f"{exc.hint} {note}".strip()
        raise
    show(_safe_flush(restorer))
    answer_raw = "".join(raw_parts)
    in_tokens = int(reply.usage.get("prompt_tokens") or plan.cost.input_tokens)
    if reply.usage.get("completion_tokens"):
        out_tokens, token_method = int(reply.usage["completion_tokens"]), "provider usage"
    else:
        counted = counter.count(answer_raw)
        out_tokens, token_method = counted.tokens, counted.method
    cost = price(in_tokens, out_tokens, plan.provider)
    note = record.finish(**fields(
        status="truncated" if reply.truncated else "done", delivered=1,
        input_tokens=in_tokens, output_tokens=out_tokens, cost=cost,
        attempts=reply.attempts, flow_pending=1 if learn else 0, requests=json.dumps(hops),
        error=(f"answer cut at {MAX_ANSWER_CHARS} characters (the size limit)"
               if reply.truncated else None)))
    notes = tuple(reply.notes) + tuple(_restorer_notes(restorer))
    return SendResult(record_id, "".join(shown_parts), answer_raw, reply.finish_reason,
                      in_tokens, out_tokens, token_method, cost, reply.attempts, None,
                      "skipped", reply.truncated, tuple(dict(h) for h in hops), notes,
                      note)


def _begin(plan: SendPlan, audit: AuditLog, store_original: bool) -> int:
    """The record of ``plan``, committed before anything leaves."""
    return audit.begin(
        kind="send", status="sending", fingerprint=plan.fingerprint,
        provider=plan.provider.name, model=plan.provider.model, url=plan.request.url,
        method=plan.method, epsilon=plan.epsilon, task=plan.task.kind,
        privacy_epsilon=plan.ledger.this_send if plan.ledger is not None else None,
        payload=plan.payload,
        original_text=plan.original if store_original else None,
        input_tokens=plan.cost.input_tokens, token_method=plan.cost.token_method,
        cost_estimate=plan.cost.max_total if plan.cost.priced else None,
        predicted_utility=plan.predicted_utility,
        overrides=[override_label(f.type, f.value) for f in plan.blocking],
        conversation=plan.conversation_id,
        turn=plan.turn if plan.conversation is not None else None,
    )


def _failure_fields(exc: BaseException) -> dict[str, Any]:
    """The audit fields of a send that ended in ``exc``."""
    status_code = getattr(exc, "http_status", None)
    if isinstance(exc, (Cancelled, KeyboardInterrupt)):
        # A Stop before the provider answered says whether the request had left; a Stop
        # while streaming keeps delivered=1 (set when the provider accepted).
        delivered = getattr(exc, "delivered", None)
        fields = {"status": "cancelled", "error": error_text(exc)}
        return fields if delivered is None else {**fields, "delivered": int(delivered)}
    if status_code is not None:
        kind = "redirected" if 300 <= status_code < 400 else "rejected"
        what = ("redirected elsewhere (not followed)" if kind == "redirected"
                else "rejected by the provider")
        return {"status": kind, "delivered": 1,
                "error": f"delivered, {what} (HTTP {status_code}): {error_text(exc)}"}
    fields: dict[str, Any] = {"status": "failed", "error": error_text(exc)}
    if getattr(exc, "delivered", None) is False:
        fields["delivered"] = 0
    return fields


def _restorer_notes(restorer: Any) -> list[str]:
    """What the restorer left as it was (secrets, tokens in links) or failed to do."""
    try:
        return list(getattr(restorer, "notes", list)())
    except Exception:  # noqa: BLE001 - a note is not worth losing the answer over
        return []


def _safe_flush(restorer: Any) -> str:
    try:
        return restorer.flush() or ""
    except Exception:  # noqa: BLE001
        return ""


def error_text(exc: BaseException) -> str:
    if isinstance(exc, PreflightError):
        return logfilter.redact(str(exc))[:500]
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return type(exc).__name__
