"""The progress of a long detection (a pasted book), with its Cancel.

A detection that lasts more than :data:`SHOW_AFTER_MS` shows a progress dialog ("Looking
for personal data: 1,200 of 2,187 passages read") whose Cancel stops it
(:meth:`DocumentController.stop_detection
<preflight.qt.document_ops.DocumentController.stop_detection>`): the window stays usable,
says that nothing was detected, and sends nothing until a detection completes — F5 (or
any edit) looks again.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QProgressDialog, QWidget

SHOW_AFTER_MS = 2000        # a detection shorter than this shows no dialog
STOPPED = "nothing detected (stopped)"


class QtDetectProgress(QObject):
    """Binds a :class:`DocumentController`'s detection to a progress dialog (see the
    module doc). ``state``: the label that says how many items were detected."""

    sig_dialog = Signal(object)         # the dialog, once made (tests drive it)

    def __init__(self, window: QWidget, doc: Any, state: Any = None) -> None:
        super().__init__(window)
        self.window, self.doc, self.state = window, doc, state
        self.dialog: QProgressDialog | None = None
        doc.sig_detecting.connect(self._on_detecting)
        doc.sig_detect_progress.connect(self._on_progress)
        doc.sig_detect_stopped.connect(self._on_stopped)
        self.again = QShortcut(QKeySequence(Qt.Key.Key_F5), window)
        self.again.setWhatsThis("Look for personal data again")
        self.again.activated.connect(self._again)

    def _on_detecting(self, on: bool) -> None:
        if on:
            self._close()
            bar = QProgressDialog("Looking for personal data…", "Cancel", 0, 100, self.window)
            bar.setObjectName("detectProgress")
            bar.setWindowTitle("Checking the text")
            bar.setWindowModality(Qt.WindowModality.WindowModal)
            bar.setMinimumDuration(SHOW_AFTER_MS)
            bar.setMinimumWidth(460)
            bar.setAutoClose(False)
            bar.setAutoReset(False)
            bar.setValue(0)
            bar.canceled.connect(self.doc.stop_detection)
            self.dialog = bar
            self.sig_dialog.emit(bar)
        else:
            self._close()

    def _on_progress(self, share: float, words: str) -> None:
        if self.dialog is not None:
            self.dialog.setLabelText(words)
            self.dialog.setValue(max(0, min(99, int(share * 100))))

    def _on_stopped(self) -> None:
        self._close()
        if self.state is not None:
            self.state.setText(STOPPED)

    def _again(self) -> None:
        if self.doc.text.strip() and (self.doc.stopped or self.dialog is None):
            self.doc.redetect()

    def _close(self) -> None:
        bar, self.dialog = self.dialog, None
        if bar is not None:
            bar.canceled.disconnect(self.doc.stop_detection)   # closing emits canceled
            bar.close()
            bar.deleteLater()
