"""Render the long-document states to docs/screenshots/09-long-*.png: the choice over the
provider's context window, the progress of a chunked summary, its confirmation with
"Protect all" / "Accept all", and the window while the parts are sent; with
``--detect``, the detection of the pasted document (its progress, and the window after
Cancel) to 09-long-detecting.png and 09-long-detect-stopped.png.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots_long.py
    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots_long.py \
        --detect --real

The document is 0.9 MB of real text on this machine (tests/core/send/_long_doc.py: ECHR
judgments and licences), with a person's name and e-mail address on every 40th paragraph
and the surname alone after it. The application layer runs over the tests' fake ports
(``--real``: the real detector, which takes minutes on 0.9 MB); a loopback server stands
in for gpt-4o-mini and its 128,000-token window.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "qt"))
sys.path.insert(0, str(ROOT / "tests" / "core" / "send"))

PEOPLE = "Jane Doe (jane.doe@example.com) reviewed this section; Doe agreed with it."


def document() -> str:
    from _long_doc import long_document

    paras = long_document().split("\n\n")
    return "\n\n".join(p if i % 40 else f"{PEOPLE} {p}" for i, p in enumerate(paras))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", action="store_true", help="the real detector and core")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--detect", action="store_true",
                    help="only the detection's progress and its Cancel")
    args = ap.parse_args()
    os.environ.setdefault("PREFLIGHT_HOME", tempfile.mkdtemp(prefix="preflight-shots-"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import keyring
    from keyring.backends import null
    from loopback import LoopbackLLM

    keyring.set_keyring(null.Keyring())

    from preflight.app.long_documents import CHUNKED
    from preflight.core.config import ProviderSettings, Settings
    from preflight.qt.qt_app import build_window, create_app
    from preflight.qt.qt_workers import wait_all

    app = create_app()
    server = LoopbackLLM("The part describes the case of <PERSON_1> and the court's "
                         "findings.".split(" ")).__enter__()
    s = Settings()
    s.policy.active = "placeholder"
    s.providers.append(ProviderSettings(name="work-llm", base_url=server.base_url,
                                        model="gpt-4o-mini", price_input_per_mtok=0.15,
                                        price_output_per_mtok=0.60, context_tokens=128_000))
    s.default_provider = "work-llm"
    if args.real:
        from preflight.app.window_doorway import WindowDoorway

        door = WindowDoorway(s)
    else:
        from ports import Rig

        rig = Rig()
        if args.detect:     # the fakes' detection takes 20 s in steps, as a long one does
            rig.detector.steps, rig.detector.step_delay = 400, 0.05
        door = rig.doorway(s)
    win = build_window(door, theme="light")
    win.resize(1560, 960)
    win.show()
    win.start()

    def wait(pred, timeout: float, what: str) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            app.processEvents()
            if pred():
                return True
            time.sleep(0.02)
        print(f"  (timed out waiting for {what})", file=sys.stderr)
        return False

    def shoot(widget, name: str) -> None:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)
        path = out / f"{name}.png"
        widget.grab().save(str(path))
        print(f"wrote {path}")

    text = document()
    if args.detect:
        return detect_shots(app, win, text, wait, shoot, out)
    t0 = time.monotonic()
    win.original.setPlainText(text)
    wait(lambda: win.payload.fresh_result is not None and win.send_button.isEnabled(), 1800,
         "the preview")
    print(f"{len(text.encode()):,} bytes: preview ready after {time.monotonic() - t0:.1f} s; "
          f"status: {win.status_text.text()!r}; tokens: {win.assessment.tokens.text()!r}")
    shoot(win, "09-long-window")

    long = win.controllers.long
    seen: dict[str, object] = {}

    def choose(dlg):
        shoot(dlg, "09-long-choice")
        return CHUNKED

    def on_dialog(dlg):
        if dlg.objectName() == "chunkedProgress":
            seen["progress"] = dlg

    long.auto_choice = choose
    long.sig_dialog.connect(on_dialog)
    shot_progress = {"done": False}

    def on_status(words: str) -> None:
        bar = seen.get("progress")
        if bar is not None and "Checking part 2" in words and not shot_progress["done"]:
            shot_progress["done"] = True
            shoot(bar, "09-long-progress")

    long.sig_status.connect(on_status)
    confirmed: list = []

    def confirm(dlg):
        from PySide6.QtWidgets import QScrollArea, QSplitter

        confirmed.append(dlg)
        dlg.resize(900, 900)
        dlg.show()
        dlg.findChild(QSplitter).setSizes([220, 640])     # the findings in view
        app.processEvents()
        dlg.findChild(QScrollArea).ensureWidgetVisible(dlg.accept_all, 0, 200)
        shoot(dlg, "09-long-confirm")
        dlg.accept_all.click()
        shoot(dlg, "09-long-confirm-accepted")
        dlg.hide()
        return True

    win.auto_confirm = confirm
    statuses: list[str] = []
    win.answers.sig_progress.connect(statuses.append)
    t1 = time.monotonic()
    win.send_button.click()
    wait(lambda: bool(confirmed), 1800, "the confirmation")
    print(f"chunked plan ready after {time.monotonic() - t1:.1f} s")
    wait(lambda: bool(statuses), 120, "sending")
    shoot(win, "09-long-sending")
    wait(lambda: not win.answers.busy, 600, "the answer")
    shoot(win, "09-long-answer")
    print(f"requests sent: {len(server.bodies)}; steps: {statuses}")
    win.controllers.cancel_all()
    wait_all(3000)
    win.close()
    server.__exit__(None, None, None)
    return 0


def detect_shots(app, win, text: str, wait, shoot, out: Path) -> int:
    """The paste's detection: its progress over the window, then the window after Cancel."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QPushButton

    from preflight.qt.qt_workers import wait_all

    wait(lambda: win.doc.detector_warnings is not None, 300, "the detector")
    dialogs: list = []
    win.detect_progress.sig_dialog.connect(dialogs.append)
    t0 = time.monotonic()
    win.original.setPlainText(text)
    wait(lambda: bool(dialogs) and dialogs[-1].isVisible() and dialogs[-1].value() >= 20,
         600, "the progress")
    bar = dialogs[-1]
    print(f"after {time.monotonic() - t0:.1f} s: {bar.labelText()!r} {bar.value()} %")
    app.processEvents()
    time.sleep(0.5)
    app.processEvents()
    screen = QGuiApplication.primaryScreen().grabWindow(0)     # the window and its dialog
    screen.copy(win.frameGeometry()).save(str(out / "09-long-detecting.png"))
    print(f"wrote {out / '09-long-detecting.png'}")
    bar.findChild(QPushButton).click()
    wait(lambda: win.doc.stopped, 30, "the stop")
    shoot(win, "09-long-detect-stopped")
    print(f"stopped: state {win.detect_state.text()!r}; send enabled: "
          f"{win.send_button.isEnabled()}; preview: {win.payload.blocked!r}")
    win.controllers.cancel_all()
    wait_all(3000)
    win.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
