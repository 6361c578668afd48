"""The send confirmation says what is true, in readable text: values with quotes and
markup shown as written (never `&#x27;`), the headers as they will leave (no key header
when no key is sent), earlier sends in local time."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from ports import real_plan
from PySide6.QtWidgets import QLabel

from preflight.core.send.audit import PriorSend
from preflight.core.send.plan import Finding
from preflight.core.types import Category
from preflight.qt.qt_dialogs import QtConfirmSendDialog

UTC_STAMP = "2026-03-04T08:12:44.120+00:00"


def _texts(dlg) -> list[str]:
    return [lb.text() for lb in dlg.findChildren(QLabel)]


def test_values_headers_and_times_read_as_they_are(qtbot, rig):
    odd = [Finding("n-1", "PERSON", Category.DIRECT_IDENTIFIER, "Seán O'Neil", "document",
                   0, 11, 0.6, False, "a name the re-scan found", "note"),
           Finding("n-2", "ORGANIZATION", Category.QUASI_IDENTIFIER, "<b>Smith & Sons</b>",
                   "document", 0, 5, 0.6, True, "left as written", "leak")]
    plan = real_plan(rig, "http://127.0.0.1:9/v1", findings=odd)
    plan = replace(plan, prior_sends=(PriorSend(3, UTC_STAMP, "loopback", "placeholder",
                                                None, "exact", 1.0),))
    # a server on this computer: no key leaves, so no key header is shown
    dlg = QtConfirmSendDialog(plan, headers=plan.request.display_headers(with_auth=False))
    qtbot.addWidget(dlg)
    shown = "\n".join(_texts(dlg))
    assert "&#x27;" not in shown and "&amp;" not in shown
    note = next(lb for lb in dlg.findChildren(QLabel) if "Seán" in lb.text())
    assert "Seán O'Neil" in note.text()
    row = next(lb for lb in dlg.findChildren(QLabel) if "Smith" in lb.text())
    assert "<b>Smith & Sons</b>" in row.text()           # the value, not bold markup
    assert "Authorization" not in shown and "API key" not in shown
    local = datetime.fromisoformat(UTC_STAMP).astimezone().strftime("%d %b %Y, %H:%M")
    assert local in shown and UTC_STAMP not in shown


def test_the_window_shows_the_key_header_only_when_a_key_is_sent(qtbot, rig):
    door = rig.doorway()
    plan = real_plan(rig, "http://127.0.0.1:9/v1")
    assert not any(k == "Authorization" for k, _v in door.headers_as_sent(plan))
    remote = real_plan(rig, "https://api.example.com/v1")
    # no key stored for it: the send would stop before anything leaves, so none is shown
    assert not any(k == "Authorization" for k, _v in door.headers_as_sent(remote))
    door.set_key(remote.provider, "sk-test-0123456789abcdef", remember=False)
    sent = dict(door.headers_as_sent(remote))
    assert sent["Authorization"] == "Bearer <API key kept in memory for this session " \
                                    "(not saved)>"
    door.shutdown()
