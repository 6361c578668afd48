"""The time "Try to re-identify" promises is the benchmark's measurement, read from the
resource it writes; without one the window names no time at all."""

from __future__ import annotations

import json

from preflight.app import privacy_report
from preflight.app.presentation import reconstruct_idle_text


def test_the_promised_time_is_the_measured_one(tmp_path, monkeypatch):
    monkeypatch.setattr(privacy_report, "resource_path", lambda *parts: tmp_path.joinpath(*parts))
    assert privacy_report.reconstruct_timing() is None
    assert reconstruct_idle_text(None) == ("Not tried yet. It runs on this computer; you can "
                                           "cancel it.")
    target = tmp_path.joinpath(*privacy_report.TIMING_RESOURCE)
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"median_seconds": 343.6, "machine": "2 CPU cores (x86_64)"}))
    measured = privacy_report.reconstruct_timing()
    assert reconstruct_idle_text(measured) == (
        "Not tried yet: about 6 min on a typical document (measured on 2 CPU cores (x86_64)); "
        "you can cancel it.")
    target.write_text(json.dumps({"median_seconds": 41.2, "machine": "4 CPU cores (arm64)"}))
    assert "about 41 s" in reconstruct_idle_text(privacy_report.reconstruct_timing())
    target.write_text("{not json")                        # damaged: no figure, no crash
    assert privacy_report.reconstruct_timing() is None
