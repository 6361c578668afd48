"""The one background API: results arrive on the GUI thread, stale ones are dropped,
single-worker lanes serialize, cancellation reaches the op."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QObject, QThread

from preflight.core.errors import Cancelled, InputError
from preflight.qt.qt_workers import Latest, QtOp, lane_pool, wait_all


def test_success_runs_on_gui_thread_and_op_off_it(qtbot):
    parent = QObject()
    gui = QThread.currentThread()
    seen = {}

    def op(ctx):
        seen["op_thread"] = threading.current_thread()
        return 42

    def success(v):
        seen["value"] = v
        seen["cb_gui"] = QThread.currentThread() is gui

    QtOp(parent, op, success).run()
    qtbot.waitUntil(lambda: bool("value" in seen), timeout=3000)
    assert seen["value"] == 42 and seen["cb_gui"]
    assert seen["op_thread"] is not threading.main_thread()


def test_failure_callback_gets_the_error(qtbot):
    got = []
    QtOp(None, lambda ctx: (_ for _ in ()).throw(InputError("bad", "fix")), None,
         got.append).run()
    qtbot.waitUntil(lambda: bool(got), timeout=3000)
    assert isinstance(got[0], InputError) and got[0].hint == "fix"


def test_latest_drops_stale_results(qtbot):
    group = Latest()
    results = []
    gate = threading.Event()

    def slow(ctx):
        gate.wait(2)
        return "old"

    group.start(QtOp(None, slow, results.append, lane="t-latest"))
    group.start(QtOp(None, lambda ctx: "new", results.append, lane="pool"))
    gate.set()
    wait_all(3000)
    qtbot.wait(50)
    assert results == ["new"]


def test_single_worker_lane_serializes():
    active, peak = [0], [0]
    lock = threading.Lock()

    def op(ctx):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1

    for _ in range(5):
        QtOp(None, op, lane="t-serial").run()
    assert lane_pool("t-serial").waitForDone(5000)
    assert peak[0] == 1


def test_cancel_reaches_the_op_and_reports_cancelled(qtbot):
    started = threading.Event()
    failures = []

    def op(ctx):
        started.set()
        while True:
            ctx.check()
            time.sleep(0.005)

    q = QtOp(None, op, None, failures.append, lane="t-cancel").run()
    assert started.wait(2)
    q.cancel(drop=False)
    qtbot.waitUntil(lambda: bool(failures), timeout=3000)
    assert isinstance(failures[0], Cancelled)


def test_progress_and_emit_are_delivered(qtbot):
    prog, chunks, done = [], [], []

    def op(ctx):
        ctx.progress(0.5, "half")
        ctx.emit("a")
        ctx.emit("b")
        return "ok"

    QtOp(None, op, done.append, progress=lambda f, m: prog.append((f, m)),
         on_emit=chunks.append).run()
    qtbot.waitUntil(lambda: bool(done), timeout=3000)
    assert prog == [(0.5, "half")] and chunks == ["a", "b"]


def test_closed_lanes_cancel_running_ops_and_start_nothing(qtbot):
    """At exit: a running op is cancelled and reports nothing, a queued or new one never
    runs (the window they would call back into is being torn down)."""
    from preflight.qt.qt_workers import close_lanes, reopen_lanes

    started, calls, ran_later = threading.Event(), [], []
    seen_cancel = []

    def running(ctx):
        started.set()
        seen_cancel.append(ctx.cancel.wait(3))
        return "late"

    QtOp(None, running, calls.append, calls.append, lane="t-close").run()
    queued = QtOp(None, lambda ctx: ran_later.append("queued"), calls.append, lane="t-close")
    queued.run()
    assert started.wait(3)
    try:
        assert close_lanes() >= 2      # ours; ops left by earlier tests may add to it
        fresh = QtOp(None, lambda ctx: ran_later.append("new"), calls.append).run()
        assert wait_all(3000)
        qtbot.wait(100)
        assert seen_cancel == [True]
        assert calls == [] and ran_later == []
        assert fresh.done and fresh.ctx.cancel.is_set()
    finally:
        reopen_lanes()
    QtOp(None, lambda ctx: "again", calls.append).run()
    qtbot.waitUntil(lambda: calls == ["again"], timeout=3000)
