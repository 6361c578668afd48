"""PII detection in a child process, for the window (Qt-free).

Why a process and not just a thread: Presidio's regexes and parts of spaCy hold Python's
GIL for long stretches. In a background *thread* that froze the window for up to half a
second while a 20-page document was re-detected (measured by bench_gui.py); in a child
process the window's thread never waits for it. The child owns the one detector (a
single owner, as the detector needs), so the send path's re-scan goes through it too.

The child is started with "spawn" (safe with threads and Qt in the parent) on first use
and keeps its detector warm; settings travel with each call and a change rebuilds it. The
child builds its detector through :mod:`preflight.app.services`, like every other face.

Progress and Cancel cross with the child: each call has a number; the child puts
``(number, share, words)`` on a queue it was started with, which a thread of the parent
hands to that call's ``progress``; the parent's Cancel writes the call's number into a
shared integer the detector reads between detection windows (a 1 MB paste stops within
one window, and the child and its warm detector stay).
"""

from __future__ import annotations

import inspect
import itertools
import logging
import multiprocessing
import os
import queue
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from preflight.core.config import Settings
from preflight.core.errors import Cancelled, PreflightError
from preflight.core.types import Span

log = logging.getLogger(__name__)


class DetectorProcess:
    """``detect(text) -> list[Span]`` answered by a detector living in a child process."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.warnings: list[str] = []
        self._pool: ProcessPoolExecutor | None = None
        self._channel: _Channel | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._numbers = itertools.count(1)

    def _executor(self) -> tuple[ProcessPoolExecutor, _Channel]:
        with self._lock:
            if self._closed:
                raise _closed_error()
            if self._pool is None:
                ctx = multiprocessing.get_context("spawn")
                self._channel = _Channel(ctx)
                self._pool = ProcessPoolExecutor(
                    max_workers=1, mp_context=ctx, initializer=_child_init,
                    initargs=(os.getpid(), self._channel.queue, self._channel.cancelled))
            assert self._channel is not None
            return self._pool, self._channel

    def _call(self, fn: Any, *args: Any, progress: Progress | None = None,
              cancel: threading.Event | None = None) -> Any:
        number = next(self._numbers)
        channel: _Channel | None = None
        try:
            try:
                pool, channel = self._executor()
                if progress is not None:
                    channel.listen(number, progress)
                future = pool.submit(fn, self.settings, number, *args)
            except BrokenProcessPool:
                raise
            except RuntimeError:        # submitted just as close() shut the pool down
                raise _closed_error() from None
            while True:
                try:
                    status, payload = future.result(timeout=None if cancel is None else 0.1)
                    break
                except FutureTimeout:
                    if cancel is not None and cancel.is_set():
                        channel.cancel(number)      # the child stops within one window
                        future.cancel()             # or never starts it
                        raise _stopped() from None
        except BrokenProcessPool:
            with self._lock:
                self._pool = None           # a fresh child next time
            raise PreflightError(
                "The PII detector stopped unexpectedly.",
                "Try again; if it keeps happening, run `preflight detect FILE` in a terminal "
                "to see the error.",
            ) from None
        finally:
            if channel is not None:
                channel.forget(number)
        if status == "error":
            cls_name, message, hint = payload
            raise _error_class(cls_name)(message, hint)
        return payload

    def warm(self) -> list[str]:
        """Start the child and load the models; returns the detector's warnings."""
        self.warnings = list(self._call(_child_warm))
        return self.warnings

    def detect(self, text: str, *, progress: Progress | None = None,
               cancel: threading.Event | None = None) -> list[Span]:
        """A full pass (the send path's re-scan). ``progress(share, words)`` and
        ``cancel`` as :meth:`PiiDetector.detect <preflight.core.pii.detector.PiiDetector.detect>`
        takes them."""
        return list(self._call(_child_detect, text, False, progress=progress, cancel=cancel))

    def detect_incremental(self, text: str, *, progress: Progress | None = None,
                           cancel: threading.Event | None = None) -> list[Span]:
        """Same result as :meth:`detect`; the child re-analyzes only the paragraphs it has
        not seen (the window's detection while the user edits)."""
        return list(self._call(_child_detect, text, True, progress=progress, cancel=cancel))

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
            channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
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


Progress = Callable[[float, str], None]


class _Channel:
    """The parent's side of a child's progress queue and Cancel (see the module doc)."""

    def __init__(self, ctx: Any) -> None:
        self.queue = ctx.Queue()
        self.cancelled = ctx.Value("q", 0, lock=False)   # the number of a stopped call
        self._listeners: dict[int, Progress] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def listen(self, number: int, progress: Progress) -> None:
        with self._lock:
            self._listeners[number] = progress
            if self._thread is None:
                self._thread = threading.Thread(target=self._relay, daemon=True,
                                                name="preflight-detect-progress")
                self._thread.start()

    def forget(self, number: int) -> None:
        with self._lock:
            self._listeners.pop(number, None)

    def cancel(self, number: int) -> None:
        self.cancelled.value = number

    def close(self) -> None:
        self._closed.set()

    def _relay(self) -> None:
        while not self._closed.is_set():
            try:
                number, share, words = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError, ValueError):     # the queue went with its child
                return
            with self._lock:
                progress = self._listeners.get(number)
            if progress is not None:
                try:
                    progress(share, words)
                except Exception:  # noqa: BLE001 - a listener's failure stops no detection
                    log.exception("detection progress listener failed")


def _stopped() -> Cancelled:
    return Cancelled("Detection stopped by you.",
                     "Nothing was detected, so nothing can be sent yet.")


def _closed_error() -> PreflightError:
    return PreflightError("The PII detector was closed.", "Restart Preflight.")


def _error_class(name: str) -> type[PreflightError]:
    from preflight.core import errors

    cls = getattr(errors, name, PreflightError)
    return cls if isinstance(cls, type) and issubclass(cls, PreflightError) else PreflightError


# --- child side -----------------------------------------------------------------------
_PROGRESS: Any = None       # the queue to the parent
_CANCELLED: Any = None      # the number of the call the parent stopped


def _child_init(parent_pid: int, progress: Any = None, cancelled: Any = None) -> None:
    """Exit when the window's process is gone, even if it died without closing us."""
    global _PROGRESS, _CANCELLED
    _PROGRESS, _CANCELLED = progress, cancelled

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


class _StopFlag:
    """The parent's Cancel of call ``number``, as an event the detector reads."""

    def __init__(self, number: int) -> None:
        self.number = number

    def is_set(self) -> bool:
        return _CANCELLED is not None and _CANCELLED.value == self.number


def _reporter(number: int) -> Progress | None:
    if _PROGRESS is None:
        return None
    return lambda share, words: _PROGRESS.put((number, share, words))


def _child_warm(settings: Settings, number: int = 0) -> tuple[str, Any]:
    def run() -> list[str]:
        det = _child_detector(settings)
        det.detect("Warm-up: Jane Doe wrote to jane@example.com.")
        return [str(w) for w in (getattr(det, "warnings", None) or [])]

    return _guard(run)


def _child_detect(settings: Settings, number: int, text: str, reuse: bool
                  ) -> tuple[str, Any]:
    def run() -> list[Span]:
        det = _child_detector(settings)
        incremental = getattr(det, "detect_incremental", None) if reuse else None
        fn = incremental if incremental is not None else det.detect
        if "progress" not in inspect.signature(fn).parameters:   # the port's bare detect
            return fn(text)
        return fn(text, progress=_reporter(number), cancel=_StopFlag(number))

    return _guard(run)
