"""Long documents as both faces meet them: the context-window rule, said in words.

:func:`over_context` applies the core's rule (:func:`preflight.core.send.chunked.context_fit`)
to the request a text would make, before any detection or confirmation; the window and
`preflight send` refuse with :class:`OverContext` and offer the same two ways on:
``first-part`` (the beginning that fits, cut at a paragraph end) or ``chunked`` (a summary
of each part, then of the summaries; :mod:`preflight.core.send.chunked`).
"""

from __future__ import annotations

from typing import Any

from preflight.core.errors import PreflightError
from preflight.core.send.chunked import ContextFit, context_fit
from preflight.core.tasks import Task

FIRST_PART, CHUNKED = "first-part", "chunked"
CHOICES = (FIRST_PART, CHUNKED)


class OverContext(PreflightError):
    """The request does not fit the provider's context window (``fit`` says by how much)."""

    def __init__(self, fit: ContextFit, provider: str, hint: str = "") -> None:
        super().__init__(
            f"Too long to send whole: {fit.sentence(provider)}",
            hint or "Send the first part that fits (cut at a paragraph end), or a chunked "
                    "summary (each part summarized, then the summaries). If the window is "
                    "wrong, set it in Settings → Providers.")
        self.fit = fit
        self.provider = provider


def over_context(session: Any, text: str, task: Task, provider: Any) -> ContextFit | None:
    """The fit of sending ``text`` for ``task`` when it is over ``provider``'s window, else
    None. Counted on the exact request body; the text sent is the sanitized one, so a
    figure on the original is an estimate the plan checks again on the payload."""
    settings = session.provider(provider)
    fit = context_fit(session.estimate(text, task, settings), settings)
    return None if fit.fits else fit


def part_words(done: int, total: int, words: str) -> str:
    """A progress line: ``"Summarizing part 3 of 12 (2 of 13 requests done)"``."""
    return f"{words} ({done} of {total} requests done)" if total > 1 else words


class LongSend:
    """The window's long-document steps over a :class:`WindowDoorway`'s send session (a
    module of its own: the doorway stays small). Each runs on a worker lane."""

    def __init__(self, doorway: Any) -> None:
        self._doorway = doorway

    def _session(self) -> Any:
        return self._doorway._send_session()

    def check(self, payload: str, task: Task, provider: str) -> None:
        """Raise :class:`OverContext` when the payload's request is over the window."""
        session = self._session()
        fit = over_context(session, payload, task, provider)
        if fit is not None:
            raise OverContext(fit, session.provider(provider).name)

    def first_part(self, original: str, sanitized: Any, spans: Any, task: Task,
                   provider: str, vault: Any = None) -> Any:
        """The plan of the beginning that fits (cut at a paragraph end)."""
        from preflight.core.send.chunked import first_part, fitter

        session = self._session()
        part = first_part(original, sanitized, spans,
                          fitter(session, task, session.provider(provider)))
        return self._doorway.prepare_send(part.original, part.sanitized, list(part.spans),
                                          task, provider, None, vault)

    def prepare_chunked(self, original: str, sanitized: Any, spans: Any, task: Task,
                        provider: str, vault: Any, progress: Any, cancel: Any) -> Any:
        from preflight.core.send.chunked import prepare_chunked

        return prepare_chunked(self._session(), original, sanitized, spans, task, provider,
                               vault=vault, memory=self._doorway.document_memory,
                               progress=progress, cancel=cancel)

    def execute_chunked(self, plan: Any, confirmation: Any, on_chunk: Any, progress: Any,
                        cancel: Any) -> Any:
        from preflight.app.answer_stream import AnswerChunk
        from preflight.core.send.chunked import run_chunked

        return run_chunked(self._session(), plan, confirmation, progress=progress,
                           cancel=cancel, on_chunk=lambda t: on_chunk(AnswerChunk(t, "")))
