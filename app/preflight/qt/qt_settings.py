"""Settings: providers and keys (the tab lives in `qt_providers_tab`), local models
(`qt_models_tab`), policy, appearance.

The dialog edits a copy of :class:`Settings`; OK saves it (versioned JSON in the platform
config folder, through the core). API keys never touch the settings: they go to the OS
keyring, or — only when there is none and the user agrees — into memory for this session.
"""

from __future__ import annotations

import copy
from typing import Any

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
    QFrame,
    QPlainTextEdit,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from preflight.app.window_doorway import WindowDoorway
from preflight.app.presentation import error_text
from preflight.core.config import Settings
from preflight.core.errors import PreflightError
from preflight.core.org_policy import OrgPolicy
from preflight.core.send.probe import validate_base_url
from preflight.qt.qt_access import label_fields
from preflight.qt.qt_answers_tab import QtAnswersTab
from preflight.qt.qt_deny_list import QtDenyListBox
from preflight.qt.qt_dialogs import show_error
from preflight.qt.qt_models_tab import QtModelsTab
from preflight.qt.qt_org_policy import lock_epsilon_spins, lock_min_utility, locked_note
from preflight.qt.qt_policy_settings import QtPoliciesBox
from preflight.qt.qt_providers_tab import QtProvidersTab, allowed_hint

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


class QtPolicyTab(QWidget):
    def __init__(self, settings: Settings, parent: QWidget | None = None,
                 org: OrgPolicy | None = None, deny: Any = None) -> None:
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
        # edits det.deny_entries in place: masked entries, never a value in clear
        self.deny = QtDenyListBox(det.deny_entries, deny)
        row.addWidget(self.deny)
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
        det.allow_list = _lines(self.allow)
        self.settings.store_original_in_audit = self.store_original.isChecked()


class QtSettingsDialog(QDialog):
    """All settings in one place; OK saves through the core's versioned settings file."""

    sig_saved = Signal()

    def __init__(self, app: WindowDoorway, parent: QWidget | None = None, tab: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Preflight settings")
        self.setObjectName("settingsDialog")
        self.resize(900, 560)
        self.app = app
        self.settings: Settings = copy.deepcopy(app.settings)
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings pages")
        self.providers = QtProvidersTab(self.settings, app)
        self.models = QtModelsTab(app, self.settings)
        self.policy = QtPolicyTab(self.settings, org=app.org_policy, deny=app.deny)
        appearance = QWidget()
        af = QFormLayout(appearance)
        self.theme = QComboBox()
        self.theme.setObjectName("theme")
        for label, value in (("Follow the system", "system"), ("Light", "light"),
                             ("Dark", "dark")):
            self.theme.addItem(label, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(self.settings.theme)))
        af.addRow("Theme", self.theme)
        self.answers = QtAnswersTab(self.settings)
        # each page scrolls: on a small screen (1366×768 at 150 %) the dialog still fits
        for page, title in ((self.providers, "Providers && keys"),
                            (self.models, "Local models"), (self.policy, "Policy"),
                            (appearance, "Appearance"), (self.answers, "Answers")):
            area = QScrollArea()
            area.setWidgetResizable(True)
            area.setFrameShape(QFrame.Shape.NoFrame)
            area.setAccessibleName(title.replace("&&", "and") + " settings")
            area.setWidget(page)
            self.tabs.addTab(area, title)
        names = {"providers": 0, "models": 1, "policy": 2, "appearance": 3, "answers": 4}
        self.tabs.setCurrentIndex(names.get(tab, 0))
        lay.addWidget(self.tabs, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        label_fields(self)             # inputs announce their labels to screen readers

    def accept(self) -> None:
        self.answers.store()
        self.providers._store_row()
        self.policy.store()
        try:
            self.models.store()              # the company assessor's URL is checked here
        except PreflightError as exc:
            self.tabs.setCurrentIndex(1)     # Local models
            show_error(self, exc.message, exc.hint)
            return
        self.settings.theme = self.theme.currentData()
        # "Use a local file…" saved model paths through the model manager meanwhile.
        self.settings.model_paths = dict(self.app.settings.model_paths)
        pol = self.settings.policy
        if pol.epsilon_min and pol.epsilon_max and pol.epsilon_min >= pol.epsilon_max:
            show_error(self, "The smallest ε must be below the largest.",
                       "Fix the ε bounds in the Policy tab, or set one to “calibrated”.")
            return
        org, saved = self.app.org_policy, {(p.name, p.base_url)
                                               for p in self.app.settings.providers}
        refused = [p for p in self.settings.providers if (p.name, p.base_url) not in saved
                   and not org.provider_allowed(p.base_url)]
        if refused:
            show_error(self, f"The provider address {refused[0].base_url} is not allowed by "
                       "your organization's policy.", allowed_hint(org))
            return
        for p in self.settings.providers:
            try:
                validate_base_url(p)
            except PreflightError as exc:
                show_error(self, f"Provider '{p.name}': {exc.message}", exc.hint)
                return
        names = [p.name for p in self.settings.providers]
        if len(set(names)) != len(names):
            show_error(self, "Two providers have the same name.", "Give each a unique name.")
            return
        try:
            self.app.save_settings(self.settings)
        except Exception as exc:  # noqa: BLE001
            show_error(self, *error_text(exc))
            return
        self.sig_saved.emit()
        super().accept()
