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
