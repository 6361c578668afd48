"""Render the states of the re-identification attempt, an error message, the send
confirmation and the quasi-identifier warning to docs/screenshots/ (the application over
the tests' fake ports: no models; the confirmation and the error come from the real send
path against a loopback address).

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots_messages.py
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "qt"))
sys.path.insert(0, str(ROOT / "scripts"))

RED_DOC = ("Born on 14 July 1981 in Ghent, she works as a midwife at the city hospital and "
           "asked for a transfer.")
GREY_DOC = ("The budget meeting moved to February; the Leeds office of Northwind Traders "
            "hosts it and the driver collects the director from the station.")


def main() -> int:
    os.environ.setdefault("PREFLIGHT_HOME", tempfile.mkdtemp(prefix="preflight-shots-"))
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    import keyring
    from keyring.backends import null

    keyring.set_keyring(null.Keyring())
    from ports import SAMPLE, Rig, real_plan, window_settings
    from screenshots import settle, wait_until

    from preflight.app.privacy_report import privacy_facts
    from preflight.core.send.audit import PriorSend
    from preflight.core.send.plan import Finding
    from preflight.core.types import Category, SanitizedText, Span
    from preflight.qt.qt_app import build_window, create_app
    from preflight.qt.qt_dialogs import QtConfirmSendDialog
    from preflight.qt.qt_workers import wait_all

    app = create_app()

    def shoot(widget, name: str) -> None:
        settle(app, 1.0)
        widget.grab().save(str(out / f"{name}.png"))
        print(f"wrote {out / name}.png")

    with socket.socket() as s:                 # a port nothing listens on: network down
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    rig = Rig()
    rig.slm.run_delay = 120.0                  # a busy machine: the attempt takes its time
    door = rig.doorway(window_settings(dead, "placeholder"))
    win = build_window(door, theme="light")
    win.resize(1400, 900)
    win.show()
    win.start()
    win.original.setPlainText(SAMPLE)
    wait_until(app, lambda: win.payload.result is not None and win.privacy.facts
               is not None, 60, "payload")
    group = win.assessment.privacy
    shoot(group, "09-reidentify-idle")
    group.reidentify.click()
    wait_until(app, lambda: "Waiting" in group.reidentified.text(), 30, "progress")
    shoot(group, "09-reidentify-progress")
    group.reidentify.click()                   # Cancel
    wait_until(app, lambda: "Stopped" in group.reidentified.text(), 30, "cancel")
    shoot(group, "09-reidentify-cancelled")

    win.auto_confirm = lambda dlg: True
    win.send_button.click()
    wait_until(app, lambda: not win.answers.busy and "reach" in win.answer.status.text()
               + " ".join(lb.text() for lb in win.answer.findChildren(type(group.attack))),
               120, "the send's error")
    shoot(win.answer, "10-error-network-down")

    for name, text, marked in (
            ("11-quasi-red", RED_DOC, [("14 July 1981", "DATE_OF_BIRTH"), ("Ghent", "LOCATION")]),
            ("11-quasi-grey", GREY_DOC, [("February", "DATE_TIME"), ("Leeds", "LOCATION"),
                                         ("Northwind Traders", "ORGANIZATION")])):
        spans = sorted((Span(text.index(v), text.index(v) + len(v), t,
                             Category.QUASI_IDENTIFIER, 0.9, "shot", "shot")
                        for v, t in marked), key=lambda s: s.start)
        group.set_facts(privacy_facts(door.services, text, SanitizedText(text, "keep"),
                                      spans))
        shoot(group, name)

    odd = [Finding("n-1", "PERSON", Category.DIRECT_IDENTIFIER, "Seán O'Neil", "document",
                   0, 11, 0.6, False, "a name the re-scan found", "note")]
    plan = real_plan(rig, "http://127.0.0.1:9/v1", findings=odd)
    plan = replace(plan, prior_sends=(PriorSend(3, "2026-03-04T08:12:44.120+00:00",
                                                "loopback", "placeholder", None, "exact",
                                                1.0),))
    dlg = QtConfirmSendDialog(plan, win, headers=door.headers_as_sent(plan))
    dlg.resize(900, 700)
    dlg.show()
    shoot(dlg, "12-confirm-headers-local-time")
    dlg.close()
    win.controllers.cancel_all()
    win.close()
    wait_all(20000)
    door.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
