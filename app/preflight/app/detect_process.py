"""PII detection in a child process, for the window (Qt-free).

Why a process and not just a thread: Presidio's regexes and parts of spaCy hold Python's
GIL for long stretches. In a background *thread* that froze the window for up to half a
second while a 20-page document was re-detected (measured by bench_gui.py); in a child
process the window's thread never waits for it. The child owns the one detector (a
single owner, as the detector needs), so the send path's re-scan goes through it too.

The child is started with "spawn" (safe with threads and Qt in the parent) on first use
and keeps its detector warm; settings travel with each call and a change rebuilds it. The
child builds its detector through :mod:`preflight.app.services`, like every other face.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from preflight.core.config import Settings
from preflight.core.errors import PreflightError
from preflight.core.types import Span

log = logging.getLogger(__name__)


class DetectorProcess:
    """``detect(text) -> list[Span]`` answered by a detector living in a child process."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.warnings: list[str] = []
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise _closed_error()
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_child_init, initargs=(os.getpid(),))
            return self._pool

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            try:
                future = self._executor().submit(fn, self.settings, *args)
            except BrokenProcessPool:
                raise
            except RuntimeError:        # submitted just as close() shut the pool down
                raise _closed_error() from None
            status, payload = future.result()
        except BrokenProcessPool:
            with self._lock:
                self._pool = None           # a fresh child next time
            raise PreflightError(
                "The PII detector stopped unexpectedly.",
                "Try again; if it keeps happening, run `preflight detect FILE` in a terminal "
                "to see the error.",
            ) from None
        if status == "error":
            cls_name, message, hint = payload
            raise _error_class(cls_name)(message, hint)
        return payload

    def warm(self) -> list[str]:
        """Start the child and load the models; returns the detector's warnings."""
        self.warnings = list(self._call(_child_warm))
        return self.warnings

    def detect(self, text: str) -> list[Span]:
        """A full pass (the send path's re-scan)."""
        return list(self._call(_child_detect, text))

    def detect_incremental(self, text: str) -> list[Span]:
        """Same result as :meth:`detect`; the child re-analyzes only the paragraphs it has
        not seen (the window's detection while the user edits)."""
        return list(self._call(_child_detect_incremental, text))

    def shutdown(self) -> None:
        """:meth:`close` for good (at exit): later calls fail instead of starting a child
        — also a call already on its way, which would otherwise start one just after."""
        with self._lock:
            self._closed = True
        self.close()

    def close(self, timeout: float = 1.0) -> None:
        """End the child at once (a detection in flight is not worth waiting for): a
        caller waiting on it gets :class:`PreflightError` straight away; the next call
        starts a fresh child (unless :meth:`shutdown` ran)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        # The dict the pool adds its children to; after shutdown() no submit can add one
        # (a submit racing with close() may have spawned the child a moment ago).
        children = getattr(pool, "_processes", None)
        children = {} if children is None else children    # not `or`: empty is the case
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in list(children.values()):
            proc.terminate()
        for proc in list(children.values()):
            proc.join(timeout)


def _closed_error() -> PreflightError:
    return PreflightError("The PII detector was closed.", "Restart Preflight.")


def _error_class(name: str) -> type[PreflightError]:
    from preflight.core import errors

    cls = getattr(errors, name, PreflightError)
    return cls if isinstance(cls, type) and issubclass(cls, PreflightError) else PreflightError


# --- child side -----------------------------------------------------------------------
def _child_init(parent_pid: int) -> None:
    """Exit when the window's process is gone, even if it died without closing us."""

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(0)

    threading.Thread(target=watch, name="preflight-parent-watch", daemon=True).start()


_DETECTOR: Any = None
_DETECTOR_SETTINGS: Settings | None = None


def _child_detector(settings: Settings) -> Any:
    global _DETECTOR, _DETECTOR_SETTINGS
    if _DETECTOR is None or _DETECTOR_SETTINGS != settings:
        from preflight.app.services import build_services

        _DETECTOR = build_services(settings).make_detector()
        _DETECTOR_SETTINGS = settings
    return _DETECTOR


def _guard(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except PreflightError as err:
        return "error", (type(err).__name__, err.message, err.hint)
    except ImportError as exc:
        return "error", ("ModelUnavailableError",
                         f"PII detection is not available ({exc}).",
                         "Run ./setup.sh run to install everything Preflight needs.")


def _child_warm(settings: Settings) -> tuple[str, Any]:
    def run() -> list[str]:
        det = _child_detector(settings)
        det.detect("Warm-up: Jane Doe wrote to jane@example.com.")
        return [str(w) for w in (getattr(det, "warnings", None) or [])]

    return _guard(run)


def _child_detect(settings: Settings, text: str) -> tuple[str, Any]:
    return _guard(lambda: _child_detector(settings).detect(text))


def _child_detect_incremental(settings: Settings, text: str) -> tuple[str, Any]:
    def run() -> list[Span]:
        det = _child_detector(settings)
        incremental = getattr(det, "detect_incremental", None)   # a Detector without it
        return incremental(text) if incremental is not None else det.detect(text)

    return _guard(run)
