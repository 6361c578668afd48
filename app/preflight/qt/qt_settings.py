"""Settings: providers and keys, local models (the tab lives in `qt_models_tab`), policy,
appearance.

The dialog edits a copy of :class:`Settings`; OK saves it (versioned JSON in the platform
config folder, through the core). API keys never touch the settings: they go to the OS
keyring, or — only when there is none and the user agrees — into memory for this session.
"""

from __future__ import annotations

import copy

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from preflight.app.doorway import Doorway
from preflight.app.presentation import error_text
from preflight.core.config import ProviderSettings, Settings
from preflight.core.org_policy import OrgPolicy
from preflight.qt.qt_dialogs import show_error
from preflight.qt.qt_org_policy import lock_epsilon_spins, lock_min_utility, locked_note
from preflight.qt.qt_models_tab import QtModelsTab
from preflight.qt.qt_policy_settings import QtPoliciesBox

DEFAULT_ENTITY_TYPES = (
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "US_SSN", "CREDIT_CARD", "IBAN_CODE",
    "STREET_ADDRESS", "DATE_OF_BIRTH", "IP_ADDRESS", "API_KEY", "SECRET",
)


def entity_types() -> list[str]:
    try:
        from preflight.core.pii.entities import CATEGORY_BY_TYPE

        return list(CATEGORY_BY_TYPE)
    except ImportError:
        return list(DEFAULT_ENTITY_TYPES)


def _lines(widget: QPlainTextEdit) -> list[str]:
    return [ln.strip() for ln in widget.toPlainText().splitlines() if ln.strip()]


class QtProvidersTab(QWidget):
    def __init__(self, settings: Settings, backend: Doorway, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.backend = backend
        lay = QHBoxLayout(self)
        left = QVBoxLayout()
        self.list = QListWidget()
        self.list.setObjectName("providerList")
        self.list.setAccessibleName("Providers")
        self.list.currentRowChanged.connect(self._load_row)
        left.addWidget(self.list, 1)
        row = QHBoxLayout()
        add = QPushButton("Add")
        add.setObjectName("addProvider")
        add.clicked.connect(self._add)
        rem = QPushButton("Remove")
        rem.clicked.connect(self._remove)
        row.addWidget(add)
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
        self.default = QCheckBox("Use this provider by default")
        form.addRow("Name", self.name)
        form.addRow("Base URL", self.base_url)
        form.addRow("Model", self.model)
        form.addRow("API style", self.style)
        form.addRow("Key variable", self.key_env)
        form.addRow("Input price", self.price_in)
        form.addRow("Output price", self.price_out)
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
        self.keyring_note = QLabel("")
        self.keyring_note.setWordWrap(True)
        self.keyring_note.setObjectName("muted")
        form.addRow(self.keyring_note)
        for w in (self.name, self.base_url, self.model, self.key_env):
            w.editingFinished.connect(self._store_row)
        for sb in (self.price_in, self.price_out):
            sb.valueChanged.connect(self._store_row)
        self.style.currentIndexChanged.connect(self._store_row)
        self.default.toggled.connect(self._store_row)
        lay.addWidget(box, 2)
        self._loading = False
        self._refresh_list()
        try:
            st = backend.keyring_status()
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
                  self.price_in, self.price_out, self.default, self.set_key):
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
        self.default.setChecked(self.settings.default_provider == p.name)
        self._loading = False
        self.key_state.setText(f"key source: {self.backend.key_source(p.name)}")

    def _store_row(self, *_a) -> None:
        p = self._current()
        if p is None or self._loading:
            return
        old = p.name
        url = self.base_url.text().strip()
        if url != p.base_url and not self.backend.org_policy.provider_allowed(url):
            self.base_url.setText(p.base_url)         # refused: the old address stays
            show_error(self, f"The provider address {url} is not allowed by your "
                       "organization's policy.", _allowed_hint(self.backend.org_policy))
            return
        p.name = self.name.text().strip() or old
        p.base_url = url
        p.model = self.model.text().strip()
        p.api_style = self.style.currentData()
        p.key_env = self.key_env.text().strip() or None
        p.price_input_per_mtok = self.price_in.value()
        p.price_output_per_mtok = self.price_out.value()
        if self.default.isChecked():
            self.settings.default_provider = p.name
        elif self.settings.default_provider in (old, p.name):
            self.settings.default_provider = None
        item = self.list.currentItem()
        if item is not None:
            item.setText(p.name)

    def _add(self) -> None:
        names = {p.name for p in self.settings.providers}
        n, name = 1, "provider"
        while name in names:
            n += 1
            name = f"provider-{n}"
        allowed = self.backend.org_policy.allowed_providers
        url = allowed[0] if allowed else "https://api.openai.com/v1"
        self.settings.providers.append(
            ProviderSettings(name=name, base_url=url, model="gpt-4o-mini"))
        self._refresh_list(len(self.settings.providers) - 1)

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
            st = self.backend.keyring_status()
            if not st.available:
                answer = QMessageBox.question(
                    self, "No keyring",
                    f"There is no OS keyring on this machine ({st.reason}).\n\nKeep the key "
                    "in memory for this session only? It is never written to a file.")
                if answer != QMessageBox.StandardButton.Yes:
                    return
                remember = False
            where = self.backend.set_key(p.name, key, remember)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            show_error(self, *error_text(exc))
            return
        self.key_state.setText("stored in the OS keyring" if where == "keyring"
                               else "kept in memory for this session")


def _allowed_hint(org: OrgPolicy) -> str:
    return (f"Allowed: {', '.join(org.allowed_providers or ())}; ask your IT administrator "
            "to add it.")


class QtPolicyTab(QWidget):
    def __init__(self, settings: Settings, parent: QWidget | None = None,
                 org: OrgPolicy | None = None) -> None:
        super().__init__(parent)
        org = org if org is not None else OrgPolicy.none()
        self.settings = settings
        pol, det = settings.policy, settings.detection
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.eps_min = QDoubleSpinBox()
        self.eps_max = QDoubleSpinBox()
        for sb, v in ((self.eps_min, pol.epsilon_min), (self.eps_max, pol.epsilon_max)):
            sb.setRange(0, 100000)
            sb.setDecimals(2)
            sb.setSpecialValueText("calibrated")
            sb.setValue(v or 0)
        self.min_util = QDoubleSpinBox()
        self.min_util.setRange(0, 1)
        self.min_util.setSingleStep(0.05)
        self.min_util.setValue(pol.min_utility)
        self.store_original = QCheckBox("Store the original text in the history (off: only "
                                        "a hash, the payload and the answer)")
        self.store_original.setChecked(settings.store_original_in_audit)
        eps_note = lock_epsilon_spins(org, self.eps_min, self.eps_max)
        util_note = lock_min_utility(org, self.min_util)
        form.addRow("Smallest ε", self.eps_min)
        form.addRow("Largest ε", self.eps_max)
        if eps_note:
            form.addRow("", locked_note(eps_note))
        form.addRow("Minimum utility", self.min_util)
        if util_note:
            form.addRow("", locked_note(util_note))
        form.addRow("", self.store_original)
        lay.addLayout(form)
        self.policies = QtPoliciesBox(settings)
        lay.addWidget(self.policies, 2)
        row = QHBoxLayout()
        deny_box = QGroupBox("Deny-list (always PII: codenames, clients…)")
        dl = QVBoxLayout(deny_box)
        self.deny = QPlainTextEdit("\n".join(det.deny_list))
        self.deny.setObjectName("denyList")
        self.deny.setAccessibleName("Deny-list, one entry per line")
        self.deny.setTabChangesFocus(True)
        self.deny.setPlaceholderText("one entry per line")
        dl.addWidget(self.deny)
        row.addWidget(deny_box)
        allow_box = QGroupBox("Allow-list (never flagged)")
        al = QVBoxLayout(allow_box)
        self.allow = QPlainTextEdit("\n".join(det.allow_list))
        self.allow.setPlaceholderText("one entry per line")
        self.allow.setAccessibleName("Allow-list, one entry per line")
        self.allow.setTabChangesFocus(True)
        al.addWidget(self.allow)
        row.addWidget(allow_box)
        lay.addLayout(row, 1)

    def store(self) -> None:
        pol, det = self.settings.policy, self.settings.detection
        pol.epsilon_min = self.eps_min.value() or None
        pol.epsilon_max = self.eps_max.value() or None
        pol.min_utility = self.min_util.value()
        self.policies.store()
        det.deny_list = _lines(self.deny)
        det.allow_list = _lines(self.allow)
        self.settings.store_original_in_audit = self.store_original.isChecked()


class QtSettingsDialog(QDialog):
    """All settings in one place; OK saves through the core's versioned settings file."""

    sig_saved = Signal()

    def __init__(self, backend: Doorway, parent: QWidget | None = None, tab: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Preflight settings")
        self.setObjectName("settingsDialog")
        self.resize(900, 560)
        self.backend = backend
        self.settings: Settings = copy.deepcopy(backend.settings)
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings pages")
        self.providers = QtProvidersTab(self.settings, backend)
        self.models = QtModelsTab(backend, self.settings)
        self.policy = QtPolicyTab(self.settings, org=backend.org_policy)
        appearance = QWidget()
        af = QFormLayout(appearance)
        self.theme = QComboBox()
        self.theme.setObjectName("theme")
        for label, value in (("Follow the system", "system"), ("Light", "light"),
                             ("Dark", "dark")):
            self.theme.addItem(label, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(self.settings.theme)))
        af.addRow("Theme", self.theme)
        self.tabs.addTab(self.providers, "Providers && keys")
        self.tabs.addTab(self.models, "Local models")
        self.tabs.addTab(self.policy, "Policy")
        self.tabs.addTab(appearance, "Appearance")
        names = {"providers": 0, "models": 1, "policy": 2, "appearance": 3}
        self.tabs.setCurrentIndex(names.get(tab, 0))
        lay.addWidget(self.tabs, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)

    def accept(self) -> None:
        self.providers._store_row()
        self.policy.store()
        self.models.store()
        self.settings.theme = self.theme.currentData()
        # "Use a local file…" saved model paths through the model manager meanwhile.
        self.settings.model_paths = dict(self.backend.settings.model_paths)
        pol = self.settings.policy
        if pol.epsilon_min and pol.epsilon_max and pol.epsilon_min >= pol.epsilon_max:
            show_error(self, "The smallest ε must be below the largest.",
                       "Fix the ε bounds in the Policy tab, or set one to “calibrated”.")
            return
        org, saved = self.backend.org_policy, {(p.name, p.base_url)
                                               for p in self.backend.settings.providers}
        refused = [p for p in self.settings.providers if (p.name, p.base_url) not in saved
                   and not org.provider_allowed(p.base_url)]
        if refused:
            show_error(self, f"The provider address {refused[0].base_url} is not allowed by "
                       "your organization's policy.", _allowed_hint(org))
            return
        names = [p.name for p in self.settings.providers]
        if len(set(names)) != len(names):
            show_error(self, "Two providers have the same name.", "Give each a unique name.")
            return
        try:
            self.backend.save_settings(self.settings)
        except Exception as exc:  # noqa: BLE001
            show_error(self, *error_text(exc))
            return
        self.sig_saved.emit()
        super().accept()
