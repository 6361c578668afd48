"""Keep local: the local SLM answers on the original text; nothing leaves the machine.
The audit log still records that a local answer was made (kind ``local``).

A small model answering greedily may fall into a loop, writing the same sentence again and
again until the length limit (SmolLM2-135M did on 6 of 12 held-out documents:
``preflight_eval.local_answer_study``). :func:`guarded_answer` stops it at the first sentence
it repeats; the faces then end the answer at its last complete sentence and say why."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from preflight.core.errors import Cancelled, ModelUnavailableError
from preflight.core.ports import AnsweringModel, LanguageModel, ModelAnswer
from preflight.core.send.answer_text import REPEAT_REASON, RepeatWatch
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_writer import RecordWriter
from preflight.core.send.execute import error_text
from preflight.core.tasks import Task
from preflight.core.utility.answer_check import AnswerCheck


@dataclass(frozen=True)
class LocalResult:
    record_id: int
    answer: str
    finish_reason: str | None = None      # "length": the answer reached its token limit
    audit_error: str | None = None        # what the audit log could not record
    answer_check: AnswerCheck | None = None   # the answer's facts against the document
    notes: tuple[str, ...] = ()           # shown beside the answer (e.g. a check's limits)

    def to_json(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "answer": self.answer, "sent": False,
                "finish_reason": self.finish_reason, "audit_error": self.audit_error,
                "answer_check": self.answer_check.to_json() if self.answer_check else None}


class _StopEvent(threading.Event):
    """Set by the loop guard, and set whenever the caller's own cancel event is (the model
    only ever asks ``is_set``)."""

    def __init__(self, caller: threading.Event | None) -> None:
        super().__init__()
        self._caller = caller

    def is_set(self) -> bool:
        return super().is_set() or (self._caller is not None and self._caller.is_set())


def guarded_answer(
    slm: LanguageModel,
    task: Task,
    text: str,
    *,
    on_token: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> ModelAnswer:
    """The local model's answer on ``text``, stopped when it repeats a sentence
    (:class:`~preflight.core.send.answer_text.RepeatWatch`): the piece that would end the
    repeated sentence is not passed on, and the answer is what was, with finish reason
    :data:`~preflight.core.send.answer_text.REPEAT_REASON`. ``cancel`` stops it as before
    (:class:`Cancelled`)."""
    stop = _StopEvent(cancel)
    watch = RepeatWatch()
    pieces: list[str] = []
    looped = False

    def feed(piece: str) -> None:
        nonlocal looped
        if looped:
            return
        if watch.feed(piece) is not None:
            looped = True
            stop.set()
            return
        pieces.append(piece)
        if on_token is not None:
            on_token(piece)

    got: ModelAnswer | None = None
    try:
        if isinstance(slm, AnsweringModel):
            got = slm.answer(task, text, on_token=feed, cancel=stop)
        else:
            got = ModelAnswer(slm.run(task, text, on_token=feed, cancel=stop), None)
    except Cancelled:
        if not looped or (cancel is not None and cancel.is_set()):
            raise
    # stopped in a loop (or it ended on the very piece that repeated): what was passed on
    return ModelAnswer("".join(pieces), REPEAT_REASON) if looped or got is None else got


def answer_locally(
    slm: LanguageModel | None,
    audit: AuditLog,
    text: str,
    task: Task,
    *,
    store_original: bool,
    on_token: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> LocalResult:
    if slm is None:
        raise ModelUnavailableError(
            "No local language model is available to answer on this computer.",
            "Install the models (preflight models install), or send the sanitized text.",
        )
    record_id = audit.begin(
        kind="local", status="local", fingerprint=Fingerprint.of(text), provider="local",
        task=task.kind, original_text=text if store_original else None,
    )
    record = RecordWriter(audit, record_id)   # a failed write never costs the answer
    try:
        got = guarded_answer(slm, task, text, on_token=on_token, cancel=cancel)
    except BaseException as exc:
        record.finish(error=error_text(exc))
        raise
    note = None
    if store_original:     # answered on the original: the answer may quote its names
        note = record.finish(answer_restored=got.text, answer_raw=got.text)
    return LocalResult(record_id, got.text, got.finish_reason, note)
