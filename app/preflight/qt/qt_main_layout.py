"""The main window's widget tree (layout only: no logic, no signal connections).

:func:`build_layout` makes the toolbar, the banners, the three panes (original, sanitized,
controls and assessment in a column that scrolls), the actions above the answer and the
answer pane, and sets each on the window under the name the window's wiring and the
tests use — what Qt Designer's ``setupUi`` does for a ``.ui`` file.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from preflight.qt.qt_access import focus_toolbar, label_fields
from preflight.qt.qt_answer_pane import QtAnswerPane
from preflight.qt.qt_layouts import QtColumnScroll
from preflight.qt.qt_leave_banner import QtLeaveBanner
from preflight.qt.qt_org_policy import QtCompanyNotice, QtOrgBanner
from preflight.qt.qt_panels import QtAssessmentPanel, QtControlsPanel
from preflight.qt.qt_legend import QtLegend
from preflight.qt.qt_preview_view import QtPreviewView
from preflight.qt.qt_text_views import QtOriginalView


def _title(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("paneTitle")
    label.setWordWrap(True)          # wraps in a narrow pane instead of widening the window
    return label


def build_layout(w: Any, app: Any) -> None:
    """Build the main window ``w``'s widgets (``app``: its application layer, read by the
    company banners)."""
    tb = QToolBar("Main")
    tb.setObjectName("mainToolbar")
    tb.setMovable(False)
    tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    w.addToolBar(tb)
    w.act_open = QAction("Open…", w)
    w.act_open.setShortcut(QKeySequence.StandardKey.Open)
    w.act_settings = QAction("Settings", w)
    w.act_settings.setShortcut(QKeySequence("Ctrl+,"))
    w.act_history = QAction("History", w)
    w.act_history.setShortcut(QKeySequence("Ctrl+H"))
    for a in (w.act_open, w.act_settings, w.act_history):
        tb.addAction(a)
    focus_toolbar(tb)
    w.setAcceptDrops(True)     # a file dropped anywhere opens like File → Open
    spacer = QWidget()
    spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    tb.addWidget(spacer)
    tb.addWidget(QLabel("Provider "))
    w.provider = QComboBox()
    w.provider.setObjectName("provider")
    w.provider.setAccessibleName("Cloud provider")
    w.provider.setMinimumWidth(180)
    tb.addWidget(w.provider)

    central = QWidget()
    outer = QVBoxLayout(central)
    outer.setContentsMargins(8, 6, 8, 6)
    w.banner = QFrame()
    w.banner.setObjectName("banner")
    bl = QHBoxLayout(w.banner)
    bl.setContentsMargins(10, 6, 10, 6)
    w.banner_text = QLabel(
        "<b>No cloud provider yet.</b> Everything works locally — detection, sanitization, "
        "the utility prediction and “Keep local” answers. To send to a cloud model, add "
        "an OpenAI-compatible provider and its key in Settings → Providers.")
    w.banner_text.setWordWrap(True)
    w.banner_add = QPushButton("Add a provider…")
    bl.addWidget(w.banner_text, 1)
    bl.addWidget(w.banner_add)
    outer.addWidget(w.banner)
    w.org_banner = QtOrgBanner(app.org_policy)
    outer.addWidget(w.org_banner)
    w.company_notice = QtCompanyNotice(app, w.statusBar())
    outer.addWidget(w.company_notice)
    w.detector_banner = QFrame()          # the detector runs degraded
    w.detector_banner.setObjectName("banner")
    dl = QHBoxLayout(w.detector_banner)
    dl.setContentsMargins(10, 6, 10, 6)
    w.detector_banner_text = QLabel("")
    w.detector_banner_text.setWordWrap(True)
    w.detector_accept = QPushButton("Continue with limited detection")
    dl.addWidget(w.detector_banner_text, 1)
    dl.addWidget(w.detector_accept)
    w.detector_banner.setVisible(False)
    outer.addWidget(w.detector_banner)

    vsplit = QSplitter(Qt.Orientation.Vertical)
    vsplit.setObjectName("vsplit")
    hsplit = QSplitter(Qt.Orientation.Horizontal)
    hsplit.setObjectName("hsplit")

    left = QWidget()
    ll = QVBoxLayout(left)
    ll.setContentsMargins(0, 0, 4, 0)
    head = QHBoxLayout()
    head.addWidget(_title("Original"))
    w.detect_state = QLabel("")
    w.detect_state.setObjectName("muted")
    head.addWidget(w.detect_state, 1, Qt.AlignmentFlag.AlignRight)
    ll.addLayout(head)
    w.legend = QtLegend()
    ll.addWidget(w.legend)
    w.original = QtOriginalView()
    ll.addWidget(w.original, 1)
    hsplit.addWidget(left)

    mid = QWidget()
    ml = QVBoxLayout(mid)
    ml.setContentsMargins(4, 0, 4, 0)
    mhead = QHBoxLayout()
    mhead.addWidget(_title("Sanitized — exactly what would be sent"))
    w.policy_name = QLabel("")
    w.policy_name.setObjectName("policyName")
    w.policy_name.setWordWrap(True)
    mhead.addWidget(w.policy_name)
    w.preview_state = QLabel("")
    w.preview_state.setObjectName("muted")
    mhead.addWidget(w.preview_state, 1, Qt.AlignmentFlag.AlignRight)
    ml.addLayout(mhead)
    w.legend_changed = QtLegend(with_changed=True)
    ml.addWidget(w.legend_changed)
    w.preview = QtPreviewView()
    ml.addWidget(w.preview, 1)
    hsplit.addWidget(mid)

    right = QWidget()
    rl = QVBoxLayout(right)
    rl.setContentsMargins(4, 0, 0, 0)
    w.controls = QtControlsPanel()
    w.assessment = QtAssessmentPanel()
    rl.addWidget(w.controls)
    rl.addWidget(w.assessment, 1)
    # Scrolls when the window is short; as wide as its content needs (no fixed 380
    # px: with the one-line legends and headers the window needed ~1,250 px).
    scroll = w.right_scroll = QtColumnScroll(right)
    scroll.setAccessibleName("Sanitization and assessment")
    hsplit.addWidget(scroll)
    hsplit.setStretchFactor(0, 5)
    hsplit.setStretchFactor(1, 5)
    hsplit.setStretchFactor(2, 3)
    hsplit.setSizes([560, 560, 400])
    vsplit.addWidget(hsplit)

    bottom = QWidget()
    bl2 = QVBoxLayout(bottom)
    bl2.setContentsMargins(0, 0, 0, 0)
    actions = QHBoxLayout()
    w.send_button = QPushButton("Send")
    w.send_button.setObjectName("send")
    w.send_button.setDefault(True)
    w.local_button = QPushButton("Keep local (answer on this computer)")
    w.local_button.setObjectName("keepLocal")
    w.copy_button = QPushButton("Copy sanitized")
    w.copy_button.setObjectName("copySanitized")
    w.decision = QLabel("")
    w.decision.setObjectName("decision")
    w.decision.setWordWrap(True)
    actions.addWidget(w.decision, 1)
    actions.addWidget(w.copy_button)
    actions.addWidget(w.local_button)
    actions.addWidget(w.send_button)
    # what will leave, above Send
    w.leave_banner = QtLeaveBanner(w.doc, w.payload, w.policies)
    bl2.addWidget(w.leave_banner)
    bl2.addLayout(actions)
    w.answer = QtAnswerPane()
    bl2.addWidget(w.answer, 1)
    vsplit.addWidget(bottom)
    vsplit.setStretchFactor(0, 3)
    vsplit.setStretchFactor(1, 1)
    vsplit.setSizes([700, 190])
    w.answer.follow_splitter(vsplit, 1)     # grows when an answer starts
    vsplit.setCollapsible(1, False)          # dragging must not hide Send
    outer.addWidget(vsplit, 1)
    w.setCentralWidget(central)
    label_fields(central)          # inputs announce their labels to screen readers

    w.status_text = QLabel("Starting…")
    w.statusBar().addWidget(w.status_text, 1)

    w.send_shortcut = QShortcut(QKeySequence("Ctrl+Return"), w)
    w.send_shortcut2 = QShortcut(QKeySequence("Ctrl+Enter"), w)
    w.stop_shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), w)
