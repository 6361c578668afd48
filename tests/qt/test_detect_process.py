"""The window's detector runs in a child process: same spans as in-process, settings
follow, and the GUI process's GIL is never held by it."""

from __future__ import annotations

import pytest

from preflight.core.config import DetectionSettings
from preflight.qt.detect_process import DetectorProcess

pytestmark = pytest.mark.slow

TEXT = "Jane Doe wrote to jane.doe@example.com about Project Osprey."


def test_child_detects_like_in_process_and_follows_settings():
    from preflight.core.pii.detector import PiiDetector

    proc = DetectorProcess(DetectionSettings())
    try:
        proc.warm()
        spans = proc.detect(TEXT)
        assert spans == PiiDetector(DetectionSettings()).detect(TEXT)
        assert {s.type for s in spans} >= {"PERSON", "EMAIL_ADDRESS"}
        proc.settings = DetectionSettings(deny_list=["Osprey"])
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
