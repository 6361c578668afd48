"""Dialogs: confirm a send (the exact payload), and messages (History is
:mod:`preflight.qt.qt_history`).

Size (~420 lines): the confirmation is one decision the user reads top to bottom — the
payload, the headers as sent, each finding with its tick, protect/accept all, the
conversation and resend lines — kept in one class so what it shows and what it enables
cannot drift apart."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from preflight.app.leave_summary import join_words, kind_words
from preflight.app.presentation import format_cost, local_time
from preflight.qt import qt_theme


def fit_to_screen(dialog: QWidget, width: int, height: int) -> None:
    """Resize ``dialog`` to ``width`` × ``height``, or to its screen's free area if smaller."""
    screen = dialog.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        free = screen.availableGeometry()
        width, height = min(width, free.width()), min(height, free.height())
    dialog.resize(width, height)


def documents_path(name: str = "") -> str:
    """Where a file dialog opens: the user's documents folder (``name`` inside it), never
    the process's working folder (for a desktop launch, the install folder or ``/``)."""
    folder = QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.DocumentsLocation) or str(Path.home())
    return str(Path(folder) / name) if name else folder


def show_error(parent: QWidget | None, message: str, hint: str = "") -> None:
    """A PreflightError for people: what happened, then what to do. Never a traceback."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Preflight")
    box.setText(message)
    if hint:
        box.setInformativeText(hint)
    box.setObjectName("errorBox")
    box.open()


def pretty_payload(payload: bytes) -> str:
    """The body as sent, indented for reading when it is JSON (the bytes are unchanged)."""
    text = payload.decode("utf-8", "replace")
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


class QtConfirmSendDialog(QDialog):
    """Shows exactly what will leave the machine and asks for an explicit decision.

    Each residual identifier or secret needs its own tick; an earlier send of the same
    document needs one more. "Send" stays disabled until all are given. With ``remember``
    (the app layer's "add to the detection allow-list"), every finding but a secret gets a
    "Don't flag this again" button; a validated identifier asks once more first.
    ``privacy``: the Privacy group's summary lines (``PrivacyController.summary``).

    Many items: "Accept all" ticks every box (each stays listed, ticked, and the line under
    the buttons says what is accepted, by kind; the company's rules on overrides still
    apply when sending); "Protect all" (with ``protect``, the window's "protect these
    types") closes without sending and protects the items' types. A chunked plan (it has
    ``requests``) says how many requests it makes.
    ``headers``: the headers as they will leave (the app layer knows whether a key is
    sent); None: the request's own, with the key header marked.
    """

    def __init__(self, plan: Any, parent: QWidget | None = None, *,
                 remember: Callable[[Any], None] | None = None,
                 privacy: Sequence[str] = (),
                 protect: Callable[[Sequence[str]], None] | None = None,
                 headers: Sequence[tuple[str, str]] | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self._remember = remember
        self._protect = protect
        self.protected_types: list[str] = []      # what "Protect all" protected
        self.remember_buttons: dict[str, QPushButton] = {}
        self.ask_validated: Callable[[Any], bool] = self._ask_validated
        self.setWindowTitle(f"Send to {plan.provider.name}?")
        self.setObjectName("confirmDialog")
        fit_to_screen(self, 860, 680)
        # Everything but the buttons scrolls: with many leftover items the dialog would
        # need ~580 px, more than a 1366×768 screen at 150 % has (512).
        outer = QVBoxLayout(self)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setAccessibleName("What will be sent")
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)
        prov = plan.provider
        head = QLabel(
            f"<b>{html.escape(prov.name)}</b> · model <b>{html.escape(prov.model)}</b><br>"
            f"<span style='font-family:monospace'>POST {breakable(plan.request.url)}</span>"
            # How the request travels when it is not plain HTTPS (cleartext, a proxy).
            + "".join(f"<br><b>{html.escape(n)}</b>" for n in getattr(plan, "notices", ())))
        head.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        head.setTextFormat(Qt.TextFormat.RichText)
        head.setWordWrap(True)          # a long endpoint wraps instead of being cut off
        head.setObjectName("confirmHead")
        lay.addWidget(head)
        cost = plan.cost
        cost_text = (format_cost(cost.max_total) + " at most" if cost.priced
                     else "unknown (no prices set for this provider)")
        facts = QLabel(
            f"{cost.input_tokens:,} input tokens ({html.escape(cost.token_method)}), up to "
            f"{cost.max_output_tokens} output tokens · estimated cost "
            f"{html.escape(cost_text)}<br>"
            f"Policy {html.escape(_policy_title(plan))}"
            + (f", ε {plan.epsilon:.3g}" if plan.epsilon is not None else "")
            + (f" · predicted utility {plan.predicted_utility:.2f}"
               if plan.predicted_utility is not None else ""))
        facts.setWordWrap(True)
        facts.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(facts)
        requests = getattr(plan, "requests", None)
        if requests:
            chunks = QLabel(f"<b>A chunked summary: {requests} requests</b> — "
                            f"{requests - 1} parts of the document, each summarized, then "
                            "one summary of those summaries (the provider's answers, "
                            "placeholders kept). Every request is re-scanned and recorded; "
                            "below is the first part's request.")
            chunks.setObjectName("chunkedPlan")
            chunks.setWordWrap(True)
            lay.addWidget(chunks)
        typed = getattr(getattr(plan, "task", None), "user_text", dict)()  # as sanitized
        self.typed = QLabel("<br>".join(
            f"<b>{'Question' if k == 'question' else 'Instruction'} as sent:</b> "
            f"{html.escape(v)}" for k, v in typed.items()))
        self.typed.setObjectName("typedAsSent")
        self.typed.setWordWrap(True)
        self.typed.setVisible(bool(typed))
        lay.addWidget(self.typed)
        lines = list(privacy)           # the assessment panel's Privacy group, repeated
        self.privacy = QLabel("<b>Privacy:</b> " + "<br>".join(html.escape(x) for x in lines))
        self.privacy.setObjectName("privacySummary")
        self.privacy.setWordWrap(True)
        self.privacy.setTextFormat(Qt.TextFormat.RichText)
        self.privacy.setVisible(bool(lines))
        lay.addWidget(self.privacy)
        self.conversation = QLabel(_conversation_line(plan))   # a follow-up: said up here
        self.conversation.setObjectName("conversation")
        self.conversation.setTextFormat(Qt.TextFormat.PlainText)
        self.conversation.setWordWrap(True)
        self.conversation.setVisible(bool(self.conversation.text()))
        lay.addWidget(self.conversation)

        split = QSplitter(Qt.Orientation.Vertical)
        payload_box = QGroupBox(f"Exact request body ({len(plan.payload):,} bytes)")
        pl = QVBoxLayout(payload_box)
        self.payload = QPlainTextEdit()
        self.payload.setObjectName("payload")
        self.payload.setAccessibleName("Exact request body that would be sent")
        self.payload.setTabChangesFocus(True)
        self.payload.setReadOnly(True)
        self.payload.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.payload.setPlainText(pretty_payload(plan.payload))
        pl.addWidget(self.payload)
        shown = plan.request.display_headers() if headers is None else headers
        headers_text = "\n".join(f"{k}: {v}" for k, v in shown)
        hdr = QLabel(f"<span style='font-family:monospace'>{breakable(headers_text)}</span>"
                     .replace("\n", "<br>"))
        hdr.setObjectName("muted")
        hdr.setWordWrap(True)
        pl.addWidget(hdr)
        split.addWidget(payload_box)

        checks = QWidget()
        cl = QVBoxLayout(checks)
        cl.setContentsMargins(0, 0, 0, 0)
        self.overrides: dict[str, QCheckBox] = {}
        colors = qt_theme.colors()
        blocking = list(plan.blocking)
        if blocking:
            warn = QLabel(f"<b style='color:{colors.bad.name()}'>The payload still contains "
                          f"{len(blocking)} identifier(s) or secret(s).</b> Choose a stronger "
                          "method, or tick each item you accept to send as it is.")
            warn.setWordWrap(True)
            cl.addWidget(warn)
            cl.addLayout(self._all_buttons(blocking))
            for f in blocking:
                # a check box never wraps: its sentence is a wrapping label beside it
                box = QCheckBox()
                box.setObjectName(f"override:{f.id}")
                box.toggled.connect(self._sync)
                self.overrides[f.id] = box
                cl.addLayout(self._row(_ticked_line(
                    box, f"Send {f.type} “{f.value}” anyway — {f.reason}"), f))
        others = [f for f in plan.findings if not f.blocking]
        if others:
            info = QLabel("Also in the payload (notes, not blocking):")
            info.setObjectName("muted")
            cl.addWidget(info)
            for f in others[:12]:
                note = QLabel(f"{f.type} “{f.value}” — {f.reason}")
                note.setTextFormat(Qt.TextFormat.PlainText)   # a value is never markup
                note.setWordWrap(True)
                note.setObjectName("muted")
                cl.addLayout(self._row(note, f))
            if len(others) > 12:
                cl.addWidget(QLabel(f"… and {len(others) - 12} more"))
        self.resend: QCheckBox | None = None
        if getattr(plan, "resend_needs_ack", bool(plan.prior_sends)):
            last = plan.prior_sends[-1]
            warn = QLabel(
                f"<b style='color:{colors.warn.name()}'>This document was sent "
                f"{len(plan.prior_sends)} time(s) before</b> (last "
                f"{html.escape(local_time(last.created_at))}"
                f" to {html.escape(last.provider)}, {html.escape(last.match)} match). This send "
                "adds d_X noise again: several differently noised copies of one text can be "
                "combined to undo it.")
            warn.setWordWrap(True)
            cl.addWidget(warn)
            self.resend = QCheckBox("I understand; send this document again")
            self.resend.setObjectName("resend")
            self.resend.toggled.connect(self._sync)
            cl.addWidget(self.resend)
        if not blocking and self.resend is None:
            ok = QLabel(f"<span style='color:{colors.good.name()}'>No identifier or secret "
                        "was found in the payload by the re-scan.</span>")
            cl.addWidget(ok)
        cl.addStretch(1)
        split.addWidget(checks)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        lay.addWidget(split, 1)

        self.buttons = QDialogButtonBox()
        self.send_button = self.buttons.addButton(f"Send to {prov.name}",
                                                  QDialogButtonBox.ButtonRole.AcceptRole)
        self.send_button.setObjectName("confirmSend")
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        outer.addWidget(self.buttons)
        self._sync()

    def _all_buttons(self, blocking: Sequence[Any]) -> QVBoxLayout:
        """"Protect all" and "Accept all", and the line saying what is accepted."""
        col = QVBoxLayout()
        row = QHBoxLayout()
        self.protect_all = QPushButton("Protect all")
        self.protect_all.setObjectName("protectAll")
        self.protect_all.setToolTip("Don't send: replace every kind listed here by "
                                    "placeholders, then check again.")
        self.protect_all.setVisible(self._protect is not None)
        self.protect_all.clicked.connect(self._protect_all)
        self.accept_all = QPushButton(f"Accept all {len(blocking)}")
        self.accept_all.setObjectName("acceptAll")
        self.accept_all.setToolTip("Tick every item below: each is sent as it is.")
        self.accept_all.clicked.connect(self._accept_all)
        row.addWidget(self.protect_all)
        row.addWidget(self.accept_all)
        row.addStretch(1)
        col.addLayout(row)
        self.accepted_line = QLabel("")
        self.accepted_line.setObjectName("acceptedLine")
        self.accepted_line.setWordWrap(True)
        col.addWidget(self.accepted_line)
        return col

    def _protect_all(self) -> None:
        types = list(dict.fromkeys(f.type for f in self.plan.blocking
                                   if f.kind != "degraded"))
        self.protected_types = types
        if self._protect is not None and types:
            self._protect(types)
        self.reject()

    def _accept_all(self) -> None:
        for box in self.overrides.values():
            box.setChecked(True)

    def accepted_words(self) -> str:
        """What the ticked items are, by kind: "Accepted to send as written: 3 names and
        1 API key." (empty when nothing is ticked)."""
        counts: dict[str, int] = {}
        for f in self.plan.blocking:
            box = self.overrides.get(f.id)
            if box is not None and box.isChecked():
                counts[f.type] = counts.get(f.type, 0) + 1
        if not counts:
            return ""
        return ("Accepted to send as written: "
                + join_words([kind_words(t, n) for t, n in counts.items()]) + ".")

    def _row(self, widget: QWidget, finding: Any) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addWidget(widget, 1)
        if self._remember is not None and getattr(finding, "rememberable", False):
            button = QPushButton("Don't flag this again")
            button.setObjectName(f"remember:{finding.id}")
            button.setToolTip("Add this value to the detection allow-list in the settings "
                              "(Settings → Detection lists to undo).")
            button.clicked.connect(lambda _=False, f=finding: self.remember(f))
            self.remember_buttons[finding.id] = button
            row.addWidget(button)
        return row

    def remember(self, finding: Any) -> None:
        """Add ``finding``'s value to the allow-list (and allow it for this send)."""
        if self._remember is None or not finding.rememberable:
            return
        if finding.kind == "validated" and not self.ask_validated(finding):
            return
        self._remember(finding)
        button = self.remember_buttons.get(finding.id)
        if button is not None:
            button.setEnabled(False)
            button.setText("Won't be flagged again")
        box = self.overrides.get(finding.id)
        if box is not None:
            box.setChecked(True)

    def _ask_validated(self, finding: Any) -> bool:
        answer = QMessageBox.question(
            self, "Never flag this again?",
            f"{finding.type} “{finding.value}” passed its format or checksum check: it looks "
            "like a real identifier. Add it to the allow-list so it is never flagged again, "
            "in any document?")
        return answer == QMessageBox.StandardButton.Yes

    def _sync(self) -> None:
        if hasattr(self, "accepted_line"):
            self.accepted_line.setText(self.accepted_words())
        ok = all(b.isChecked() for b in self.overrides.values())
        if self.resend is not None:
            ok = ok and self.resend.isChecked()
        self.send_button.setEnabled(ok)

    def chosen_overrides(self) -> list[str]:
        return [fid for fid, b in self.overrides.items() if b.isChecked()]

    def resend_ok(self) -> bool:
        return self.resend is None or self.resend.isChecked()


def _conversation_line(plan: Any) -> str:
    """What the dialog says about the document's earlier sends: a follow-up in the same
    conversation (and the ε it adds), or an earlier send outside it that adds ε 0."""
    ledger = getattr(plan, "ledger", None)
    adds = f"{ledger.this_send:g}" if ledger is not None else "0"
    if getattr(plan, "follow_up", False):
        return (f"Follow-up in the same conversation (turn {plan.turn}): the request "
                "carries the earlier questions and the provider's answers as it sent them "
                f"(placeholders, not your values). This send adds ε {adds}.")
    if plan.prior_sends and not getattr(plan, "resend_needs_ack", True):
        last = plan.prior_sends[-1]
        return (f"This document was sent {len(plan.prior_sends)} time(s) before (last "
                f"{local_time(last.created_at)} to {last.provider}); this send has no d_X "
                "noise to average and adds ε 0.")
    return ""


def breakable(text: str) -> str:
    """``text`` escaped for a rich-text label, with break chances (zero-width spaces)
    after ``/ ? & =`` so a long URL or header wraps instead of being cut off."""
    out = html.escape(text)
    for ch in ("/", "?", "&amp;", "="):
        out = out.replace(ch, ch + "\u200b")
    return out


def _ticked_line(box: QCheckBox, text: str) -> QWidget:
    """A check box and its sentence as a label that wraps (clicking it ticks the box)."""
    w = QWidget()
    row = QHBoxLayout(w)
    row.setContentsMargins(0, 0, 0, 0)
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)     # the document's value, never markup
    label.setWordWrap(True)
    label.setObjectName("overrideText")
    label.mousePressEvent = lambda _e: box.toggle()     # like a check box's own text
    if not box.accessibleName():         # what a screen reader says: the sentence beside it
        box.setAccessibleName(text)
    row.addWidget(box, 0, Qt.AlignmentFlag.AlignTop)
    row.addWidget(label, 1)
    return w


def add_escape_shortcut(widget: QWidget, slot) -> QShortcut:
    sc = QShortcut(QKeySequence(Qt.Key.Key_Escape), widget)
    sc.setContext(Qt.ShortcutContext.WindowShortcut)
    sc.activated.connect(slot)
    return sc


def _policy_title(plan) -> str:
    """The policy that produced the payload, as the window names it."""
    policy = plan.sanitized.report.policy
    return (policy.title if policy is not None else "") or plan.method
