"""Window speed: time to a usable window, slider-to-preview latency, typing fluidity.

    QT_QPA_PLATFORM=offscreen .venv/bin/python -m preflight_eval.bench_gui [--runs 5]

Prints medians (and p95/max where a tail matters) as JSON lines. Uses the REAL core
(detector, d_X over SmolLM2's embedding) with a throw-away PREFLIGHT_HOME.

1. startup: a fresh interpreter runs ``preflight.qt.qt_app`` to the first event-loop turn
   after ``show()`` (the window is drawn and accepts input; models load afterwards in the
   background). Wall time from ``Popen`` to the READY line, median of ``--runs``.
2. slider: a 1,000-token document is prepared once for d_X; then the ε slider is set to
   ``--steps`` random positions; each sample is the time from ``setValue`` to the preview
   pane holding the new text (ops, signal delivery and rendering included).
3. typing: a 20-page document (≈10,000 words, detections highlighted) gets ``--keys``
   keystrokes at 20 ms intervals while re-detection runs for real in the background;
   measures the GUI thread's per-keystroke handling time and the longest event-loop
   stall (a 5 ms heartbeat timer records gaps).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

SENTENCES = [
    "Jane Doe met Max Power in Berlin to discuss the merger of the two companies.",
    "Please write to jane.doe@example.com or call +1 415 555 0134 before Friday.",
    "The board wants a short summary of the risks and the expected costs of the plan.",
    "Our team reviewed the quarterly figures and found the margins lower than forecast.",
    "The contract with Acme Corp runs until March and can be extended by one year.",
    "Several customers asked for a cheaper tier, which marketing wants to test in spring.",
]


def document(words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    out, n = [], 0
    while n < words:
        s = rng.choice(SENTENCES)
        out.append(s)
        n += len(s.split())
        if rng.random() < 0.15:
            out.append("\n\n")
    return " ".join(out)


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def bench_startup(runs: int) -> dict:
    code = (
        "import time,sys\n"
        "from PySide6.QtCore import QTimer\n"
        "from preflight.qt import qt_app\n"
        "app = qt_app.create_app()\n"
        "w = qt_app.build_window()\n"
        "w.show()\n"
        "QTimer.singleShot(0, w.start)\n"
        "def ready():\n"
        "    print('READY', flush=True)\n"
        "    app.quit()\n"
        "QTimer.singleShot(0, ready)\n"
        "app.exec()\n"
        "w.controllers.cancel_all()\n"
        "w.app.shutdown()\n"
        "import os; os._exit(0)\n"
    )
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        for line in proc.stdout:
            if line.startswith("READY"):
                times.append(time.perf_counter() - t0)
                break
        proc.wait(60)
    return {"bench": "startup_to_usable_window_s", "runs": len(times),
            "median": round(statistics.median(times), 3), "max": round(max(times), 3)}


def _wait(app, pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        app.processEvents()
        if pred():
            return True
        time.sleep(0.0005)
    return False


def bench_slider(steps: int, refine: bool = True) -> dict:
    """Slider → preview latency. ``refine``: the window as users run it, the refined
    (SLM) prediction re-running in the background after each move and competing for the
    two cores; off: the preview path alone (its lower bound)."""
    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_app import build_window, create_app

    app = create_app()
    win = build_window(WindowDoorway(), theme="light")
    if not refine:
        win.utility._refine_timer.setInterval(10**8)  # measure the preview path alone
    win.show()
    win.start()
    d = win.payload
    text = document(800)                           # ≈1,000 SmolLM2 tokens
    win.original.setPlainText(text)
    t0 = time.perf_counter()
    ok = _wait(app, lambda: win.policies.epsilon_range is not None and d.prepared is not None
               and win.doc.detections_done and d.result is not None
               and d.prepared_key == d._prep_key(), 600)
    prep_s = time.perf_counter() - t0
    if not ok:
        win.app.shutdown()
        return {"bench": "slider_to_preview_ms", "error": "d_X did not become ready"}
    dx = d.result.sanitized.report.dx
    tokens = dx.tokens_total if dx is not None else None
    rng = random.Random(1)
    lat = []
    for _ in range(steps):
        v = rng.randrange(0, 1001)
        if v == win.controls.slider.value():
            continue
        before = d.previews_done
        t = time.perf_counter()
        win.controls.slider.setValue(v)
        target = win.controls.epsilon_for(v)

        def shown():
            r = d.result
            return (d.previews_done > before and r is not None and r.epsilon is not None
                    and abs(r.epsilon - target) < 1e-9 * max(1, target)
                    and win.preview.sanitized is r.sanitized)
        if _wait(app, shown, 10):
            win.preview.viewport().repaint()       # include painting the new text
            lat.append((time.perf_counter() - t) * 1000)
        _wait(app, lambda: False, 0.03)            # let the fast prediction etc. run
    win.controllers.cancel_all()
    win.close()
    win.app.shutdown()
    return {"bench": "slider_to_preview_ms", "refinement": "on" if refine else "off",
            "document_tokens": tokens,
            "steps": len(lat), "median": round(statistics.median(lat), 1),
            "p95": round(pct(lat, 0.95), 1), "max": round(max(lat), 1),
            "first_preparation_s_cold_incl_model_load": round(prep_s, 2)}


def bench_typing(keys: int) -> dict:
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtTest import QTest

    from preflight.app.window_doorway import WindowDoorway
    from preflight.qt.qt_app import build_window, create_app

    app = create_app()
    backend = WindowDoorway()
    win = build_window(backend, theme="light")
    win.show()
    win.start()
    d = win.doc
    win.policies.set_policy("placeholder")          # keep d_X preparation out of this one
    text = document(10_000, seed=2)                 # ≈20 pages
    win.original.setPlainText(text)
    _wait(app, lambda: d.detections_done and win.payload.result is not None, 600)
    n_spans = len(d.spans)
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.elapsed()]

    def beat():
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    hb = QTimer()
    hb.setInterval(5)
    hb.timeout.connect(beat)
    hb.start()
    cur = win.original.textCursor()
    cur.setPosition(len(text) // 2)
    win.original.setTextCursor(cur)
    per_key = []
    detections_before = d.detections_done
    for i in range(keys):
        ch = "abcdefghij "[i % 11]
        t = time.perf_counter()
        QTest.keyClick(win.original, ch)
        per_key.append((time.perf_counter() - t) * 1000)
        if i % 40 == 39:
            _wait(app, lambda: False, 0.6)         # a pause: debounced re-detection runs
        else:
            _wait(app, lambda: False, 0.02)
    _wait(app, lambda: d.detections_done > detections_before, 60)
    hb.stop()
    win.controllers.cancel_all()
    win.close()
    backend.shutdown()
    return {"bench": "typing_20_pages", "words": len(text.split()), "spans": n_spans,
            "keys": keys, "detections_while_typing": d.detections_done - detections_before,
            "key_handling_ms_median": round(statistics.median(per_key), 2),
            "key_handling_ms_p95": round(pct(per_key, 0.95), 2),
            "event_loop_gap_ms_median": round(statistics.median(gaps), 1),
            "event_loop_gap_ms_p99": round(pct(gaps, 0.99), 1),
            "event_loop_gap_ms_max": round(max(gaps), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description="Preflight window benchmarks (medians).")
    ap.add_argument("--runs", type=int, default=5, help="startup runs")
    ap.add_argument("--steps", type=int, default=40, help="slider positions")
    ap.add_argument("--keys", type=int, default=200, help="keystrokes")
    ap.add_argument("--only", choices=("startup", "slider", "typing"))
    ap.add_argument("--refine", choices=("on", "off", "both"), default="both",
                    help="slider: with the background refined prediction, without, or both")
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("PREFLIGHT_HOME", tempfile.mkdtemp(prefix="preflight-bench-"))
    logging_off()
    if args.only in (None, "startup"):
        print(json.dumps(bench_startup(args.runs)), flush=True)
    if args.only in (None, "slider"):
        for mode in (("on", "off") if args.refine == "both" else (args.refine,)):
            print(json.dumps(bench_slider(args.steps, refine=mode == "on")), flush=True)
    if args.only in (None, "typing"):
        print(json.dumps(bench_typing(args.keys)), flush=True)
    os._exit(0)        # background model threads (llama.cpp, torch) need no orderly exit


def logging_off() -> None:
    import logging

    logging.disable(logging.WARNING)


if __name__ == "__main__":
    raise SystemExit(main())
