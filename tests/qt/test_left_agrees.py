"""One list of what is left: when the plan's fresh detection of the payload (the re-scan
run on Send) blocks a value the window's live count did not see, the banner and "PII left
in payload" show it as the confirmation opens — the main window and the confirmation
never disagree about what is left (issue 48, item 5)."""

from __future__ import annotations

import re

import ports
from ports import SAMPLE
from preflight.core.types import Category, Span
from windows import confirm_plans

FRESH = "merger plan"      # what only the payload's fresh detection reads as a secret


def test_the_window_counts_what_the_confirmation_blocks(qtbot, window, monkeypatch):
    win = window
    # placeholders: the payload holds the planted phrase as written (d_X may draw another
    # word for it, and then no re-scan finds it)
    box = win.controls.policy
    qtbot.waitUntil(lambda: bool(box.findData("placeholder") >= 0), timeout=3000)
    box.setCurrentIndex(box.findData("placeholder"))
    win.original.setPlainText(SAMPLE)
    qtbot.waitUntil(lambda: bool(win.doc.detections_done
                                 and win.payload.fresh_result is not None
                                 and win.policies.policy.name == "placeholder"), timeout=5000)
    left_before = win.assessment.pii_left.text()
    plain = ports.PatternDetector.detect

    def detect(self, text):            # the send's re-scan: one more validated value
        spans = plain(self, text)
        spans += [Span(m.start(), m.end(), "SECRET", Category.SECRET, 1.0, "fake",
                       "A password") for m in re.finditer(FRESH, text)]
        return sorted(spans, key=lambda s: s.start)

    monkeypatch.setattr(ports.PatternDetector, "detect", detect)
    shown = confirm_plans(win, accept=False)
    win.answers.prepare_send()
    qtbot.waitUntil(lambda: bool(shown), timeout=5000)
    blocking = [f for f in shown[-1].plan.blocking if f.kind != "degraded"]
    assert FRESH in {f.value for f in blocking}        # the confirmation lists it
    summary = win.leave_banner.summary
    assert {i.value for i in summary.leaving} == {f.value for f in blocking}
    assert len(summary.leaving) == len(blocking)
    assert re.search(rf"\b{len(blocking)}\b", win.assessment.pii_left.text()), (
        left_before, win.assessment.pii_left.text())
    assert "will leave your computer" in win.leave_banner.text.text()
