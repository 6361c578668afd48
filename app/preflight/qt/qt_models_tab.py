"""Settings → Models: the state of every model role, install, download and choose files,
and the company-hosted assessor (URL, model, "internal", a "Test" of the server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QGroupBox,
    QInputDialog,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from preflight.app.window_doorway import WindowDoorway
from preflight.app.ops_status import validate_endpoint
from preflight.app.presentation import error_text
from preflight.core.config import ASSESSOR_SLMS, AssessorEndpointSettings, Settings
from preflight.qt.qt_dialogs import show_error
from preflight.core.org_policy import LOCKED_TEXT as LOCKED
from preflight.qt.qt_org_policy import locked_note
from preflight.qt.qt_providers_tab import QtConnectionTest
from preflight.qt.qt_workers import QtOp

INTERNAL_HELP = (
    "Only your organization's policy can mark a server internal: the original document is "
    "then sent to it (for the features computed on the original), over https. A server "
    "named here receives only the sanitized text; the original stays on this computer.")


class QtAssessorTest(QtConnectionTest):
    """"Test": asks the company assessor for its model list (GET /v1/models, in the
    background); no document text is sent."""

    def __init__(self, app: WindowDoorway, endpoint: Any, parent: QWidget | None = None
                 ) -> None:
        super().__init__(app, lambda: None, parent)
        self._endpoint = endpoint               # () -> (url, model) as edited
        self.button.setText("Test")
        self.button.setObjectName("testAssessor")
        self.button.setToolTip("Asks the server for its model list (GET /v1/models). "
                               "No document text is sent.")

    def run(self) -> None:
        url, model = self._endpoint()
        self.clear()
        if not url:
            self.state.setText("✘ Enter the server's URL first.")
            return
        self.button.setEnabled(False)
        self.state.setText(f"Connecting to {url} …")
        self._op = QtOp(self, lambda ctx: self.app.check_assessor(url, model),
                        self._done, self._failed, lane="pool").run()


class QtAssessorBox(QGroupBox):
    """The company-hosted assessor of the settings; locked to the company policy's when
    it names one (the policy's ``[assessor]`` wins)."""

    def __init__(self, app: WindowDoorway, settings: Settings,
                 parent: QWidget | None = None) -> None:
        super().__init__("Company-hosted assessor (optional)", parent)
        self.settings = settings
        form = QFormLayout(self)
        about = QLabel("An OpenAI-compatible server of your company (llama.cpp's server, "
                       "vLLM) that computes the utility features instead of the model on "
                       "this computer. Leave the URL empty to assess here only.")
        about.setWordWrap(True)
        about.setObjectName("muted")
        form.addRow(about)
        own = settings.assessor_endpoint
        fixed = app.org_policy.assessor_endpoint
        self.locked = fixed is not None
        shown = fixed if fixed is not None else own
        self.url = QLineEdit(shown.url if shown else "")
        self.url.setObjectName("assessorUrl")
        self.url.setPlaceholderText("http://gpu-box:8000/v1")
        self.model = QLineEdit(shown.model if shown else "")
        self.model.setObjectName("assessorModel")
        self.model.setPlaceholderText("the model's id on the server (empty: its only one)")
        self.internal = QCheckBox("Internal (the original document may be sent to it)")
        self.internal.setObjectName("assessorInternal")
        self.internal.setChecked(bool(fixed and fixed.internal))
        self.internal.setEnabled(False)          # set by the company policy only
        self.internal.setToolTip(INTERNAL_HELP)
        help_text = QLabel(INTERNAL_HELP)
        help_text.setWordWrap(True)
        help_text.setObjectName("muted")
        form.addRow("Server URL", self.url)
        form.addRow("Model name", self.model)
        form.addRow("", self.internal)
        form.addRow("", help_text)
        self.test = QtAssessorTest(app, lambda: (self.url.text().strip(),
                                                     self.model.text().strip()))
        form.addRow("", self.test)
        if self.locked:
            for w in (self.url, self.model, self.internal):
                w.setEnabled(False)
                w.setToolTip(f"The company assessor is {LOCKED}.")
            form.addRow("", locked_note("The company assessor"))

    def store(self) -> None:
        """Copy the endpoint into the settings being edited; a ConfigError (the settings
        file's own rules) when it is not valid. Locked: the settings keep theirs."""
        if self.locked:
            return
        url, model = self.url.text().strip(), self.model.text().strip()
        if not url:
            self.settings.assessor_endpoint = None
            return
        validate_endpoint(url, model, False)
        self.settings.assessor_endpoint = AssessorEndpointSettings(url, model)


class QtModelsTab(QWidget):
    sig_models_changed = Signal()

    def __init__(self, app: WindowDoorway, settings: Settings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self.settings = settings if settings is not None else app.settings
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.assessor_slm = QComboBox()
        self.assessor_slm.setObjectName("assessorSlm")
        self.assessor_slm.setToolTip("The local model that computes the utility features "
                                     "(C, D, perplexity) and repairs grammar. Each has a "
                                     "utility model fitted on its own features, and learns "
                                     "from your sends apart; the d_X token space does not "
                                     "change with it.")
        for role in ASSESSOR_SLMS:
            self.assessor_slm.addItem(role, role)
        self.assessor_slm.setCurrentIndex(
            max(0, self.assessor_slm.findData(self.settings.assessor_slm)))
        self.assessor_slm.currentIndexChanged.connect(lambda _i: self._show_slm_warning())
        form.addRow("Assessor's local model", self.assessor_slm)
        lay.addLayout(form)
        self.assessor = QtAssessorBox(app, self.settings)
        lay.addWidget(self.assessor)
        self.slm_warning = QLabel("")
        self.slm_warning.setObjectName("slmWarning")
        self.slm_warning.setWordWrap(True)
        lay.addWidget(self.slm_warning)
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("modelTable")
        self.table.setAccessibleName("Models")
        self.table.setHorizontalHeaderLabels(["Role", "Model", "State", "Path"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
        lay.addWidget(self.table, 1)
        self.note = QLabel("Checking the local models…")
        self.note.setWordWrap(True)
        self.note.setObjectName("muted")
        lay.addWidget(self.note)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        lay.addWidget(self.progress)
        row = QHBoxLayout()
        self.install = QPushButton("Install missing models")
        self.install.clicked.connect(self._install)
        self.cancel = QPushButton("Cancel")
        self.cancel.setVisible(False)
        self.cancel.clicked.connect(lambda: self._op is not None and self._op.cancel(drop=False))
        self.use = QPushButton("Use a local file…")
        self.use.clicked.connect(self._use_local)
        self.reset = QPushButton("Reset to default")
        self.reset.clicked.connect(self._reset)
        self.hub = QPushButton("Download from the Hub…")
        self.hub.clicked.connect(self._hub)
        for b in (self.install, self.cancel, self.use, self.reset, self.hub):
            row.addWidget(b)
        row.addStretch(1)
        lay.addLayout(row)
        self._op: QtOp | None = None
        self._done_text = ""
        self.statuses: list[Any] = []
        self.refresh()

    def refresh(self) -> None:
        QtOp(self, lambda ctx: self.app.model_status(), self._show, self._failed).run()

    def store(self) -> None:
        """Copy the chosen assessor SLM and the company assessor into the settings being
        edited; a ConfigError when the assessor's URL or model is not valid."""
        self.assessor.store()
        self.settings.assessor_slm = self.assessor_slm.currentData()

    def _show_slm_warning(self) -> None:
        """A chosen SLM that is not installed: say which one is used instead (the first
        installed one of ``ASSESSOR_SLMS``, as the composition root picks it)."""
        by_role = {s.role: s for s in self.statuses}
        chosen = by_role.get(self.assessor_slm.currentData())
        if chosen is None or chosen.state not in ("missing", "corrupt"):
            self.slm_warning.setText("")
            return
        used = next((by_role[r] for r in ASSESSOR_SLMS if r != chosen.role and r in by_role
                     and by_role[r].state not in ("missing", "corrupt")), None)
        instead = (f"{used.name} is used instead" if used else
                   "no local model can assess the utility")
        self.slm_warning.setText(
            f"⚠ {chosen.name} is {'not installed' if chosen.state == 'missing' else 'damaged'}"
            f": {instead}. Install it with “Install missing models” or `preflight models "
            f"install --role {chosen.role}`.")

    def _show(self, statuses: list[Any]) -> None:
        self.statuses = statuses
        for i, role in enumerate(ASSESSOR_SLMS):
            st = next((s for s in statuses if s.role == role), None)
            if st is not None:
                missing = " — not installed" if st.state in ("missing", "corrupt") else ""
                self.assessor_slm.setItemText(i, st.name + missing)
        self._show_slm_warning()
        self.table.setRowCount(len(statuses))
        for r, st in enumerate(statuses):
            opt = " (optional)" if getattr(st, "optional", False) else ""
            for c, val in enumerate((st.role, st.name + opt, st.state, str(st.path))):
                item = QTableWidgetItem(val)
                if c == 2:
                    item.setToolTip(getattr(st, "detail", "") or st.state)
                self.table.setItem(r, c, item)
        missing = [s for s in statuses if s.state in ("missing", "corrupt")
                   and not getattr(s, "optional", False)]
        done, self._done_text = self._done_text, ""
        self.note.setText((done + " " if done else "") + (
            "All required models are installed and verified." if not missing else
            f"{len(missing)} required model(s) missing or damaged: "
            + ", ".join(s.role for s in missing) + ". Install them here or run "
            "`preflight models install`."))

    def _failed(self, exc: BaseException) -> None:
        msg, hint = error_text(exc)
        self.note.setText(f"{msg} {hint}")
        self._busy(False)

    def _busy(self, on: bool) -> None:
        self.progress.setVisible(on)
        self.cancel.setVisible(on)
        for b in (self.install, self.use, self.reset, self.hub):
            b.setEnabled(not on)

    def _progress(self, fraction: float, message: str) -> None:
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(fraction * 1000))
        self.progress.setFormat(f"{message} — %p%")

    def _run(self, fn, done_text: str) -> None:
        self._busy(True)
        self.progress.setRange(0, 0)

        def done(_res: Any) -> None:
            self._busy(False)
            self._done_text = done_text
            self.refresh()
            self.sig_models_changed.emit()

        self._op = QtOp(self, fn, done, self._failed, progress=self._progress).run()

    def _install(self) -> None:
        self._run(lambda ctx: self.app.install_models(ctx.progress, ctx.cancel),
                  "Models installed.")

    def _selected_role(self) -> str | None:
        r = self.table.currentRow()
        return self.statuses[r].role if 0 <= r < len(self.statuses) else None

    def _use_local(self) -> None:
        role = self._selected_role()
        if role is None:
            self.note.setText("Select a model row first.")
            return
        if role in ("similarity", "ner"):
            path = QFileDialog.getExistingDirectory(self, f"Folder of the {role} model")
        else:
            path, _ = QFileDialog.getOpenFileName(self, f"File of the {role} model", "",
                                                  "GGUF models (*.gguf);;All files (*)")
        if path:
            try:
                self.app.use_model(role, Path(path))
            except Exception as exc:  # noqa: BLE001
                show_error(self, *error_text(exc))
            self.refresh()
            self.sig_models_changed.emit()

    def _reset(self) -> None:
        role = self._selected_role()
        if role is not None:
            try:
                self.app.use_model(role, None)
            except Exception as exc:  # noqa: BLE001
                show_error(self, *error_text(exc))
            self.refresh()
            self.sig_models_changed.emit()

    def _hub(self) -> None:
        role = self._selected_role() or "slm"
        spec, ok = QInputDialog.getText(
            self, "Download from the Hugging Face Hub",
            f"Repository and file for role '{role}', e.g.\n"
            "bartowski/Llama-3.2-1B-Instruct-GGUF Llama-3.2-1B-Instruct-Q4_K_M.gguf")
        if not ok or len(spec.split()) != 2:
            return
        repo, filename = spec.split()
        self._run(lambda ctx: self.app.download_model(repo, filename, role, ctx.progress,
                                                          ctx.cancel),
                  f"Downloaded {filename}; role '{role}' now uses it.")
