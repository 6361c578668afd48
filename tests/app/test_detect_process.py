"""The window's detector runs in a child process: same spans as the in-process detector
built by the composition root, and settings follow."""

from __future__ import annotations

import pytest

from preflight.app.detect_process import DetectorProcess
from preflight.app.services import build_services
from preflight.core.config import DetectionSettings, Settings

pytestmark = pytest.mark.slow

TEXT = "Jane Doe wrote to jane.doe@example.com about Project Osprey."


def test_child_detects_like_in_process_and_follows_settings():
    proc = DetectorProcess(Settings())
    try:
        proc.warm()
        spans = proc.detect(TEXT)
        assert spans == build_services(Settings()).make_detector().detect(TEXT)
        assert {s.type for s in spans} >= {"PERSON", "EMAIL_ADDRESS"}
        edited = TEXT + "\n\nJohn Smith replied."
        assert proc.detect_incremental(TEXT) == spans
        assert proc.detect_incremental(edited) == proc.detect(edited)
        proc.settings = Settings(detection=DetectionSettings(deny_list=["Osprey"]))
        values = [TEXT[s.start:s.end] for s in proc.detect(TEXT)]
        assert "Osprey" in values
    finally:
        proc.close()


def test_closed_process_restarts_on_next_call():
    proc = DetectorProcess()
    try:
        assert proc.detect("Call Jane Doe.")
        proc.close()
        assert proc.detect("Call Jane Doe.")
    finally:
        proc.close()


def _long_text(chars: int) -> str:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))
    from _long_doc import long_document

    return long_document(chars)


def test_a_long_detection_reports_progress_and_stops_on_cancel_keeping_the_child():
    import threading

    from preflight.core.errors import Cancelled

    text = _long_text(150_000)
    proc = DetectorProcess(Settings())
    try:
        proc.warm()
        child = set(proc._pool._processes)
        heard: list[tuple[float, str]] = []
        cancel = threading.Event()

        def progress(share: float, words: str) -> None:
            heard.append((share, words))
            if share > 0.05:
                cancel.set()                     # the user's Cancel, mid-way

        with pytest.raises(Cancelled):
            proc.detect_incremental(text, progress=progress, cancel=cancel)
        assert heard and "passages read" in heard[-1][1]
        shares = [s for s, _ in heard]
        assert shares == sorted(shares) and shares[-1] < 1
        # the same child, warm, answers the next call in full
        done: list[float] = []
        spans = proc.detect("Jane Doe wrote to jane.doe@example.com.",
                            progress=lambda s, w: done.append(s))
        assert {s.type for s in spans} >= {"PERSON", "EMAIL_ADDRESS"}
        assert set(proc._pool._processes) == child
    finally:
        proc.close()
