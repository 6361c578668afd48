"""Side panels: the assessment panel (its chart: `qt_chart`); the sanitization controls
live in `qt_controls_panel` (re-exported here), the answer pane in `qt_answer_pane`.
Views only: they expose widgets and signals, controllers feed them."""

from __future__ import annotations

import math

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from preflight.app.prediction import Prediction, measured_on_text, scope_text
from preflight.app.presentation import (
    PrivacyIndicators, band_text, explanation_lines, format_cost, utility_number,
)
from preflight.core.send.cost import CostEstimate
from preflight.qt import qt_theme
from preflight.qt.qt_chart import QtUtilityChart
from preflight.qt.qt_controls_panel import NO_DX_TIP, QtControlsPanel  # noqa: F401
from preflight.qt.qt_privacy_panel import QtPrivacyGroup
from preflight.qt.utility_ops import no_epsilon_message

FIND_BEST_TIP = ("The most private ε whose predicted utility still meets the minimum set "
                 "in Settings → Policy.")
FIND_BEST = "Find best ε"
CANCEL_TIP = "Stop the search; ε stays what it is now."
SEARCH_STEPS = 1000                  # resolution of the search's progress bar


def _joined(note: str, line: str) -> str:
    """``note`` then ``line``: as two sentences when the note is one, else with "; "."""
    if not note or not line:
        return note or line
    if note.rstrip().endswith("."):
        return f"{note.rstrip()} {line[:1].upper()}{line[1:]}"
    return f"{note}; {line}"


class QtAssessmentPanel(QGroupBox):
    """Predicted utility, privacy indicators, the Privacy group, chart, "Find best ε",
    tokens and cost."""

    sig_find_best = Signal()
    sig_cancel_search = Signal()

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
        # What the prediction was measured on; in the warning colour, where this document
        # or task lies outside it.
        self.utility_scope = QLabel("")
        self.utility_scope.setWordWrap(True)
        self.utility_scope.setAccessibleName("What the prediction was measured on")
        self.calibration = QLabel("")   # learning on the flow: fitted to this provider?
        self.calibration.setObjectName("muted")
        # The band beside the number, at the number's reading size: "likely 0.47–0.69".
        self.utility_band = QLabel("")
        self.utility_band.setObjectName("utilityBand")
        self.utility_band.setAccessibleName("Likely range of the utility")
        col.addWidget(self.utility_caption)
        col.addWidget(self.utility_band)
        self.where = QLabel("")         # this computer, or the company assessor
        self.where.setObjectName("muted")
        row.addWidget(self.utility)
        row.addLayout(col, 1)
        lay.addLayout(row)
        # The wrapped explanations sit under the number at the panel's full width: nested
        # beside it (in the row), a long one was squeezed to one line and drawn over the
        # next when the column scrolled.
        for label in (self.utility_detail, self.utility_why, self.utility_scope,
                      self.calibration, self.where):
            lay.addWidget(label)
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
        self.find_best = QPushButton(FIND_BEST)
        self.find_best.setObjectName("findBest")
        self.find_best.setToolTip(FIND_BEST_TIP)
        self.find_best.clicked.connect(self._on_find_best)
        self.searching = False
        self.recommendation = QLabel("")
        self.recommendation.setWordWrap(True)
        self.recommendation.setObjectName("muted")
        best.addWidget(self.find_best)
        best.addWidget(self.recommendation, 1)
        lay.addLayout(best)
        self.search_progress = QProgressBar()    # determinate: one step per ε evaluated
        self.search_progress.setObjectName("searchProgress")
        self.search_progress.setRange(0, SEARCH_STEPS)
        self.search_progress.setAccessibleName("“Find best ε” progress")
        self.search_progress.setVisible(False)
        self.search_step = QLabel("")
        self.search_step.setObjectName("muted")
        self.search_step.setWordWrap(True)
        self.search_step.setVisible(False)
        lay.addWidget(self.search_progress)
        lay.addWidget(self.search_step)
        lay.addStretch(1)          # keeps the rows together when the chart is hidden

    def _on_find_best(self) -> None:
        (self.sig_cancel_search if self.searching else self.sig_find_best).emit()

    def set_searching(self, on: bool) -> None:
        """While "Find best ε" searches, its button cancels the search."""
        self.searching = on
        self.find_best.setText("Cancel" if on else FIND_BEST)
        self.find_best.setToolTip(CANCEL_TIP if on else FIND_BEST_TIP)
        self.find_best.setAccessibleName("Cancel the ε search" if on else FIND_BEST)
        self.search_progress.setVisible(on)
        self.search_step.setVisible(on)
        if on:
            self.search_progress.setValue(0)
            self.search_step.setText("")

    def set_search_progress(self, fraction: float, message: str) -> None:
        self.search_progress.setValue(round(SEARCH_STEPS * min(max(fraction, 0.0), 1.0)))
        self.search_step.setText(f"Searching: {message}")
        self.search_progress.setAccessibleDescription(message)

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
            self.utility_band.setText("")
            self.utility_scope.setText("")
            return
        outside = scope_text(pred.scope)
        self.utility_scope.setText(outside or measured_on_text(pred.scope))
        self.utility_scope.setToolTip(measured_on_text(pred.scope) if outside else "")
        self.utility_scope.setStyleSheet(f"color: {colors.warn.name()};" if outside else
                                         f"color: {colors.text_muted.name()};")
        color = colors.good if pred.value >= min_utility else colors.bad
        self.calibration.setText(pred.calibration)
        self.where.setText(pred.where)
        self.utility.setText(utility_number(pred.value, min_utility))
        self.utility.setStyleSheet(f"color: {color.name()};")
        # The band beside the number; under it the sentence (vs. the unsanitized text) and
        # the drivers: shared words with `preflight assess` (app.presentation).
        est = pred.explained
        band = band_text(pred.low, pred.high, pred.level)
        if not band and pred.rmse is not None and pred.low is not None and pred.high is not None:
            band = f"range {pred.low:.2f}–{pred.high:.2f} (± {pred.rmse:.2f})"
        shown = band_text(est.low, est.high, est.level) if est is not None else ""
        lines = [line for line in explanation_lines(est) if not shown or line != shown]
        head = _joined(pred.note, lines[0] if lines else "")
        self.utility_band.setText(band)
        self.utility_why.setText(lines[1] if len(lines) > 1 else "")
        if pred.refined:
            self.utility_caption.setText("predicted utility — refined with the local model")
            self.utility_detail.setText(head)
        else:
            self.utility_caption.setText("predicted utility — instant estimate")
            self.utility_detail.setText(_joined(head, "refining with the local model…")
                                        if pred.refines else head)
        self.utility.setToolTip(f"minimum required: {min_utility:.2f} (Settings → Policy)")

    def show_curve(self, curve, min_utility: float, searched: bool) -> None:
        """The instant utility curve; until "Find best ε" ran (``searched``), where it
        first reaches the minimum."""
        self.chart.set_curve(curve, min_utility)
        if searched:
            return
        ok = [(e, u) for e, u in curve if u >= min_utility]
        self.chart.set_recommended(*(ok[0] if ok else (None, None)))
        self.recommendation.setText(
            f"≈ ε {ok[0][0]:.3g} by the instant estimate; “Find best ε” sets it." if ok
            else "No ε in the range reaches the minimum utility by the instant estimate.")

    def show_recommendation(self, rec) -> None:
        """What "Find best ε" found: the ε it set, or that none is good enough and what to
        do (it never answers by itself)."""
        if rec.decision == "send" and rec.epsilon is not None:
            self.chart.set_recommended(rec.epsilon, rec.predicted_utility)
            self.recommendation.setText(
                f"Recommended ε {rec.epsilon:.3g}" + (
                    f" (predicted utility {rec.predicted_utility:.2f})"
                    if rec.predicted_utility is not None else "") + ".")
            return
        self.chart.set_recommended(None, None)
        self.recommendation.setText(
            no_epsilon_message(rec.min_utility)
            + (f" (best predicted utility "
               f"{utility_number(rec.predicted_utility, rec.min_utility)})"
               if rec.predicted_utility is not None else ""))

    def set_unavailable(self, why: str) -> None:
        self.utility.setText("n/a")
        self.utility.setStyleSheet("")
        self.utility_caption.setText("no utility prediction")
        self.utility_scope.setText("")
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


def decision_text(value: float, min_utility: float, uses_dx: bool) -> str:
    """The line beside Send: whether the predicted utility meets the minimum, and what to
    try when it does not."""
    shown = utility_number(value, min_utility)
    if value >= min_utility:
        return f"Predicted utility {shown} meets your minimum {min_utility:.2f}."
    return (f"<span style='color:{qt_theme.colors().bad.name()}'>Predicted utility "
            f"{shown} is below your minimum {min_utility:.2f}.</span> "
            + ("Try a larger ε (or “Find best ε”), or keep this one local." if uses_dx else
               "Try a policy that keeps more (or change a type in the legend), or keep "
               "this one local."))


NO_ANSWER = "No answer yet. Send to a provider or answer locally."
