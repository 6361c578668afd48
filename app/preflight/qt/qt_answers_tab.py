"""Settings → Answers: how long an answer (cloud or local) may be."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QLabel, QSpinBox, QWidget

from preflight.core.config import Settings
from preflight.core.tasks import ANSWER_TOKENS_RANGE

NOTE = ("The most a cloud or local answer may be (about ¾ of a word per token). An answer "
        "that reaches it ends at its last full sentence and says so. The local model uses at "
        "most half its context. The cost estimate counts the whole limit.")


class QtAnswersTab(QWidget):
    """The answer length (``Settings.answer_max_tokens``)."""

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        form = QFormLayout(self)
        self.max_tokens = QSpinBox()
        self.max_tokens.setObjectName("answerMaxTokens")
        self.max_tokens.setRange(*ANSWER_TOKENS_RANGE)
        self.max_tokens.setSingleStep(100)
        self.max_tokens.setSuffix(" tokens")
        self.max_tokens.setValue(settings.answer_max_tokens)
        form.addRow("Longest answer", self.max_tokens)
        note = QLabel(NOTE)
        note.setObjectName("muted")
        note.setWordWrap(True)
        form.addRow("", note)

    def store(self) -> None:
        self.settings.answer_max_tokens = self.max_tokens.value()
