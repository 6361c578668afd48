"""History: the audit log, one row per send or local answer; a selected row shows what
was sent (and the answer), in this computer's time; Export writes the log to a file. The
sends of one document's conversation share a conversation id, numbered by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from preflight.app.presentation import error_text, format_cost, local_time
from preflight.core.send.answer_guard import neutralize
from preflight.qt.qt_dialogs import documents_path, pretty_payload, show_error
from preflight.qt.qt_workers import QtOp


HISTORY_COLUMNS = (
    ("created_at", "Time"), ("kind", "Kind"), ("status", "Status"), ("provider", "Provider"),
    ("model", "Model"), ("method", "Method"), ("epsilon", "ε"), ("input_tokens", "Tokens in"),
    ("output_tokens", "Tokens out"), ("cost", "Cost"), ("predicted_utility", "Predicted"),
    ("realized_utility", "Realized"), ("conversation", "Conversation"),
)


class QtHistoryDialog(QDialog):
    """The audit log: one row per send or local answer; select a row to see what was sent."""

    sig_export = Signal(str)

    def __init__(self, rows: Sequence[dict[str, Any]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("History — everything Preflight sent")
        self.setObjectName("historyDialog")
        self.resize(1100, 640)
        self.rows = list(rows)
        lay = QVBoxLayout(self)
        intro = QLabel("Every send is recorded here before the request leaves, with the exact "
                       "payload and the answer. The original text is stored only if you opted "
                       "in (Settings → Policy).")
        intro.setWordWrap(True)
        intro.setObjectName("muted")
        lay.addWidget(intro)
        split = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(len(self.rows), len(HISTORY_COLUMNS))
        self.table.setObjectName("historyTable")
        self.table.setAccessibleName("Sends and local answers")
        self.table.setTabKeyNavigation(False)     # Tab leaves the table; arrows move in it
        self.table.setHorizontalHeaderLabels([c[1] for c in HISTORY_COLUMNS])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        for r, row in enumerate(self.rows):
            for c, (key, _label) in enumerate(HISTORY_COLUMNS):
                text = turn_label(row) if key == "conversation" else _cell(key, row.get(key))
                self.table.setItem(r, c, QTableWidgetItem(text))
        self.table.itemSelectionChanged.connect(self._show_detail)
        split.addWidget(self.table)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setObjectName("historyDetail")
        self.detail.setAccessibleName("Payload and answer of the selected record")
        self.detail.setTabChangesFocus(True)
        self.detail.setPlaceholderText("Select a row to see its payload and answer.")
        split.addWidget(self.detail)
        lay.addWidget(split, 1)
        bar = QHBoxLayout()
        self.count = QLabel(f"{len(self.rows)} record(s)")
        bar.addWidget(self.count, 1)
        export = QPushButton("Export…")
        export.setObjectName("exportHistory")
        export.clicked.connect(self._export)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        bar.addWidget(export)
        bar.addWidget(close)
        lay.addLayout(bar)
        if self.rows:
            self.table.selectRow(0)

    def _show_detail(self) -> None:
        r = self.table.currentRow()
        if not 0 <= r < len(self.rows):
            return
        row = self.rows[r]
        payload = row.get("payload") or b""
        if isinstance(payload, (bytes, bytearray)):
            payload = pretty_payload(bytes(payload))
        parts = [f"Payload sent:\n{payload or '(nothing was sent: local answer)'}"]
        if (row.get("turn") or 0) > 1:
            parts.insert(0, f"Follow-up ({turn_label(row)}): the payload carries the earlier "
                         "questions and the provider's answers as it sent them.\n")
        allowed = _overrides(row.get("overrides"))
        if allowed:
            parts.append("\nSent as written, with your confirmation: " + "; ".join(allowed))
        # Records written before answers were guarded may hold control or bidi characters.
        if row.get("answer_restored"):
            parts.append(f"\nAnswer (restored):\n{neutralize(row['answer_restored'])}")
        elif row.get("answer_raw") and row.get("kind") != "local":
            parts.append(f"\nAnswer (as the provider sent it; answers with the real names "
                         f"are stored only with the original text, Settings → Policy):\n"
                         f"{neutralize(row['answer_raw'])}")
        elif row.get("kind") == "local":
            parts.append("\nThe local answer is stored only with the original text "
                         "(Settings → Policy).")
        if row.get("error"):
            parts.append(f"\nError: {row['error']}")
        self.detail.setPlainText("\n".join(parts))

    def _export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export history",
                                              documents_path("preflight-history.csv"),
                                              "CSV (*.csv);;JSON (*.json)")
        if path:
            self.sig_export.emit(path)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return ""
    if key in ("predicted_utility", "realized_utility") and isinstance(value, float):
        return f"{value:.2f}"
    if key == "epsilon" and isinstance(value, float):
        return f"{value:.3g}"
    if key == "cost" and isinstance(value, (int, float)):
        return format_cost(float(value))
    if key == "created_at":
        return local_time(str(value), seconds=True)
    return str(value)


def turn_label(row: dict[str, Any]) -> str:
    """"a1b2c3 · turn 2": the conversation a send belonged to (empty: none recorded)."""
    conv = row.get("conversation")
    return f"{str(conv)[:6]} · turn {row.get('turn') or 1}" if conv else ""


def _overrides(value: Any) -> list[str]:
    """The log's overrides: readable labels ("EMAIL_ADDRESS j…@…com allowed"); records
    from before labels hold finding ids, shown as "an item (id …)"."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return [value]
    out = []
    for item in value or ():
        text = str(item)
        out.append(text if " " in text else f"an item the re-scan flagged ({text})")
    return out


def open_history(parent: QWidget, app: Any, shown: Callable[[QtHistoryDialog], None],
                 status: Callable[[str], None]) -> None:
    """Read the audit log off the window's thread, then show it; Export writes it off the
    window's thread too (``status`` says how many records went where)."""
    def export(path: str) -> None:
        QtOp(parent, lambda ctx: app.export_history(Path(path)),
             lambda n: status(f"Exported {n} record(s) to {path}."),
             lambda exc: show_error(parent, *error_text(exc))).run()

    def show(rows) -> None:
        dlg = QtHistoryDialog(rows, parent)
        dlg.sig_export.connect(export)
        shown(dlg)
        dlg.open()

    QtOp(parent, lambda ctx: app.history(), show,
         lambda exc: show_error(parent, *error_text(exc))).run()
