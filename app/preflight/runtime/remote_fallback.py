"""The company assessor with the in-process model behind it.

:class:`FallbackSLM` is the assessor's :class:`~preflight.core.ports.LanguageModel` when
an assessor endpoint is configured: every call goes to the company server
(:class:`~preflight.runtime.remote_slm.RemoteSLM`); when it is down, times out or refuses,
the call runs on the in-process model instead and :meth:`FallbackSLM.place` says so ("…
company assessor at URL unreachable"). A server found down is not asked again for
``retry_after`` seconds, so one assessment pays the connect timeout once, not per call.
A server that cannot score prompt tokens keeps answering; only perplexity stays local.

The audit side: each change of where the assessment runs is logged (the endpoint and the
reason, never text).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from preflight.core.assessor_endpoint import AssessorPlace
from preflight.core.errors import Cancelled
from preflight.core.ports import LanguageModel
from preflight.core.tasks import Task
from preflight.runtime.remote_slm import RemoteUnavailable, RemoteUnsupported

log = logging.getLogger(__name__)


class FallbackSLM:
    """``remote`` first, ``local`` when it fails (see the module doc).

    Args:
        remote: the company server's model (a RemoteSLM).
        local: the in-process model (a LocalSLM, or a Deferred one: loaded only if used).
        endpoint: the URL shown to the user.
        note: what stays on this computer on purpose (shown with the place).
    """

    def __init__(self, remote: LanguageModel, local: LanguageModel, endpoint: str, *,
                 note: str = "", retry_after: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.remote, self.local, self.endpoint = remote, local, endpoint
        self._note, self._retry_after, self._clock = note, retry_after, clock
        self._lock = threading.Lock()
        self._down_until = float("-inf")
        self._reason: str | None = None       # why the last call ran locally
        self._ppl_reason: str | None = None   # why perplexity always runs locally
        self._logged: tuple[str, str | None] | None = None

    # -- LanguageModel -----------------------------------------------------------------
    def run(self, task: Task, text: str, on_token: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> str:
        return self._call(lambda m: m.run(task, text, on_token=on_token, cancel=cancel))

    def perplexity(self, text: str) -> float:
        if self._ppl_reason is not None:
            return self.local.perplexity(text)
        try:
            return self._call(lambda m: m.perplexity(text))
        except RemoteUnsupported as err:
            with self._lock:
                self._ppl_reason = err.reason
            log.warning("company assessor at %s: %s; perplexity runs on this computer",
                        self.endpoint, err.reason)
            return self.local.perplexity(text)

    # -- where it ran ------------------------------------------------------------------
    def place(self) -> AssessorPlace:
        """Where the latest call ran (and why not on the company assessor)."""
        with self._lock:
            if self._reason is not None:
                return AssessorPlace("local", self.endpoint, self._reason)
            notes = [self._note] if self._note else []
            if self._ppl_reason is not None:
                notes.append(f"Perplexity was computed on this computer (the server "
                             f"{self._ppl_reason}).")
            return AssessorPlace("company", self.endpoint, None, " ".join(notes))

    # -- internals ---------------------------------------------------------------------
    def _call(self, fn: Callable[[Any], Any]) -> Any:
        if self._clock() >= self._down_until:
            try:
                out = fn(self.remote)
            except RemoteUnsupported:
                raise
            except RemoteUnavailable as err:
                with self._lock:
                    self._down_until = self._clock() + self._retry_after
                    self._reason = err.reason
                self._audit("local", err.reason)
            except Cancelled:
                raise
            else:
                with self._lock:
                    self._reason = None
                self._audit("company", None)
                return out
        return fn(self.local)

    def _audit(self, where: str, reason: str | None) -> None:
        """Log each change of place once (endpoint and reason only)."""
        if self._logged == (where, reason):
            return
        self._logged = (where, reason)
        if where == "company":
            log.info("assessment runs on the company assessor at %s", self.endpoint)
        else:
            log.warning("assessment runs on this computer: company assessor at %s %s",
                        self.endpoint, reason)
