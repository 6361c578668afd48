"""The utility-versus-ε chart of the assessment panel (a view: the controllers feed it):
predicted utility and the attack success on the d_X noise share one axis pair (0–1)."""

from __future__ import annotations

import math
from typing import Sequence

from PySide6.QtCharts import QAreaSeries, QChart, QChartView, QLegend, QLineSeries, \
    QLogValueAxis, QScatterSeries, QValueAxis
from PySide6.QtCore import QMargins, QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

from preflight.qt import qt_theme


class QtUtilityChart(QChartView):
    """Predicted utility against ε (log axis) with its interval as a shaded band, the
    minimum as a dashed line, current ε and the recommended ε marked; the share of noised
    words the optimal attack recovers against ε in a second colour (legend below)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        chart = QChart()
        super().__init__(chart, parent)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setMinimumHeight(160)
        self.setAccessibleName("Predicted utility versus ε chart")
        # a picture, not a control: Tab skips it (its facts are in the labels beside it)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        chart.setMargins(QMargins(2, 2, 2, 2))
        chart.setBackgroundRoundness(0)
        self.series = QLineSeries()
        self.series.setName("utility")
        self.attack = QLineSeries()
        self.attack.setName("attack")
        self.attack_current = QScatterSeries()
        self.attack_current.setMarkerSize(8)
        self.band_low = QLineSeries()
        self.band_high = QLineSeries()
        self.band = QAreaSeries(self.band_high, self.band_low)
        self.threshold = QLineSeries()
        self.current = QScatterSeries()
        self.current.setMarkerSize(9)
        self.recommended = QScatterSeries()
        self.recommended.setMarkerShape(QScatterSeries.MarkerShape.MarkerShapeStar) \
            if hasattr(QScatterSeries.MarkerShape, "MarkerShapeStar") else None
        self.recommended.setMarkerSize(14)
        self.recommended.setName("best ε")
        self._all = (self.band, self.series, self.attack, self.threshold, self.current,
                     self.attack_current, self.recommended)
        for s in self._all:
            chart.addSeries(s)
        self.ax = QLogValueAxis()
        self.ax.setLabelFormat("%.3g")
        self.ax.setTitleText("ε")
        self.ay = QValueAxis()
        self.ay.setRange(0, 1)
        self.ay.setTickCount(3)
        self.ay.setLabelFormat("%.1f")
        self.ay.setTitleText("share")
        chart.addAxis(self.ax, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(self.ay, Qt.AlignmentFlag.AlignLeft)
        for s in self._all:
            s.attachAxis(self.ax)
            s.attachAxis(self.ay)
        legend = chart.legend()
        legend.setAlignment(Qt.AlignmentFlag.AlignBottom)
        if hasattr(QLegend.MarkerShape, "MarkerShapeFromSeries"):
            legend.setMarkerShape(QLegend.MarkerShape.MarkerShapeFromSeries)
        for s in (self.band, self.threshold, self.current, self.attack_current):
            for marker in legend.markers(s):
                marker.setVisible(False)       # the legend names the two curves and ★
        self._range = (1.0, 10.0)
        self.ax.setRange(*self._range)
        self.refresh_colors()

    def refresh_colors(self) -> None:
        colors = qt_theme.colors()
        pal = self.palette()
        chart = self.chart()
        chart.setBackgroundBrush(pal.base())
        chart.setPlotAreaBackgroundVisible(False)
        for axis in (self.ax, self.ay):
            axis.setLabelsColor(pal.text().color())
            axis.setTitleBrush(pal.text())
            axis.setGridLineColor(pal.mid().color())
            axis.setLinePenColor(pal.mid().color())
            f = axis.labelsFont()
            f.setPointSizeF(8)
            axis.setLabelsFont(f)
            tf = axis.titleFont()
            tf.setPointSizeF(8)
            axis.setTitleFont(tf)
        pen = QPen(colors.chart_line)
        pen.setWidthF(2)
        self.series.setPen(pen)
        fill = QColor(colors.chart_line)
        fill.setAlpha(50)
        self.band.setBrush(fill)
        self.band.setPen(QPen(Qt.PenStyle.NoPen))
        tpen = QPen(colors.warn)
        tpen.setStyle(Qt.PenStyle.DashLine)
        self.threshold.setPen(tpen)
        self.current.setColor(colors.chart_line)
        self.current.setBorderColor(pal.base().color())
        self.recommended.setColor(colors.chart_marker)
        self.recommended.setBorderColor(colors.chart_marker)
        apen = QPen(colors.bad)
        apen.setWidthF(2)
        self.attack.setPen(apen)
        self.attack_current.setColor(colors.bad)
        self.attack_current.setBorderColor(pal.base().color())
        legend = chart.legend()
        legend.setLabelColor(pal.text().color())
        lf = legend.font()
        lf.setPointSizeF(8)
        legend.setFont(lf)

    def set_range(self, lo: float, hi: float) -> None:
        self._range = (lo, hi)
        # A log axis labels powers of its base: base 2 gives labels in narrow ranges.
        self.ax.setBase(10.0 if hi / lo >= 100 else 2.0)
        self.ax.setLabelFormat("%.3g")
        self.ax.setRange(lo, hi)

    def set_curve(self, points: Sequence[tuple[float, float]], min_utility: float) -> None:
        """``points``: (ε, utility) pairs; a core ``UtilityCurve`` also carries the band
        (its ``band()`` gives (ε, low, high)), drawn shaded behind the line."""
        self.series.replace([QPointF(e, _clip(u)) for e, u in points])
        band = points.band() if hasattr(points, "band") else []
        self.band_low.replace([QPointF(e, _clip(lo)) for e, lo, _h in band])
        self.band_high.replace([QPointF(e, _clip(hi)) for e, _l, hi in band])
        level = getattr(points, "level", None)
        self.band.setVisible(bool(band))
        self.setToolTip(f"shaded: the {level:.0%} interval of the instant estimate"
                        if band and level else "")
        lo, hi = self._range
        self.threshold.replace([QPointF(lo, min_utility), QPointF(hi, min_utility)])

    def set_current(self, eps: float | None, utility: float | None) -> None:
        if eps is None or utility is None or math.isnan(utility):
            self.current.clear()
        else:
            self.current.replace([QPointF(eps, max(0.0, min(1.0, utility)))])

    def set_attack_curve(self, points: Sequence[tuple[float, float]]) -> None:
        """(ε, share of noised words the optimal attack recovers); [] hides the line."""
        self.attack.replace([QPointF(e, _clip(s)) for e, s in points])
        if not points:
            self.attack_current.clear()

    def set_attack_current(self, eps: float | None, success: float | None) -> None:
        if eps is None or success is None:
            self.attack_current.clear()
        else:
            self.attack_current.replace([QPointF(eps, _clip(success))])

    def set_recommended(self, eps: float | None, utility: float | None) -> None:
        if eps is None or utility is None:
            self.recommended.clear()
        else:
            self.recommended.replace([QPointF(eps, _clip(utility))])


def _clip(u: float) -> float:
    return max(0.0, min(1.0, u))
