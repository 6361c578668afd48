"""The Sanitization controls: policy, ε (log slider and number field, d_X policies only),
resample and the task. A view: it exposes widgets and signals; the controllers feed it."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSlider,
    QWidget,
)

from preflight.core.sanitize.policy import Policy
from preflight.core.tasks import SUMMARIZE, Task
from preflight.qt.policy_ops import has_pseudonyms

SLIDER_STEPS = 1000
MODIFIED_KEY = "\0modified"          # the combo's entry for the legend-modified copy
EPS_TIP = ("Privacy budget ε (log scale): left = more private, right = closer to the "
           "original.")
NO_DX_TIP = ("This policy adds no d_X noise, so there is no ε to choose: choose a policy "
             "with d_X (e.g. “Protect identifiers + d_X”) to use the slider.")


class _LogSpinBox(QDoubleSpinBox):
    """The ε number field: its arrow keys and PageUp/PageDown step on the slider's log
    scale (the slider's single and page steps), not by a fixed amount."""

    def __init__(self, slider: QSlider) -> None:
        super().__init__()
        self._slider = slider

    def stepBy(self, steps: int) -> None:
        # Qt passes ±1 for an arrow and ±10 for PageUp/PageDown
        size = self._slider.pageStep() if abs(steps) >= 10 else self._slider.singleStep()
        self._slider.setValue(self._slider.value() + (1 if steps > 0 else -1) * size)


class QtControlsPanel(QGroupBox):
    """Policy, ε (log slider, d_X policies only), resample and the task."""

    sig_policy_changed = Signal(str)             # a policy name
    sig_epsilon_changed = Signal(float)
    sig_resample = Signal()
    sig_task_changed = Signal(object)            # Task

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Sanitization", parent)
        self._range: tuple[float, float] | None = None
        self._uses_dx = False
        self._resample_ok = False
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.policy = QComboBox()
        self.policy.setObjectName("policy")
        self.policy.setToolTip("Which action each kind of detected value gets, and whether "
                               "d_X noise covers the rest (Settings → Policy).")
        self.policy.currentIndexChanged.connect(self._on_policy)
        form.addRow("Policy", self.policy)

        eps_row = QHBoxLayout()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("epsilon")
        self.slider.setRange(0, SLIDER_STEPS)
        # keys move on the log scale: arrows by 1 % of the range, PageUp/Down by 10 %
        self.slider.setSingleStep(SLIDER_STEPS // 100)
        self.slider.setPageStep(SLIDER_STEPS // 10)
        self.slider.setEnabled(False)
        self.slider.setToolTip(EPS_TIP)
        self.slider.setAccessibleName("Privacy budget ε (slider)")
        self.slider.valueChanged.connect(self._on_slider)
        self.eps_spin = _LogSpinBox(self.slider)     # the same ε, typed
        self.eps_spin.setObjectName("epsilonValue")
        self.eps_spin.setDecimals(3)
        self.eps_spin.setEnabled(False)
        self.eps_spin.setToolTip(EPS_TIP + " Type a value, or use the arrow keys.")
        self.eps_spin.setAccessibleName("Privacy budget ε (value)")
        self.eps_spin.setKeyboardTracking(False)     # typed: applies on Enter/focus out
        self.eps_spin.valueChanged.connect(self._on_spin)
        eps_row.addWidget(self.slider, 1)
        eps_row.addWidget(self.eps_spin)
        eps_label = QLabel("&ε")
        eps_label.setBuddy(self.slider)
        form.addRow(eps_label, eps_row)
        self.range_label = QLabel("")
        self.range_label.setObjectName("muted")
        form.addRow("", self.range_label)

        self.resample = QPushButton("Resample")
        self.resample.setToolTip("Draw fresh noise (d_X) or fresh stand-ins (pseudonyms).")
        self.resample.clicked.connect(self.sig_resample.emit)
        form.addRow("", self.resample)

        self.guarantee = QLabel("")
        self.guarantee.setWordWrap(True)
        self.guarantee.setObjectName("guarantee")
        form.addRow(self.guarantee)

        task_row = QHBoxLayout()
        self.task = QComboBox()
        self.task.setObjectName("task")
        self.task.setAccessibleName("Task for the answer")
        self.task.addItem("Summarize", "summarize")
        self.task.addItem("Ask a question", "question")
        self.question = QLineEdit()
        self.question.setPlaceholderText("Your question about the document")
        self.question.setAccessibleName("Your question about the document")
        self.question.setVisible(False)
        self.task.currentIndexChanged.connect(self._on_task)
        self.question.editingFinished.connect(self._on_task)
        task_row.addWidget(self.task)
        form.addRow("Task", task_row)
        form.addRow("", self.question)
        self.note = QLineEdit()         # sanitized like the question before it leaves
        self.note.setObjectName("instruction")
        self.note.setPlaceholderText("e.g. summarize for the board in 5 bullets")
        self.note.setAccessibleName("Instruction (optional)")
        self.note.editingFinished.connect(self._on_task)
        form.addRow("Instruction (optional)", self.note)

    # -- inputs --------------------------------------------------------------------------
    def set_policies(self, choices: Sequence[tuple[str, str, bool]], current: Policy,
                     modified: bool) -> None:
        """Fill the Policy box: presets and saved policies, plus the modified copy."""
        self.policy.blockSignals(True)
        self.policy.clear()
        if modified:
            self.policy.addItem(current.title, MODIFIED_KEY)
        for name, title, uses_dx in choices:
            self.policy.addItem(title + ("  (d_X)" if uses_dx and "d_X" not in title else ""),
                                name)
        idx = 0 if modified else self.policy.findData(current.name)
        self.policy.setCurrentIndex(max(idx, 0))
        self.policy.setToolTip(current.description or current.title)
        self.policy.blockSignals(False)
        self._uses_dx = current.uses_dx
        self._resample_ok = current.uses_dx or has_pseudonyms(current)
        self._sync_enabled()

    def _on_policy(self, _i: int) -> None:
        name = self.policy.currentData()
        if name and name != MODIFIED_KEY:
            self.sig_policy_changed.emit(name)

    def set_range(self, lo: float, hi: float, current: float) -> None:
        self._range = (lo, hi)
        self.range_label.setText(f"calibrated range {lo:.3g} – {hi:.3g} (log scale)")
        self.set_epsilon(current)
        self._sync_enabled()

    def set_epsilon(self, eps: float) -> None:
        """Show ``eps`` on the slider and in the number field (no signal)."""
        if self._range is None:
            return
        lo, hi = self._range
        eps = min(max(eps, lo), hi)
        self.slider.blockSignals(True)
        self.slider.setValue(self.slider_for(eps))
        self.slider.blockSignals(False)
        self._show_value(eps)

    def slider_for(self, eps: float) -> int:
        lo, hi = self._range or (1.0, 1.0)
        if hi <= lo:
            return 0
        return round(SLIDER_STEPS * math.log(eps / lo) / math.log(hi / lo))

    def epsilon_for(self, value: int) -> float:
        lo, hi = self._range or (1.0, 1.0)
        return lo * (hi / lo) ** (value / SLIDER_STEPS)

    def _show_value(self, eps: float) -> None:
        self.eps_spin.blockSignals(True)
        if self._range is not None:
            self.eps_spin.setRange(*self._range)
        self.eps_spin.setValue(eps)
        self.eps_spin.blockSignals(False)

    def _on_slider(self, value: int) -> None:
        eps = self.epsilon_for(value)
        self._show_value(eps)
        self.sig_epsilon_changed.emit(eps)

    def _on_spin(self, eps: float) -> None:
        """A typed ε: the slider follows, and the exact value typed applies."""
        if self._range is None:
            return
        self.slider.blockSignals(True)
        self.slider.setValue(self.slider_for(eps))
        self.slider.blockSignals(False)
        self.sig_epsilon_changed.emit(float(eps))

    def current_task(self) -> Task:
        """The task as the fields read now (a question still being typed included)."""
        kind = self.task.currentData()
        task = Task("question", question=self.question.text()) if kind == "question" \
            else SUMMARIZE
        return replace(task, note=self.note.text().strip())

    def _on_task(self, *_args) -> None:
        self.question.setVisible(self.task.currentData() == "question")
        self.sig_task_changed.emit(self.current_task())

    def _sync_enabled(self) -> None:
        dx = self._uses_dx
        on = dx and self._range is not None
        self.slider.setEnabled(on)
        self.slider.setToolTip(EPS_TIP if dx else NO_DX_TIP)
        self.resample.setEnabled(self._resample_ok)
        self.eps_spin.setEnabled(on)
        # a policy without d_X has no ε: say so rather than show the last one
        self.eps_spin.setSpecialValueText("" if on else "—")
        if on:
            self._show_value(self.epsilon_for(self.slider.value()))
        else:
            self.eps_spin.blockSignals(True)
            self.eps_spin.setValue(self.eps_spin.minimum())   # shows the special "—"
            self.eps_spin.blockSignals(False)
        self.range_label.setVisible(dx)

    def set_guarantee(self, text: str) -> None:
        self.guarantee.setText(html.escape(text))
