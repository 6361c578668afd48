"""Render the window's main states to docs/screenshots/*.png.

Run under Xvfb (the real xcb platform, as a user would see it):

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py

By default it drives the REAL core (detector, d_X, operators, send session, audit log)
with a throw-away PREFLIGHT_HOME and a loopback OpenAI-compatible server standing in for
the provider. ``--fake`` plugs the tests' fake ports into the same application layer
instead (``tests/qt/ports.py``: layout checks in seconds, no models). ``--only NAME`` renders one state.

Small screens (issue 15): ``08-fit-1024x700`` is the window at 1024×700; ``08-fit-150pct``
is a 1366×768 screen at 150 % scaling — rendered by a second run of this script with
``--scale 1.5`` (Qt reads QT_SCALE_FACTOR once per process), the window at the screen's
logical 910×512 and the PNG at its 1365×768 physical pixels.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "qt"))      # loopback server (and ports for --fake)

DOC = """Subject: Q3 review — Project Falcon

Hi team,

Jane Doe (jane.doe@example.com, +1 415 555 0134) met Max Power from Acme Corp in Berlin on
3 March 2024 to discuss the merger. Her card 4111 1111 1111 1111 was charged $2,400 for
travel. Max's IBAN is DE89 3704 0044 0532 0130 00; he was born on 12/04/1981.

The board wants a short summary of the risks before Friday. Jane was treated for asthma
last year, so please keep the travel light. The staging key is sk-proj-4fT9xQ2LmN8vR6bY1cZ0.

Thanks,
Tom Baker
"""

OUTSIDE = "03-outside-light"    # a licence pasted: "outside what it was trained on"


def wait_until(app, pred, timeout: float, what: str) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        app.processEvents()
        try:
            if pred():
                return True
        except Exception:  # noqa: BLE001 - state not there yet
            pass
        time.sleep(0.02)
    print(f"  (timed out waiting for {what})", file=sys.stderr)
    return False


def loop_memo() -> str:
    """A committed business memo on which SmolLM2 repeats itself when it answers locally
    (``preflight_eval.local_answer_study``)."""
    import gzip
    import json

    with gzip.open(ROOT / "data" / "utility" / "business.jsonl.gz", "rt") as fh:
        return next(r["text"] for r in map(json.loads, fh) if r["doc_id"] == "memo:0052")


def settle(app, seconds: float = 0.4) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.02)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fake", action="store_true",
                    help="the application over the tests' fake ports (no models)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--only", default="", help="these shots only (names, comma-separated)")
    ap.add_argument("--scale", type=float, default=0.0,
                    help="render only the scaled small-screen shot, at this QT_SCALE_FACTOR")
    args = ap.parse_args()
    if args.scale:
        os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"    # before the QApplication
    os.environ.setdefault("PREFLIGHT_HOME", tempfile.mkdtemp(prefix="preflight-shots-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import keyring
    from keyring.backends import null
    from loopback import LoopbackLLM

    keyring.set_keyring(null.Keyring())                 # never the user's keyring

    from preflight.core.config import ProviderSettings, Settings
    from preflight.qt import qt_theme
    from preflight.qt.qt_app import build_window, create_app
    from preflight.qt.qt_workers import wait_all

    app = create_app()
    server = LoopbackLLM(["Summary:", "<PERSON_1>", "met", "<PERSON_2>", "of",
                          "<ORGANIZATION_1>", "in", "<LOCATION_1>", "to", "discuss", "the",
                          "merger;", "the", "board", "wants", "the", "risks", "before",
                          "<DATE_TIME_1>."]).__enter__()

    def make_door(with_provider: bool):
        s = Settings()
        if with_provider:
            s.providers.append(ProviderSettings(
                name="work-llm", base_url=server.base_url, model="gpt-4o-mini",
                price_input_per_mtok=0.15, price_output_per_mtok=0.60))
            s.default_provider = "work-llm"
        if args.fake:
            from ports import Rig

            return Rig().doorway(s)
        from preflight.app.window_doorway import WindowDoorway

        return WindowDoorway(s)

    shots: list[str] = []

    def choose(win, name: str) -> None:
        """Pick a policy in the window's Policy box."""
        box = win.controls.policy
        wait_until(app, lambda: box.findData(name) >= 0, 30, "policies")
        box.setCurrentIndex(box.findData(name))

    def wanted(*names: str) -> bool:
        return not args.only or bool(set(names) & set(args.only.split(",")))

    def shoot(widget, name: str) -> None:
        if not wanted(name):
            return
        # the real window may need over a second to lay out after a policy change (its
        # wrapped labels, the chart): a shorter wait caught panels mid-layout
        settle(app, 1.5)
        path = out / f"{name}.png"
        widget.grab().save(str(path))
        shots.append(str(path))
        print(f"wrote {path}")

    def window(theme: str, with_provider: bool = True):
        win = build_window(make_door(with_provider), theme=theme)
        win.resize(1560, 960)
        win.show()
        win.start()
        return win

    def show_dx(win) -> bool:
        """The d_X policy at a mid ε, with its prediction (False: d_X never got ready)."""
        p, pay, u = win.policies, win.payload, win.utility
        choose(win, "identifiers-dx")
        if not wait_until(app, lambda: p.epsilon_range and pay.prepared is not None, 300,
                          "d_X"):
            return False
        u.prediction = None
        lo, hi = p.epsilon_range
        win.controls.set_epsilon((lo * hi) ** 0.5)
        win.controls.slider.setValue(int(win.controls.slider.value()) + 150)
        if wait_until(app, lambda: u.prediction is not None or
                      win.assessment.utility.text() == "n/a", 60, "prediction") \
                and u.prediction is not None:
            wait_until(app, lambda: len(u.curve) > 2, 120, "utility curve")
        return True

    def shoot_small(win, size: tuple[int, int], name: str) -> None:
        """The window at a small screen's size; back to the usual size afterwards."""
        before = win.size()
        win.resize(*size)
        settle(app, 0.8)
        shoot(win, name)
        win.resize(before)
        settle(app, 0.3)

    def protect_shots(win) -> None:
        """The selection's right-click menu (always / this document only), then two
        values protected for good: Settings → Policy shows them masked."""
        from PySide6.QtGui import QTextCursor

        if "Project Falcon" not in win.original.toPlainText():
            done = win.doc.detections_done
            win.original.setPlainText(DOC)
            wait_until(app, lambda: win.doc.detections_done > done, 300, "detection")
        view = win.original
        start = view.toPlainText().index("Project Falcon")
        cursor = view.textCursor()
        cursor.setPosition(start)
        cursor.setPosition(start + len("Project Falcon"), QTextCursor.MoveMode.KeepAnchor)
        view.setTextCursor(cursor)
        pos = view.cursorRect().center()
        menu = view.context_menu(pos)
        menu.popup(view.mapToGlobal(pos))
        shoot(menu, "09-protect-menu")
        always = [a for a in menu.actions() if a.text().startswith("Always protect")]
        menu.close()
        always[0].trigger()                         # saved in the background
        wait_until(app, lambda: win.app.settings.detection.deny_entries, 60, "deny-list")
        win.app.deny.always("Summer2024!")          # a password the detector missed
        settle(app, 0.5)

    if args.scale:          # the second run: only the scaled small-screen shot
        win = window("light")
        win.original.setPlainText(DOC)
        wait_until(app, lambda: win.doc.detections_done and win.payload.result is not None,
                   300, "detection")
        show_dx(win)
        wait_until(app, lambda: win.privacy.attack is not None, 180, "d_X attack")
        shoot_small(win, (910, 512), "08-fit-150pct")
        win.controllers.cancel_all()
        win.close()
        wait_all(20000)
        win.app.shutdown()
        server.__exit__(None, None, None)
        return 0

    # 1. first run: no provider, empty document.
    win = window("light", with_provider=False)
    settle(app, 1.0)
    shoot(win, "01-first-run")
    from preflight.qt.qt_first_run import show_guide

    guide = show_guide(win)                  # what a first start shows beside the window
    settle(app, 0.5)
    shoot(guide, "01-guide")
    guide.close()
    win.close()
    win.app.shutdown()

    for theme in (() if args.only == OUTSIDE else ("light", "dark")):
        win = window(theme)
        win.original.setPlainText(DOC)
        d, pay, u, pol = win.doc, win.payload, win.utility, win.policies
        wait_until(app, lambda: d.detections_done and pay.result is not None, 300,
                   "detection")
        wait_until(app, lambda: u.prediction is not None
                   or win.assessment.utility.text() == "n/a", 60, "prediction")
        settle(app, 1.0)
        shoot(win, f"02-identifiers-{theme}")           # the default policy
        if show_dx(win):
            wait_until(app, lambda: win.privacy.attack is not None
                       and win.assessment.chart.attack.count() > 2, 180, "d_X attack")
            settle(app, 1.0)
            shoot(win, f"02-dx-{theme}")
            if theme == "light":        # the Privacy group and the chart, scrolled to
                bar = win.right_scroll.verticalScrollBar()
                bar.setValue(bar.maximum())
                shoot(win, "02-dx-privacy-light")
                win.right_scroll.verticalScrollBar().setValue(0)
                shoot_small(win, (1024, 700), "08-fit-1024x700")
                if wanted("02-dx-best-light"):
                    # "Find best ε": the local model checks the instant candidate (and,
                    # if it falls short, one ε corrected by the gap) — the chart marks it
                    u.find_best_epsilon()
                    wait_until(app, lambda: not u.recommending
                               and u.recommendation is not None, 300, "Find best ε")
                    shoot(win, "02-dx-best-light")
        if theme == "light":    # the banner above Send: d_X alone lets values through
            choose(win, "dx-all")
            if wait_until(app, lambda: pol.policy.name == "dx-all" and pay.fresh_result
                          is not None and win.leave_banner.summary is not None, 300,
                          "d_X preview"):
                shoot(win, "02-leave-banner-light")
                win.leave_banner.protect.click()
                wait_until(app, lambda: pol.modified and pay.fresh_result is not None
                           and win.leave_banner.summary.severity != "high", 300,
                           "protected preview")
                shoot(win, "02-leave-protected-light")
        choose(win, "placeholder")
        wait_until(app, lambda: pay.result and pay.result.sanitized.method == "placeholder",
                   60, "placeholder preview")
        wait_until(app, lambda: u.prediction is not None
                   or win.assessment.utility.text() == "n/a", 30, "prediction")
        wait_until(app, lambda: win.privacy.facts is not None, 30, "privacy facts")
        settle(app, 1.0)
        shoot(win, f"03-placeholder-{theme}")
        if theme == "light":
            dialogs = []
            win.auto_confirm = lambda dlg: (dialogs.append(dlg), dlg.show(),
                                            shoot(dlg, "04-confirm-send"), True)[-1]
            win.send_button.click()
            wait_until(app, lambda: dialogs, 120, "confirmation dialog")
            if dialogs:
                dialogs[0].close()
            wait_until(app, lambda: not win.answers.busy and "Done" in
                       win.answer.status.text(), 240, "answer")
            settle(app, 0.5)
            shoot(win, "05-answer")
            if wanted("05-answer-checked", "04-confirm-follow-up"):
                # a follow-up question on the same document (its confirmation: the turn,
                # ε 0 added, no resend tick), answered with a date, an amount and a name
                # it does not hold: the check under the answer, the score not green
                server.answer_words = ("Summary: <PERSON_1> met <PERSON_2> on 20 February "
                                       "2024; the card was charged $4,200 and Mark Evans "
                                       "approved the merger.").split(" ")

                def follow_up(dlg):
                    dlg.show()
                    shoot(dlg, "04-confirm-follow-up")
                    dlg.close()
                    return True

                win.auto_confirm = follow_up
                win.controls.task.setCurrentIndex(win.controls.task.findData("question"))
                win.controls.question.setText("Who approved the merger, and when?")
                wait_until(app, lambda: win.send_button.isEnabled(), 60, "send")
                win.send_button.click()
                wait_until(app, lambda: not win.answers.busy and "Done" in
                           win.answer.status.text() and win.answer.check.text(), 240,
                           "checked answer")
                shoot(win, "05-answer-checked")
            if not args.fake and wanted("05-local-loop"):
                # Keep local on a memo where SmolLM2 (the assessor's other SLM, chosen in
                # Settings → Models for this shot) falls into a loop: stopped at the first
                # repeated sentence, the answer ends before it and says why
                from dataclasses import replace

                win.app.save_settings(replace(win.app.settings, assessor_slm="slm"))
                win.original.setPlainText(loop_memo())
                wait_until(app, lambda: win.local_button.isEnabled(), 120, "keep local")
                win.local_button.click()
                wait_until(app, lambda: not win.answers.busy and "locally" in
                           win.answer.status.text(), 240, "local answer")
                shoot(win, "05-local-loop")
                win.app.save_settings(replace(win.app.settings,
                                                  assessor_slm=Settings().assessor_slm))
            got = []
            win.sig_history_shown.connect(got.append)
            win.open_history()
            wait_until(app, lambda: got, 30, "history")
            if got:
                got[0].resize(1100, 600)
                shoot(got[0], "06-history")
                got[0].close()
            if not args.only or args.only in ("09-protect-menu", "07-settings-policy"):
                protect_shots(win)
            for tab in ("providers", "models", "policy"):
                dlg = win.open_settings(tab)
                if tab == "models":
                    wait_until(app, lambda: dlg.models.table.rowCount() > 0, 60, "models")
                shoot(dlg, f"07-settings-{tab}")
                dlg.reject()
        win.controllers.cancel_all()
        win.close()
        wait_all(20000)
        win.app.shutdown()
    if wanted(OUTSIDE):
        # a document longer than every training document (a licence): the marked line
        # under the number says so
        win = window("light")
        win.original.setPlainText(Path("/usr/share/common-licenses/Apache-2.0").read_text()
                                  [:4000])
        choose(win, "placeholder")
        wait_until(app, lambda: getattr(win.utility.prediction, "scope", None) is not None,
                   300, "scope")
        shoot(win, OUTSIDE)
        win.controllers.cancel_all()
        win.close()
        wait_all(20000)
        win.app.shutdown()
    qt_theme.apply_theme(app, "light")
    server.__exit__(None, None, None)
    if wanted("08-fit-150pct"):
        # 150 % scaling is a per-process setting: a second run renders that shot.
        cmd = [sys.executable, __file__, "--scale", "1.5", "--out", str(out)]
        if subprocess.run(cmd + (["--fake"] if args.fake else [])).returncode == 0:
            shots.append(str(out / "08-fit-150pct.png"))
    print(f"{len(shots)} screenshot(s) in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
