"""The answer pane: the streamed answer (restored and as received), what it means (notes:
d_X noise, the length limit; under the answer, what it states that the document does not
hold; the realized score, coloured), Copy, Save and Stop. A view: :class:`~preflight.qt.answers.
AnswerController` feeds it through :meth:`QtAnswerPane.bind`.

Once an answer starts, the pane takes the space it needs: :meth:`follow_splitter` gives it
a splitter whose share it grows (the user can drag it back; a pane the user made larger
is left alone)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from preflight.core.fsutil import atomic_write_text
from preflight.qt import qt_theme
from preflight.qt.qt_dialogs import documents_path, show_error

if TYPE_CHECKING:
    from preflight.qt.answers import AnswerController, AnswerOutcome

NO_ANSWER = "No answer yet. Send to a provider or answer locally."
STOP_TEXT = "Stop (Esc)"
ANSWER_SHARE = 0.55          # of the splitter the pane takes when an answer starts
SAVE_FILTERS = "Markdown (*.md);;Text (*.txt)"


class QtAnswerPane(QGroupBox):
    """The streamed answer: restored (placeholders back to the original values) and raw."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Answer", parent)
        self._splitter: QSplitter | None = None
        self._index = 0
        self._live = False           # an answer is on its way (outcomes apply)
        self._notes: list[str] = []
        lay = QVBoxLayout(self)
        head = QHBoxLayout()
        self.status = QLabel(NO_ANSWER)
        self.status.setObjectName("answerStatus")
        self.status.setWordWrap(True)
        self.rate = QLabel("")
        self.rate.setObjectName("muted")
        self.feedback = QLabel("")           # "Copied." / "Saved to …"
        self.feedback.setObjectName("muted")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setObjectName("copyAnswer")
        self.copy_button.setToolTip("Copy the answer shown (the tab you see) to the "
                                    "clipboard.")
        self.save_button = QPushButton("Save…")
        self.save_button.setObjectName("saveAnswer")
        self.save_button.setToolTip("Save the answer shown, with its notes, as Markdown "
                                    "or text.")
        self.stop = QPushButton(STOP_TEXT)
        self.stop.setObjectName("stopAnswer")
        self.stop.setVisible(False)
        # the realized score, coloured (never green while the check flags a fact)
        self.score = QLabel("")
        self.score.setObjectName("answerScore")
        self.score.setWordWrap(True)
        self.score.setToolTip("How close the answer is to your document, lowered for every "
                              "statement your document does not support (0–1).")
        self.score.setVisible(False)
        self.score_tone = ""
        head.addWidget(self.status, 1)
        for w in (self.rate, self.feedback, self.copy_button, self.save_button, self.stop):
            head.addWidget(w)
        lay.addLayout(head)
        lay.addWidget(self.score)
        self.notes = QLabel("")
        self.notes.setObjectName("answerNotes")
        self.notes.setWordWrap(True)
        self.notes.setVisible(False)
        lay.addWidget(self.notes)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Answer views")
        self.restored = QPlainTextEdit()
        self.restored.setObjectName("answerRestored")
        self.restored.setReadOnly(True)
        self.restored.setAccessibleName("Answer, placeholders restored")
        self.restored.setTabChangesFocus(True)
        self.raw = QPlainTextEdit()
        self.raw.setObjectName("answerRaw")
        self.raw.setReadOnly(True)
        self.raw.setAccessibleName("Answer as received")
        self.raw.setTabChangesFocus(True)
        self.raw.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.tabs.addTab(self.restored, "Restored")
        self.tabs.addTab(self.raw, "Raw (as received)")
        self.tabs.setMinimumHeight(90)
        # Hidden until an answer exists: an empty answer box would take ~160 px that a
        # short screen (1366×768 at 150 %) needs for the document panes.
        self.tabs.setVisible(False)
        lay.addWidget(self.tabs, 1)
        # under the answer: what it states that the document does not hold
        self.check = QLabel("")
        self.check.setObjectName("answerCheck")
        self.check.setWordWrap(True)
        self.check.setTextFormat(Qt.TextFormat.PlainText)    # the answer's words, not HTML
        self.check.setAccessibleName("Answer checked against your document")
        self.check.setVisible(False)
        lay.addWidget(self.check)
        self.copy_button.clicked.connect(self.copy_answer)
        self.save_button.clicked.connect(lambda: self.save_answer())
        self._sync_buttons()

    # -- wiring --------------------------------------------------------------------------
    def bind(self, answers: "AnswerController") -> None:
        """Show what ``answers`` streams; the Stop button stops it."""
        answers.sig_chunk.connect(self.append)
        answers.sig_rate.connect(self.set_rate)
        answers.sig_stopping.connect(self.stopping)
        answers.sig_outcome.connect(self.show_outcome)
        self.stop.clicked.connect(answers.stop)

    def follow_splitter(self, splitter: QSplitter, index: int) -> None:
        """The pane lives in widget ``index`` of ``splitter``: grown when answers start."""
        self._splitter, self._index = splitter, index

    def _grow(self) -> None:
        sp = self._splitter
        if sp is None:
            return
        sizes = sp.sizes()
        total = sum(sizes)
        want = int(total * ANSWER_SHARE)
        if total <= 0 or sizes[self._index] >= want:
            return                      # already large enough (or the user made it so)
        rest = total - sizes[self._index]
        sp.setSizes([want if i == self._index else
                     max(1, int(s * (total - want) / rest)) if rest else 0
                     for i, s in enumerate(sizes)])

    # -- the answer ----------------------------------------------------------------------
    def start(self, mode: str, who: str) -> None:
        self.restored.clear()
        self.raw.clear()
        self.rate.setText("")
        self.feedback.setText("")
        self._set_notes([])
        self._set_check("", "", "")
        self._live = True
        self.stop.setText(STOP_TEXT)
        self.stop.setEnabled(True)
        self.stop.setVisible(True)
        self.tabs.setVisible(True)
        self.status.setText(f"{who} is answering…" if mode == "cloud"
                            else "The local model is answering (nothing leaves this computer)…")
        self._grow()
        self._sync_buttons()
        # Esc (the window's Stop shortcut) only reaches an active window; after the
        # confirmation dialog closes, some desktops (or none: a bare X server) leave no
        # window active, and Esc would silently do nothing.
        window = self.window()
        if window is not self and not window.isActiveWindow():
            window.activateWindow()

    def append(self, restored: str, raw: str) -> None:
        for view, chunk in ((self.restored, restored), (self.raw, raw)):
            cur = view.textCursor()
            cur.movePosition(cur.MoveOperation.End)
            cur.insertText(chunk)
            view.setTextCursor(cur)
        self._sync_buttons()

    def set_rate(self, tps: float) -> None:
        self.rate.setText(f"{tps:.1f} tokens/s")

    def stopping(self) -> None:
        """Stop was asked for: say so at once (the model stops within a second)."""
        self.stop.setText("Stopping…")
        self.stop.setEnabled(False)

    def show_outcome(self, outcome: "AnswerOutcome") -> None:
        """The answer ended: its result line, its notes, the text as it should be read."""
        if not self._live:
            return                      # the document was reset meanwhile
        if outcome.restored is not None:
            self.restored.setPlainText(outcome.restored)
        self._set_notes(list(outcome.notes))
        self._set_check(outcome.check_line, outcome.score, outcome.score_tone)
        self.finish(outcome.status)

    def reset(self) -> None:
        """A new or emptied document: no answer from the previous one stays."""
        self._live = False
        self.restored.clear()
        self.raw.clear()
        self.rate.setText("")
        self.feedback.setText("")
        self._set_notes([])
        self._set_check("", "", "")
        self.stop.setVisible(False)
        self.tabs.setVisible(False)
        self.status.setText(NO_ANSWER)
        self._sync_buttons()

    def finish(self, message: str) -> None:
        self._live = False
        self.stop.setVisible(False)
        self.status.setText(message)
        self._sync_buttons()

    def _set_notes(self, notes: list[str]) -> None:
        self._notes = notes
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))

    def _set_check(self, line: str, score: str, tone: str) -> None:
        colors = qt_theme.colors()
        self.check.setText(f"Check: {line}" if line else "")
        self.check.setVisible(bool(line))
        self.check.setStyleSheet(f"color: {colors.warn.name()};" if line else "")
        self.score_tone = tone
        self.score.setText(score)
        self.score.setVisible(bool(score))
        color = {"good": colors.good, "warn": colors.warn, "bad": colors.bad}.get(tone)
        self.score.setStyleSheet(f"color: {color.name()};" if color is not None else "")

    def _sync_buttons(self) -> None:
        has = bool(self.restored.toPlainText() or self.raw.toPlainText())
        self.copy_button.setEnabled(has)
        self.save_button.setEnabled(has)

    # -- copy and save -------------------------------------------------------------------
    def answer_text(self) -> str:
        """The answer as the user sees it: the tab in front (restored or as received)."""
        view = self.raw if self.tabs.currentWidget() is self.raw else self.restored
        return view.toPlainText()

    def copy_answer(self) -> None:
        QGuiApplication.clipboard().setText(self.answer_text())
        self.feedback.setText("Copied.")

    def save_answer(self, path: str | None = None) -> Path | None:
        """Write the answer shown and its notes to ``path`` (asked for when None)."""
        if path is None:
            path, chosen = QFileDialog.getSaveFileName(self, "Save the answer",
                                                       documents_path("answer.md"),
                                                       SAVE_FILTERS)
            if not path:
                return None
            if not Path(path).suffix:
                path += ".txt" if chosen.startswith("Text") else ".md"
        target = Path(path)
        try:
            said = self._notes + ([self.check.text()] if self.check.text() else [])
            atomic_write_text(target, answer_document(self.answer_text(), said,
                                                      markdown=target.suffix.lower()
                                                      in (".md", ".markdown")))
        except OSError as exc:
            show_error(self, f"The answer could not be saved to {target} "
                             f"({exc.strerror or type(exc).__name__}).",
                       "Choose another folder or file name.")
            return None
        self.feedback.setText(f"Saved to {target.name}.")
        return target


def answer_document(answer: str, notes: list[str], *, markdown: bool) -> str:
    """The saved file: the answer, then its notes (a Markdown quote, or plain lines)."""
    body = answer.rstrip() + "\n"
    if not notes:
        return body
    if markdown:
        return body + "\n" + "\n>\n".join(f"> {n}" for n in notes) + "\n"
    return body + "\n" + "\n".join(notes) + "\n"
