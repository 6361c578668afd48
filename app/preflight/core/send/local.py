"""Keep local: the local SLM answers on the original text; nothing leaves the machine.
The audit log still records that a local answer was made (kind ``local``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from preflight.core.errors import ModelUnavailableError
from preflight.core.ports import AnsweringModel, LanguageModel, ModelAnswer
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.execute import error_text
from preflight.core.tasks import Task


@dataclass(frozen=True)
class LocalResult:
    record_id: int
    answer: str
    finish_reason: str | None = None      # "length": the answer reached its token limit

    def to_json(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "answer": self.answer, "sent": False,
                "finish_reason": self.finish_reason}


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
    try:
        if isinstance(slm, AnsweringModel):
            got = slm.answer(task, text, on_token=on_token, cancel=cancel)
        else:
            got = ModelAnswer(slm.run(task, text, on_token=on_token, cancel=cancel), None)
    except BaseException as exc:
        audit.update(record_id, error=error_text(exc))
        raise
    if store_original:     # answered on the original: the answer may quote its names
        audit.update(record_id, answer_restored=got.text, answer_raw=got.text)
    return LocalResult(record_id, got.text, got.finish_reason)
