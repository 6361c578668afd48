"""The one background-work API of the window.

Widgets and controllers never make threads. They describe work as an *op* — a plain
function that runs off the GUI thread and never touches a widget — plus callbacks that run
on the GUI thread::

    QtOp(self, op=lambda ctx: detector.detect(text), success=self._on_spans).run()

``ctx`` (an :class:`OpContext`) carries a ``cancel`` event and ``progress``/``emit``
callables whose calls are delivered to the GUI thread as signals.

Lanes: ``"pool"`` is Qt's global thread pool (any number of parallel ops). Named lanes
(``"detect"``, ``"dx"``, ``"slm"`` …) are single-worker pools: ops on one lane run one
after another, which is what a non-thread-safe object (a ``llama_cpp.Llama``, a spaCy
pipeline) needs. :class:`Latest` implements "the latest request wins": starting a new
op in a group cancels the previous one and drops its result if it still arrives.

At exit, :func:`close_lanes` stops the machinery: no op starts any more, queued ones are
dropped, running ones are cancelled and report nothing (the window they would report to
is being torn down); :func:`wait_all` then tells whether they returned in time.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

log = logging.getLogger(__name__)

_LANES: dict[str, QThreadPool] = {}
_CLOSED = threading.Event()   # set by close_lanes(): the process is shutting down


def lane_pool(lane: str) -> QThreadPool:
    """The thread pool behind ``lane`` (created on first use)."""
    if lane == "pool":
        return QThreadPool.globalInstance()
    pool = _LANES.get(lane)
    if pool is None:
        pool = QThreadPool()
        pool.setMaxThreadCount(1)
        pool.setExpiryTimeout(-1)   # keep the owner thread: model objects stay on it
        _LANES[lane] = pool
    return pool


def _pools() -> list[QThreadPool]:
    return [QThreadPool.globalInstance(), *_LANES.values()]


def wait_all(timeout_ms: int = 5000) -> bool:
    """Wait for every lane to drain (used at shutdown and by tests)."""
    deadline = time.monotonic() + timeout_ms / 1000
    ok = True
    for pool in _pools():
        left = max(0, int((deadline - time.monotonic()) * 1000))
        ok = pool.waitForDone(left) and ok
    return ok


def close_lanes() -> int:
    """Shut the lanes for good (at exit): from now on no op starts and none reports back;
    queued ops are dropped and running ones cancelled. Returns how many were running or
    queued. A running op still returns only when its code next looks at ``ctx.cancel`` —
    a model load in native code does not; :func:`wait_all` tells whether they did."""
    _CLOSED.set()
    for pool in _pools():
        pool.clear()                # queued runnables never start
    live = list(_LIVE)
    for op in live:
        op.cancel()
    _LIVE.clear()
    return len(live)


def reopen_lanes() -> None:
    """Undo :func:`close_lanes` (a test that closed the lanes restores them)."""
    _CLOSED.clear()


@dataclass
class OpContext:
    """What an op may use: a cancel flag and thread-safe progress/partial-result hooks."""

    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Callable[[float, str], None] = lambda f, m: None
    emit: Callable[[Any], None] = lambda item: None

    def check(self) -> None:
        """Raise :class:`Cancelled` when the op was cancelled (call between steps)."""
        if self.cancel.is_set():
            from preflight.core.errors import Cancelled

            raise Cancelled()


class _Relay(QObject):
    """Lives on the GUI thread; signals emitted from the worker arrive here queued."""

    sig_done = Signal(object)
    sig_failed = Signal(object)
    sig_progress = Signal(float, str)
    sig_chunk = Signal(object)


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[], None]) -> None:
        super().__init__()
        self._fn = fn
        self.setAutoDelete(True)

    def run(self) -> None:  # noqa: D401 - Qt override
        self._fn()


_LIVE: set["QtOp"] = set()   # keeps ops (and their relays) alive until they report


class QtOp:
    """An op → success/failure unit of background work (see module docstring)."""

    def __init__(
        self,
        parent: QObject | None,
        op: Callable[[OpContext], Any],
        success: Callable[[Any], None] | None = None,
        failure: Callable[[BaseException], None] | None = None,
        *,
        lane: str = "pool",
        progress: Callable[[float, str], None] | None = None,
        on_emit: Callable[[Any], None] | None = None,
        finished: Callable[[], None] | None = None,
    ) -> None:
        self._op = op
        self._success = success
        self._failure = failure
        self._finished = finished
        self.lane = lane
        self.ctx = OpContext()
        self._relay = _Relay(parent)
        self._relay.sig_done.connect(self._on_done)
        self._relay.sig_failed.connect(self._on_failed)
        if progress is not None:
            self._relay.sig_progress.connect(progress)
            self.ctx.progress = lambda f, m: self._send(self._relay.sig_progress,
                                                        float(f), str(m))
        if on_emit is not None:
            self._relay.sig_chunk.connect(on_emit)
            self.ctx.emit = lambda item: self._send(self._relay.sig_chunk, item)
        self.dropped = False
        self.done = False

    # -- control -------------------------------------------------------------------------
    def run(self) -> "QtOp":
        """Queue the op on its lane; callbacks run later on the GUI thread. After
        :func:`close_lanes` nothing runs and nothing is called back."""
        if _CLOSED.is_set():
            self.ctx.cancel.set()
            self.dropped = self.done = True
            return self
        _LIVE.add(self)
        lane_pool(self.lane).start(_Runnable(self._work))
        return self

    def cancel(self, drop: bool = True) -> None:
        """Ask the op to stop; with ``drop`` its result is ignored even if it arrives."""
        self.ctx.cancel.set()
        if drop:
            self.dropped = True

    # -- worker side ---------------------------------------------------------------------
    @staticmethod
    def _send(signal: Any, *args: Any) -> None:
        """Emit towards the GUI thread, unless the lanes are closed: then the window and
        the relay may already be gone, and touching them from a worker can crash. A
        relay deleted with its parent (a dialog closed while its op ran) hears nothing."""
        if _CLOSED.is_set():
            return
        try:
            signal.emit(*args)
        except RuntimeError:        # "Signal source has been deleted": nobody to tell
            log.debug("an op finished after its owner was deleted")

    def _work(self) -> None:
        if self.ctx.cancel.is_set() or _CLOSED.is_set():
            from preflight.core.errors import Cancelled

            self._send(self._relay.sig_failed, Cancelled())
            return
        try:
            result = self._op(self.ctx)
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI thread
            if not isinstance(exc, Exception):
                raise
            self._send(self._relay.sig_failed, exc)
        else:
            # Boxed: some PySide6 builds mishandle the refcount of a bare None sent
            # through a Signal(object) across threads.
            self._send(self._relay.sig_done, (result,))

    # -- GUI side ------------------------------------------------------------------------
    @Slot(object)
    def _on_done(self, boxed: tuple) -> None:
        result = boxed[0]
        self._finish()
        if not self.dropped and self._success is not None:
            self._success(result)
        self._call_finished()

    @Slot(object)
    def _on_failed(self, exc: BaseException) -> None:
        self._finish()
        if not self.dropped:
            if self._failure is not None:
                self._failure(exc)
            else:
                from preflight.core.errors import Cancelled, PreflightError

                if not isinstance(exc, (Cancelled, PreflightError)):
                    log.error("background op failed: %s", type(exc).__name__,
                              exc_info=(type(exc), exc, exc.__traceback__))
        self._call_finished()

    def _finish(self) -> None:
        self.done = True
        _LIVE.discard(self)

    def _call_finished(self) -> None:
        if self._finished is not None:
            self._finished()


class Latest:
    """A group where only the newest op counts (generation ids).

    ``start()`` cancels the previous op of the group and stamps the new one with a
    generation number; ``is_current(gen)`` tells callbacks whether they are stale.
    """

    def __init__(self) -> None:
        self.generation = 0
        self.current: QtOp | None = None

    def start(self, op: QtOp) -> int:
        if self.current is not None and not self.current.done:
            self.current.cancel()
        self.generation += 1
        self.current = op
        op.run()
        return self.generation

    def next_generation(self) -> int:
        """Invalidate whatever is in flight without starting anything."""
        if self.current is not None and not self.current.done:
            self.current.cancel()
        self.generation += 1
        return self.generation

    def is_current(self, gen: int) -> bool:
        return gen == self.generation

    @property
    def busy(self) -> bool:
        return self.current is not None and not self.current.done
