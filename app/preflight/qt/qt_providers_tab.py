"""Settings → Providers & keys: the provider list, presets and "Test connection".

Presets (OpenAI, Azure OpenAI, Mistral, Gemini, local llama.cpp/vLLM/Ollama) fill the base
URL, API style and a model name; every field stays editable.

A key is bound to the provider's address (scheme, host, port): after the base URL moves
to another address the tab says no key is set there, and "Set API key…" stores one for
the new address only.

The test runs only when the user clicks it, in the background (a slow DNS lookup never
freezes the dialog), on the provider as edited — not yet saved. The request itself is
the app's (:meth:`WindowDoorway.check_connection`): a GET of ``<base_url>/models`` with the
key, never any document text.
"""

from __future__ import annotations

import copy
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from preflight.app.presentation import error_text
from preflight.app.provider_keys import base_url_problem
from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import (
    CONTEXT_TOKENS_DEFAULT, CONTEXT_TOKENS_RANGE, ProviderSettings, Settings,
)
from preflight.core.org_policy import OrgPolicy
from preflight.core.send.presets import PRESETS, ProviderPreset
from preflight.qt.qt_dialogs import show_error
from preflight.qt.qt_workers import QtOp


def presets_menu(parent: QWidget, chosen: Callable[[ProviderPreset], None]) -> QMenu:
    """One entry per preset (OpenAI, Azure, Mistral, Gemini, local servers)."""
    menu = QMenu(parent)
    for p in PRESETS:
        act = menu.addAction(p.label)
        act.setData(p.key)
        act.triggered.connect(lambda _=False, p=p: chosen(p))
    return menu


class QtConnectionTest(QWidget):
    """A "Test connection" button and the line that tells how it went."""

    def __init__(self, app: WindowDoorway, current: Callable[[], ProviderSettings | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.app = app
        self._current = current
        self._op: QtOp | None = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.button = QPushButton("Test connection")
        self.button.setObjectName("testConnection")
        self.button.setToolTip("Asks the provider for its model list with your key. "
                               "No document text is sent.")
        self.button.clicked.connect(self.run)
        self.state = QLabel("")
        self.state.setObjectName("connectionState")
        self.state.setWordWrap(True)
        lay.addWidget(self.button)
        lay.addWidget(self.state, 1)

    def clear(self) -> None:
        if self._op is not None:
            self._op.cancel()
            self._op = None
        self.button.setEnabled(True)
        self.state.setText("")

    def run(self) -> None:
        provider = self._current()
        if provider is None:
            return
        self.clear()
        snapshot = copy.deepcopy(provider)      # the dialog may change while it runs
        self.button.setEnabled(False)
        self.state.setText(f"Connecting to {snapshot.base_url} …")
        self._op = QtOp(self, lambda ctx: self.app.check_connection(snapshot),
                        self._done, self._failed, lane="pool").run()

    def _done(self, report) -> None:
        self._op = None
        self.button.setEnabled(True)
        self.state.setText(f"✔ {report.message}")

    def _failed(self, exc: BaseException) -> None:
        self._op = None
        self.button.setEnabled(True)
        message, hint = error_text(exc)
        self.state.setText(f"✘ {message} {hint}".strip())


class QtProvidersTab(QWidget):
    def __init__(self, settings: Settings, app: WindowDoorway, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.app = app
        lay = QHBoxLayout(self)
        left = QVBoxLayout()
        self.list = QListWidget()
        self.list.setAccessibleName("Providers")
        self.list.setObjectName("providerList")
        self.list.currentRowChanged.connect(self._load_row)
        left.addWidget(self.list, 1)
        row = QHBoxLayout()
        add = QPushButton("Add")
        add.setObjectName("addProvider")
        add.setToolTip("A blank OpenAI-compatible provider")
        add.clicked.connect(self._add)
        self.add_preset = QPushButton("Add preset")
        self.add_preset.setObjectName("addPreset")
        self.add_preset.setMenu(presets_menu(self, self.add_from_preset))
        rem = QPushButton("Remove")
        rem.clicked.connect(self._remove)
        row.addWidget(add)
        row.addWidget(self.add_preset)
        row.addWidget(rem)
        left.addLayout(row)
        lay.addLayout(left, 1)

        box = QGroupBox("Provider (any OpenAI-compatible endpoint)")
        form = QFormLayout(box)
        self.name = QLineEdit()
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("https://api.openai.com/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("gpt-4o-mini")
        self.style = QComboBox()
        self.style.addItem("Chat completions (/chat/completions)", "chat")
        self.style.addItem("Completions (/completions, base models)", "completions")
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText("optional: environment variable holding the key")
        self.price_in = QDoubleSpinBox()
        self.price_out = QDoubleSpinBox()
        for sb in (self.price_in, self.price_out):
            sb.setRange(0, 1000)
            sb.setDecimals(3)
            sb.setSuffix(" per 1M tokens")
        self.context = QSpinBox()           # the model's context window (long documents)
        self.context.setObjectName("contextTokens")
        self.context.setRange(*CONTEXT_TOKENS_RANGE)
        self.context.setSingleStep(1024)
        self.context.setGroupSeparatorShown(True)
        self.context.setSuffix(" tokens")
        self.context.setToolTip(
            f"How many tokens the model reads at once (request + answer). A new custom "
            f"provider starts at {CONTEXT_TOKENS_DEFAULT:,}, an assumption: set your model's. "
            "A longer document is sent as its first part or as a chunked summary.")
        self.default = QCheckBox("Use this provider by default")
        form.addRow("Name", self.name)
        form.addRow("Base URL", self.base_url)
        self.url_problem = QLabel("")          # why the address typed would be refused
        self.url_problem.setObjectName("urlProblem")
        self.url_problem.setWordWrap(True)
        self.url_problem.setTextFormat(Qt.TextFormat.PlainText)
        self.url_problem.setVisible(False)
        form.addRow("", self.url_problem)
        form.addRow("Model", self.model)
        form.addRow("API style", self.style)
        form.addRow("Key variable", self.key_env)
        form.addRow("Input price", self.price_in)
        form.addRow("Output price", self.price_out)
        form.addRow("Context window", self.context)
        form.addRow("", self.default)
        keyrow = QHBoxLayout()
        self.set_key = QPushButton("Set API key…")
        self.set_key.clicked.connect(self._set_key)
        self.key_state = QLabel("")
        self.key_state.setObjectName("muted")
        self.key_state.setWordWrap(True)
        keyrow.addWidget(self.set_key)
        keyrow.addWidget(self.key_state, 1)
        form.addRow("API key", keyrow)
        self.test = QtConnectionTest(app, self._current)
        form.addRow("", self.test)
        self.keyring_note = QLabel("")
        self.keyring_note.setWordWrap(True)
        self.keyring_note.setObjectName("muted")
        form.addRow(self.keyring_note)
        for w in (self.name, self.base_url, self.model, self.key_env):
            w.editingFinished.connect(self._store_row)
        for sb in (self.price_in, self.price_out, self.context):
            sb.valueChanged.connect(self._store_row)
        self.style.currentIndexChanged.connect(self._store_row)
        self.default.toggled.connect(self._store_row)
        lay.addWidget(box, 2)
        self._loading = False
        self._refresh_list()
        try:
            st = app.keyring_status()
            self.keyring_note.setText(
                f"Keys are stored in the OS keyring ({st.backend})." if st.available else
                f"No OS keyring on this machine ({st.reason}). A key can be kept in memory "
                "for this session, or read from an environment variable at send time.")
        except Exception:  # noqa: BLE001 - informational only
            pass

    def _refresh_list(self, select: int = 0) -> None:
        self.list.clear()
        for p in self.settings.providers:
            QListWidgetItem(p.name, self.list)
        if self.settings.providers:
            self.list.setCurrentRow(min(select, len(self.settings.providers) - 1))
        self._enable(bool(self.settings.providers))

    def _enable(self, on: bool) -> None:
        for w in (self.name, self.base_url, self.model, self.style, self.key_env,
                  self.price_in, self.price_out, self.context, self.default, self.set_key,
                  self.test):
            w.setEnabled(on)
        if not on:
            self.key_state.setText("Add a provider to send documents to a cloud model. "
                                   "Without one, Preflight still works locally.")

    def _current(self) -> ProviderSettings | None:
        i = self.list.currentRow()
        return self.settings.providers[i] if 0 <= i < len(self.settings.providers) else None

    def _load_row(self, _row: int) -> None:
        p = self._current()
        if p is None:
            return
        self._loading = True
        self.name.setText(p.name)
        self.base_url.setText(p.base_url)
        self.model.setText(p.model)
        self.style.setCurrentIndex(max(0, self.style.findData(p.api_style)))
        self.key_env.setText(p.key_env or "")
        self.price_in.setValue(p.price_input_per_mtok)
        self.price_out.setValue(p.price_output_per_mtok)
        self.context.setValue(p.context_tokens)
        self.default.setChecked(self.settings.default_provider == p.name)
        self._loading = False
        self.test.clear()
        problem = base_url_problem(p)
        self.url_problem.setText(problem or "")
        self.url_problem.setVisible(bool(problem))
        self._show_key_source(p)

    def _show_key_source(self, p: ProviderSettings) -> None:
        try:
            where = self.app.key_source(p)
        except Exception as exc:  # noqa: BLE001 - informational; never blocks the tab
            where = error_text(exc)[0]
        self.key_state.setText(f"Key: {where}")

    def _store_row(self, *_a) -> None:
        p = self._current()
        if p is None or self._loading:
            return
        old = p.name
        url = self.base_url.text().strip()
        if url != p.base_url and not self.app.org_policy.provider_allowed(url):
            self.base_url.setText(p.base_url)         # refused: the old address stays
            show_error(self, f"The provider address {url} is not allowed by your "
                       "organization's policy.", allowed_hint(self.app.org_policy))
            return
        p.name = self.name.text().strip() or old
        p.base_url = url
        # said at once; OK refuses to save while it stands (QtSettingsDialog.accept)
        problem = base_url_problem(p)
        self.url_problem.setText(problem or "")
        self.url_problem.setVisible(bool(problem))
        p.model = self.model.text().strip()
        p.api_style = self.style.currentData()
        p.key_env = self.key_env.text().strip() or None
        p.price_input_per_mtok = self.price_in.value()
        p.price_output_per_mtok = self.price_out.value()
        p.context_tokens = self.context.value()
        if self.default.isChecked():
            self.settings.default_provider = p.name
        elif self.settings.default_provider in (old, p.name):
            self.settings.default_provider = None
        item = self.list.currentItem()
        if item is not None:
            item.setText(p.name)
        self._show_key_source(p)          # a key is bound to the address: moved, none

    def _add(self) -> None:
        names = {p.name for p in self.settings.providers}
        n, name = 1, "provider"
        while name in names:
            n += 1
            name = f"provider-{n}"
        allowed = self.app.org_policy.allowed_providers
        url = allowed[0] if allowed else "https://api.openai.com/v1"
        self.settings.providers.append(
            ProviderSettings(name=name, base_url=url, model="gpt-4o-mini"))
        self._refresh_list(len(self.settings.providers) - 1)

    def add_from_preset(self, preset: ProviderPreset) -> None:
        """A new provider filled from ``preset`` (base URL, API style, model)."""
        if not self.app.org_policy.provider_allowed(preset.base_url):
            show_error(self, f"The provider address {preset.base_url} is not allowed by "
                       "your organization's policy.", allowed_hint(self.app.org_policy))
            return
        names = {p.name for p in self.settings.providers}
        name, n = preset.key, 1
        while name in names:
            n += 1
            name = f"{preset.key}-{n}"
        self.settings.providers.append(preset.settings(name))
        self._refresh_list(len(self.settings.providers) - 1)
        self.test.state.setText(preset.note)

    def _remove(self) -> None:
        i = self.list.currentRow()
        if 0 <= i < len(self.settings.providers):
            removed = self.settings.providers.pop(i)
            if self.settings.default_provider == removed.name:
                self.settings.default_provider = None
            self._refresh_list(max(0, i - 1))

    def _set_key(self) -> None:
        p = self._current()
        if p is None:
            return
        key, ok = QInputDialog.getText(self, "API key", f"API key for {p.name}:",
                                       QLineEdit.EchoMode.Password)
        if not ok or not key.strip():
            return
        remember = True
        try:
            st = self.app.keyring_status()
            if not st.available:
                answer = QMessageBox.question(
                    self, "No keyring",
                    f"There is no OS keyring on this machine ({st.reason}).\n\nKeep the key "
                    "in memory for this session only? It is never written to a file.")
                if answer != QMessageBox.StandardButton.Yes:
                    return
                remember = False
            self.app.set_key(p, key, remember)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            show_error(self, *error_text(exc))
            return
        self._show_key_source(p)


def allowed_hint(org: OrgPolicy) -> str:
    return (f"Allowed: {', '.join(org.allowed_providers or ())}; ask your IT administrator "
            "to add it.")
