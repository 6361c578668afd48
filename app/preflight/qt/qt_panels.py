"""Side panels: sanitization controls, the assessment panel (its chart: `qt_chart`) and the
answer pane. Views only: they expose widgets and signals, controllers feed them."""

from __future__ import annotations

import html
import math
from typing import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSlider,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from preflight.app.doorway import Prediction
from preflight.app.presentation import PrivacyIndicators, explanation_lines, format_cost
from preflight.core.sanitize.policy import Policy
from preflight.core.send.cost import CostEstimate
from preflight.core.tasks import SUMMARIZE, Task
from preflight.qt import qt_theme
from preflight.qt.policy_ops import has_pseudonyms
from preflight.qt.qt_chart import QtUtilityChart
from preflight.qt.qt_privacy_panel import QtPrivacyGroup

SLIDER_STEPS = 1000
MODIFIED_KEY = "\0modified"          # the combo's entry for the legend-modified copy
EPS_TIP = ("Privacy budget ε (log scale): left = more private, right = closer to the "
           "original.")
FIND_BEST_TIP = ("The most private ε whose predicted utility still meets the minimum set "
                 "in Settings → Policy.")
NO_DX_TIP = ("This policy adds no d_X noise, so there is no ε to choose: choose a policy "
             "with d_X (e.g. “Protect identifiers + d_X”) to use the slider.")


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
        self.slider.setEnabled(False)
        self.slider.setToolTip(EPS_TIP)
        self.slider.valueChanged.connect(self._on_slider)
        self.eps_label = QLabel("ε —")
        self.eps_label.setObjectName("epsilonValue")
        self.eps_label.setMinimumWidth(64)
        self.eps_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        eps_row.addWidget(self.slider, 1)
        eps_row.addWidget(self.eps_label)
        form.addRow("ε", eps_row)
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
        self.task.addItem("Summarize", "summarize")
        self.task.addItem("Ask a question", "question")
        self.question = QLineEdit()
        self.question.setPlaceholderText("Your question about the document")
        self.question.setVisible(False)
        self.task.currentIndexChanged.connect(self._on_task)
        self.question.editingFinished.connect(self._on_task)
        task_row.addWidget(self.task)
        form.addRow("Task", task_row)
        form.addRow("", self.question)

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
        if self._range is None:
            return
        lo, hi = self._range
        eps = min(max(eps, lo), hi)
        v = round(SLIDER_STEPS * math.log(eps / lo) / math.log(hi / lo))
        self.slider.blockSignals(True)
        self.slider.setValue(v)
        self.slider.blockSignals(False)
        self.eps_label.setText(f"ε {eps:.3g}")

    def epsilon_for(self, value: int) -> float:
        lo, hi = self._range or (1.0, 1.0)
        return lo * (hi / lo) ** (value / SLIDER_STEPS)

    def _on_slider(self, value: int) -> None:
        eps = self.epsilon_for(value)
        self.eps_label.setText(f"ε {eps:.3g}")
        self.sig_epsilon_changed.emit(eps)

    def _on_task(self, *_args) -> None:
        kind = self.task.currentData()
        self.question.setVisible(kind == "question")
        task = Task("question", question=self.question.text()) if kind == "question" \
            else SUMMARIZE
        self.sig_task_changed.emit(task)

    def _sync_enabled(self) -> None:
        dx = self._uses_dx
        self.slider.setEnabled(dx and self._range is not None)
        self.slider.setToolTip(EPS_TIP if dx else NO_DX_TIP)
        self.resample.setEnabled(self._resample_ok)
        self.eps_label.setEnabled(dx)
        # a policy without d_X has no ε: say so rather than show the last one
        self.eps_label.setText(f"ε {self.epsilon_for(self.slider.value()):.3g}"
                               if dx and self._range is not None else "ε —")
        self.range_label.setVisible(dx)

    def set_guarantee(self, text: str) -> None:
        self.guarantee.setText(html.escape(text))


class QtAssessmentPanel(QGroupBox):
    """Predicted utility, privacy indicators, the Privacy group, chart, "Find best ε",
    tokens and cost."""

    sig_find_best = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Assessment", parent)
        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        self.utility = QLabel("—")
        self.utility.setObjectName("utilityValue")
        big = QFont(self.font())
        big.setPointSizeF(big.pointSizeF() * 1.8)
        big.setBold(True)
        self.utility.setFont(big)
        self.utility.setToolTip("Predicted similarity of the cloud's answer on the sanitized "
                                "text to the original document (0–1).")
        col = QVBoxLayout()
        self.utility_caption = QLabel("predicted utility")
        self.utility_caption.setObjectName("muted")
        self.utility_detail = QLabel("")
        self.utility_detail.setObjectName("muted")
        self.utility_detail.setWordWrap(True)
        self.utility_why = QLabel("")
        self.utility_why.setObjectName("muted")
        self.utility_why.setWordWrap(True)
        self.calibration = QLabel("")   # learning on the flow: fitted to this provider?
        self.calibration.setObjectName("muted")
        col.addWidget(self.utility_caption)
        col.addWidget(self.utility_detail)
        col.addWidget(self.utility_why)
        col.addWidget(self.calibration)
        self.where = QLabel("")         # this computer, or the company assessor
        self.where.setObjectName("muted")
        col.addWidget(self.where)
        row.addWidget(self.utility)
        row.addLayout(col, 1)
        lay.addLayout(row)
        self.refining = QProgressBar()
        self.refining.setRange(0, 0)
        self.refining.setMaximumHeight(4)
        self.refining.setTextVisible(False)
        self.refining.setVisible(False)
        lay.addWidget(self.refining)

        grid = QFormLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        self.changed = QLabel("—")
        self.pii_left = QLabel("—")
        self.tokens = QLabel("—")
        self.cost = QLabel("—")
        grid.addRow("Tokens changed", self.changed)
        grid.addRow("PII left in payload", self.pii_left)
        grid.addRow("Tokens to send", self.tokens)
        grid.addRow("Estimated cost", self.cost)
        lay.addLayout(grid)
        self.privacy = QtPrivacyGroup()        # beside the utility figures, above the chart
        lay.addWidget(self.privacy)

        self.chart = QtUtilityChart()
        self.chart.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        lay.addWidget(self.chart, 10)
        best = QHBoxLayout()
        self.find_best = QPushButton("Find best ε")
        self.find_best.setObjectName("findBest")
        self.find_best.setToolTip(FIND_BEST_TIP)
        self.find_best.clicked.connect(self.sig_find_best.emit)
        self.recommendation = QLabel("")
        self.recommendation.setWordWrap(True)
        self.recommendation.setObjectName("muted")
        best.addWidget(self.find_best)
        best.addWidget(self.recommendation, 1)
        lay.addLayout(best)
        lay.addStretch(1)          # keeps the rows together when the chart is hidden

    def set_dx_mode(self, dx: bool) -> None:
        """The ε chart and "Find best ε" only mean something for a d_X policy."""
        self.chart.setVisible(dx)
        self.find_best.setEnabled(dx)
        self.find_best.setToolTip(FIND_BEST_TIP if dx else NO_DX_TIP)
        self.recommendation.setVisible(dx)

    def set_prediction(self, pred: Prediction | None, min_utility: float) -> None:
        colors = qt_theme.colors()
        if pred is None or math.isnan(pred.value):
            self.utility.setText("—")
            self.utility.setStyleSheet("")        # no colour for what was not computed
            self.utility_detail.setText("")
            self.utility_why.setText("")
            return
        color = colors.good if pred.value >= min_utility else colors.bad
        self.calibration.setText(pred.calibration)
        self.where.setText(pred.where)
        self.utility.setText(f"{pred.value:.2f}")
        self.utility.setStyleSheet(f"color: {color.name()};")
        # The sentence (vs. the unsanitized text), the band and the drivers: shared words
        # with `preflight assess` (app.presentation).
        est = pred.assessment.explained
        lines = explanation_lines(est)
        if not lines or (est is not None and est.low is None):
            band = (f"range {pred.low:.2f}–{pred.high:.2f} (± {pred.rmse:.2f}, held-out error)"
                    if pred.rmse is not None and pred.low is not None and pred.high is not None
                    else "")
            lines = lines[:1] + ([band] if band else []) + lines[1:]
        head = "; ".join(lines[:2])
        self.utility_why.setText(lines[2] if len(lines) > 2 else "")
        if pred.refined:
            self.utility_caption.setText("predicted utility — refined with the local model")
            self.utility_detail.setText(head)
        else:
            self.utility_caption.setText("predicted utility — instant estimate")
            self.utility_detail.setText((head + "; " if head else "")
                                        + "refining with the local model…")
        self.utility.setToolTip(f"minimum required: {min_utility:.2f} (Settings → Policy)")

    def set_unavailable(self, why: str) -> None:
        self.utility.setText("n/a")
        self.utility.setStyleSheet("")
        self.utility_caption.setText("no utility prediction")
        self.utility_detail.setText(why)
        self.utility_detail.setToolTip(why)
        self.utility_why.setText("")

    def set_refining(self, busy: bool) -> None:
        self.refining.setVisible(busy)
        if not busy and "refining" in self.utility_detail.text():
            self.utility_detail.setText(self.utility_detail.text().replace(
                "refining with the local model…", ""))

    def set_indicators(self, ind: PrivacyIndicators | None) -> None:
        colors = qt_theme.colors()
        if ind is None:
            self.changed.setText("—")
            self.pii_left.setText("—")
            return
        self.changed.setText(f"{ind.changed_share:.0%} ({ind.tokens_changed} of "
                             f"{ind.tokens_total})")
        color = colors.good if ind.pii_left == 0 else colors.bad
        self.pii_left.setText(f"<span style='color:{color.name()}'>{ind.pii_left}</span>"
                              f" of {ind.pii_total} detected"
                              + (f" ({ind.pii_kept} kept by the policy)" if ind.pii_kept
                                 else ""))

    def set_estimate(self, est: CostEstimate | None, provider: str | None = None) -> None:
        if est is None:
            self.tokens.setText("—")
            self.cost.setText("—")
            return
        how = "tokenizer" if est.token_method.startswith("tokenizer") else "chars/4 estimate"
        self.tokens.setText(f"{est.input_tokens:,} ({how})")
        if not provider:
            self.cost.setText("— (no provider yet)")
        else:
            self.cost.setText(format_cost(est.max_total) if est.priced
                              else "unknown (no prices set for this provider)")


NO_ANSWER = "No answer yet. Send to a provider or answer locally."


class QtAnswerPane(QGroupBox):
    """The streamed answer: restored (placeholders back to the original values) and raw."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Answer", parent)
        lay = QVBoxLayout(self)
        head = QHBoxLayout()
        self.status = QLabel(NO_ANSWER)
        self.status.setObjectName("muted")
        self.rate = QLabel("")
        self.rate.setObjectName("muted")
        self.stop = QPushButton("Stop (Esc)")
        self.stop.setVisible(False)
        head.addWidget(self.status, 1)
        head.addWidget(self.rate)
        head.addWidget(self.stop)
        lay.addLayout(head)
        self.tabs = QTabWidget()
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.restored = QPlainTextEdit()
        self.restored.setObjectName("answerRestored")
        self.restored.setReadOnly(True)
        self.raw = QPlainTextEdit()
        self.raw.setObjectName("answerRaw")
        self.raw.setReadOnly(True)
        self.raw.setFont(mono)
        self.tabs.addTab(self.restored, "Restored")
        self.tabs.addTab(self.raw, "Raw (as received)")
        lay.addWidget(self.tabs)

    def start(self, mode: str, who: str) -> None:
        self.restored.clear()
        self.raw.clear()
        self.rate.setText("")
        self.stop.setVisible(True)
        self.status.setText(f"{who} is answering…" if mode == "cloud"
                            else "The local model is answering (nothing leaves this computer)…")

    def append(self, restored: str, raw: str) -> None:
        for view, chunk in ((self.restored, restored), (self.raw, raw)):
            cur = view.textCursor()
            cur.movePosition(cur.MoveOperation.End)
            cur.insertText(chunk)
            view.setTextCursor(cur)

    def set_rate(self, tps: float) -> None:
        self.rate.setText(f"{tps:.1f} tokens/s")

    def reset(self) -> None:
        """A new or emptied document: no answer from the previous one stays."""
        self.restored.clear()
        self.raw.clear()
        self.rate.setText("")
        self.stop.setVisible(False)
        self.status.setText(NO_ANSWER)

    def finish(self, message: str) -> None:
        self.stop.setVisible(False)
        self.status.setText(message)
