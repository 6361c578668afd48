"""History shows local times, readable overrides and what is stored; the confirmation
dialog wraps a long endpoint instead of cutting it off."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from ports import real_plan
from PySide6.QtWidgets import QLabel

from preflight.core.send.masking import mask_value, override_label
from preflight.qt.qt_dialogs import QtConfirmSendDialog
from preflight.qt.qt_history import QtHistoryDialog


def test_masks_keep_values_unreadable():
    assert override_label("EMAIL_ADDRESS", "jane.doe@example.com") == (
        "EMAIL_ADDRESS j…@…com allowed")
    assert mask_value("PERSON", "Priya Raman") == "P… R…"
    assert mask_value("PASSWORD", "Tulip-Harbor-2291") == "•••• (17 characters)"
    assert mask_value("PHONE_NUMBER", "+31 6 4821 7730") == "+…30"


def test_history_rows_read_in_local_time_with_readable_overrides(qtbot):
    at = "2025-03-04T08:12:44.120+00:00"
    rows = [{"id": 1, "created_at": at, "kind": "send", "status": "done",
             "payload": b'{"messages": []}', "answer_raw": "Hi <PERSON_1>.",
             "answer_restored": None,
             "overrides": json.dumps([override_label("EMAIL_ADDRESS", "j@x.com"),
                                      "email_address-b88c981c34"])}]
    dlg = QtHistoryDialog(rows)
    qtbot.addWidget(dlg)
    local = datetime.fromisoformat(at).astimezone().strftime("%d %b %Y, %H:%M:%S")
    assert dlg.table.item(0, 0).text() == local and "T" not in local
    detail = dlg.detail.toPlainText()
    assert "EMAIL_ADDRESS j…@…com allowed" in detail
    assert "an item the re-scan flagged (email_address-b88c981c34)" in detail
    assert "Hi <PERSON_1>." in detail and "stored only with the original text" in detail
    assert datetime.fromisoformat(at).tzinfo == timezone.utc


def test_confirmation_wraps_a_long_endpoint(qtbot, rig):
    base = ("https://my-very-long-resource-name.openai.azure.com/openai/deployments/"
            "gpt-4o-mini-production-eu-west")
    plan = real_plan(rig, base, "Jane Doe wrote about the plan.")
    url = plan.request.url
    assert url.startswith(base) and len(url) > 100
    dlg = QtConfirmSendDialog(plan)
    qtbot.addWidget(dlg)
    dlg.resize(520, 600)
    dlg.show()
    head = dlg.findChild(QLabel, "confirmHead")
    assert head.wordWrap()
    assert head.width() <= dlg.width()
    assert head.sizeHint().width() < len(url) * head.fontMetrics().averageCharWidth()
    assert head.heightForWidth(head.width()) > head.fontMetrics().height() * 2
