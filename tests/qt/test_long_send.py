"""Long documents in the real window (fake ports, loopback provider): a payload over the
provider's context window is refused before the re-scan with a choice; the chunked path
shows its progress, confirms once (the plan lists its requests) and sends every part; the
first part sends one request; the confirmation's Protect all / Accept all."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from windows import open_window

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _long_doc import long_document  # noqa: E402
from ports import window_settings  # noqa: E402

from preflight.app.long_documents import CHUNKED, FIRST_PART  # noqa: E402
from preflight.qt.long_send import QtLongDocumentDialog  # noqa: E402
from preflight.qt.qt_dialogs import QtConfirmSendDialog  # noqa: E402

#: Jane Doe and an e-mail address (the fake detector's names) on every tenth paragraph of
#: real text, so every part carries something to protect.
PEOPLE = "Jane Doe (jane.doe@example.com) reviewed this section."


def _text(chars: int) -> str:
    paras = long_document()[:chars].split("\n\n")[:-1]
    return "\n\n".join(p if i % 10 else f"{PEOPLE} {p}" for i, p in enumerate(paras))


@pytest.fixture
def small_window(qtbot, rig, provider):
    settings = window_settings(provider.base_url, policy="placeholder")
    settings.providers[0].context_tokens = 4096
    win = open_window(qtbot, rig.doorway(settings))
    yield win


def _ready(qtbot, win, text):
    win.original.setPlainText(text)
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and win.send_button.isEnabled()), timeout=60_000)


def _accept_all(dlg) -> bool:
    if dlg.overrides:
        dlg.accept_all.click()
    return True


def _decide(choice, seen):
    def pick(dlg):
        seen.append(dlg)
        return choice
    return pick


def test_chunked_summary_from_the_window(qtbot, small_window, provider):
    win = small_window
    _ready(qtbot, win, _text(60_000))
    seen, confirmed, statuses = [], [], []
    win.controllers.long.auto_choice = _decide(CHUNKED, seen)
    win.controllers.long.sig_status.connect(statuses.append)
    win.answers.sig_progress.connect(statuses.append)

    def confirm(dlg):
        confirmed.append(dlg)
        if dlg.overrides:
            dlg.accept_all.click()
        return True

    win.auto_confirm = confirm
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(confirmed), timeout=120_000)
    assert isinstance(seen[0], QtLongDocumentDialog)
    assert "4,096" in seen[0].head.text()            # the provider's window, in words
    dlg = confirmed[0]
    requests = dlg.plan.requests
    assert requests >= 4 and dlg.findChild(object, "chunkedPlan") is not None
    assert provider.bodies == [] or len(provider.bodies) <= requests
    qtbot.waitUntil(lambda: bool(not win.answers.busy and len(provider.bodies) == requests),
                    timeout=120_000)
    assert any("Checking part 2 of" in s for s in statuses)
    assert any("Summarizing part 2 of" in s for s in statuses)
    assert not any(b"Jane Doe" in b for b in provider.bodies)
    assert win.answer.restored.toPlainText().strip()
    qtbot.wait(200)
    shown = win.status_text.text()                       # no step left once it ended
    assert not shown or shown not in statuses, shown


def test_first_part_from_the_window_sends_one_request(qtbot, small_window, provider):
    win = small_window
    text = _text(60_000)
    _ready(qtbot, win, text)
    seen, confirmed = [], []
    win.controllers.long.auto_choice = _decide(FIRST_PART, seen)
    failed = []
    win.answers.sig_failed.disconnect()
    win.answers.sig_failed.connect(lambda m, h: failed.append((m, h)))
    win.auto_confirm = lambda dlg: confirmed.append(dlg) or _accept_all(dlg)
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(failed) or bool(provider.bodies) and not win.answers.busy,
                    timeout=60_000)
    assert not failed
    assert len(provider.bodies) == 1 and len(provider.bodies[0]) < len(text)
    assert not hasattr(confirmed[0].plan, "requests")


def test_over_the_window_nothing_is_sent_when_cancelled(qtbot, small_window, provider):
    win = small_window
    _ready(qtbot, win, _text(60_000))
    seen = []
    win.controllers.long.auto_choice = _decide(None, seen)
    shown = []
    win.auto_confirm = lambda dlg: shown.append(dlg) or True
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(seen), timeout=60_000)
    qtbot.wait(300)
    assert provider.bodies == [] and shown == []
    assert seen[0].windowTitle() == "Too long to send whole"
    assert "context window" in seen[0].head.text()


def test_accept_all_ticks_every_item_and_says_what(qtbot, small_window, provider):
    win = small_window
    win.controllers.long.auto_choice = _decide(CHUNKED, [])
    _ready(qtbot, win, _text(60_000))
    win.controls.policy.setCurrentIndex(win.controls.policy.findData("dx-all"))
    win.controls.slider.setValue(1000)            # d_X at the top: the values stay
    qtbot.waitUntil(lambda: bool(win.payload.fresh_result is not None
                                 and "Jane Doe" in win.payload.result.sanitized.text),
                    timeout=60_000)
    protected, shown = [], []
    win.auto_confirm = lambda dlg: shown.append(dlg) or False
    win.send_button.click()
    qtbot.waitUntil(lambda: bool(shown), timeout=120_000)
    dlg: QtConfirmSendDialog = shown[0]
    assert len(dlg.overrides) >= 2 and not dlg.send_button.isEnabled()
    dlg.accept_all.click()
    assert all(b.isChecked() for b in dlg.overrides.values()) and dlg.send_button.isEnabled()
    assert "name" in dlg.accepted_line.text() and "e-mail address" in dlg.accepted_line.text()
    dlg._protect = protected.append
    dlg.protect_all.click()
    assert protected and "PERSON" in protected[0] and "EMAIL_ADDRESS" in protected[0]
    assert provider.bodies == []
