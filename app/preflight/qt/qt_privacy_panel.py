"""The Privacy group of the assessment panel (a view: :mod:`preflight.qt.privacy_ops`
feeds it). Each figure in words a non-expert reads, with a tooltip saying how it was
measured (the methods: docs/PRIVACY.md); the words are shared with the CLI through
:mod:`preflight.app.presentation`."""

from __future__ import annotations

import html
from typing import Any, Mapping

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from preflight.app.presentation import (
    NO_DX_SENTENCE,
    attack_sentence,
    ledger_sentence,
    quasi_sentence,
    reconstruct_idle_text,
    reidentified_sentence,
)
from preflight.app.privacy_report import reconstruct_timing
from preflight.qt import qt_theme

ATTACK_TIP = (
    "How it was measured: the optimal attack on d_X noise. For every word the noise "
    "released, an attacker who knows the method, its ε and a public word-frequency list "
    "guesses the most likely original word (Bayes' rule; how likely the noise turns each "
    "candidate into the released word is estimated by Monte Carlo over the product's own "
    "noise). The share is of the words it guesses exactly. “Came through unchanged” is the "
    "share the noise left as it was: what an attacker gets by taking the text at face "
    "value. Up to 256 words are attacked. See docs/PRIVACY.md.")
NO_DX_TIP = ("This policy adds no d_X noise, so there is no noise to attack: detected "
             "values are replaced before anything leaves, and the rest is sent as written.")
QUASI_TIP = (
    "How it was measured: dates, ages, places, addresses, organizations, nationality or "
    "religious groups and job titles that the payload still carries exactly as written "
    "(a month or a year alone is not listed). Red when they may single a person out: three "
    "kinds, one of them a day, an age or an address, or an address with any other kind "
    "(k-anonymity reasoning; see docs/PRIVACY.md). Grey otherwise: a place, an employer "
    "and a job title still fit thousands of people.")
LEDGER_TIP = (
    "How it was measured: every send records the ε it spends on its document (0 without "
    "d_X). Sends of the same document — the same text, a normalized or an edited copy — "
    "add up (sequential composition): whoever sees every payload can average the noise "
    "away at that rate. A company policy may cap the total.")
RECON_TIP = (
    "How it was measured: the local model is asked to restore the original from the "
    "payload (its first 250 words). A protected value counts as re-identified when its "
    "answer writes it again, verbatim or after normalizing case, spacing and digits. The "
    "small local model is a weak attacker: a floor on what a stronger one could infer.")
RECON_IDLE = reconstruct_idle_text(reconstruct_timing())


def _muted(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("muted")
    return label


class QtPrivacyGroup(QGroupBox):
    """Attack success, quasi-identifiers left, ε spent and the on-demand re-identification."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Privacy", parent)
        self.setObjectName("privacyGroup")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 6)
        lay.setSpacing(4)
        self.attack = QLabel("—")
        self.attack.setObjectName("privacyAttack")
        self.attack.setWordWrap(True)
        self.attack.setToolTip(ATTACK_TIP)
        self.quasi = QLabel("—")
        self.quasi.setObjectName("privacyQuasi")
        self.quasi.setWordWrap(True)
        self.quasi.setToolTip(QUASI_TIP)
        self.quasi.setTextFormat(Qt.TextFormat.RichText)
        self.ledger = _muted("—")
        self.ledger.setToolTip(LEDGER_TIP)
        for w in (self.attack, self.quasi, self.ledger):
            lay.addWidget(w)
        for w in (self.attack, self.ledger):
            w.setTextFormat(Qt.TextFormat.PlainText)   # values from the document
        row = QHBoxLayout()
        self._busy = False
        self.reidentify = QPushButton("Try to re-identify")
        self.reidentify.setObjectName("reidentify")
        self.reidentify.setToolTip(RECON_TIP)
        self.reidentified = _muted(RECON_IDLE)
        self.reidentified.setToolTip(RECON_TIP)
        self.reidentified.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(self.reidentify)
        row.addWidget(self.reidentified, 1)
        lay.addLayout(row)

    def bind(self, privacy: Any, chart: Any) -> None:
        """Show ``privacy`` (a :class:`~preflight.qt.privacy_ops.PrivacyController`)'s
        figures here and its attack on ``chart``; "Try to re-identify" asks it."""
        privacy.sig_facts.connect(self.set_facts)
        privacy.sig_attack.connect(lambda dx: (
            self.set_attack(dx, privacy.uses_dx),
            chart.set_attack_current(*((dx["epsilon"], dx["success"]) if dx else
                                       (None, None)))))
        privacy.sig_attack_curve.connect(chart.set_attack_curve)
        privacy.sig_attack_busy.connect(self.set_attack_busy)
        privacy.sig_attack_failed.connect(self.set_attack_failed)
        privacy.sig_reconstruction.connect(self.set_reconstruction)
        privacy.sig_reconstructing.connect(self.set_reconstructing)
        privacy.sig_reconstruct_failed.connect(self.set_reconstruct_failed)
        privacy.sig_reconstruct_progress.connect(self.reidentified.setText)
        # one button: "Try to re-identify", or "Cancel" while the attempt runs
        self.reidentify.clicked.connect(lambda: privacy.cancel_reconstruction()
                                        if self._busy else privacy.reconstruct())

    def set_facts(self, facts: Mapping[str, Any] | None) -> None:
        if facts is None:
            self.quasi.setText("—")
            self.ledger.setText("—")
            return
        # red only when the kinds left may single a person out; grey otherwise
        palette = qt_theme.colors()
        color = palette.bad if facts.get("quasi_warning") else palette.text_muted
        text = html.escape(quasi_sentence(facts))
        self.quasi.setText(f"<span style='color:{color.name()}'>{text}</span>")
        self.ledger.setText(ledger_sentence(facts["epsilon_ledger"]))

    def set_attack(self, dx: Mapping[str, Any] | None, uses_dx: bool) -> None:
        if not uses_dx:
            self.attack.setText(NO_DX_SENTENCE)
            self.attack.setToolTip(NO_DX_TIP)
            return
        if dx is None:
            self.attack.setText("Measuring how much of the noise an attacker could undo…")
            self.attack.setToolTip(ATTACK_TIP)
            return
        self.attack.setText(attack_sentence(dx))
        err = float(dx.get("mc_error") or 0) + float(dx.get("sampling_error") or 0)
        self.attack.setToolTip(
            ATTACK_TIP + f"\n\nThis payload: ε {dx['epsilon']:.3g}, {dx.get('tokens', '?')} "
            f"noised words, ± {err:.0%} (Monte Carlo and sampling error), "
            f"{float(dx.get('seconds') or 0):.1f} s.")

    def set_attack_busy(self, busy: bool) -> None:
        if busy:
            self.attack.setText("Measuring how much of the noise an attacker could undo…")

    def set_attack_failed(self, why: str) -> None:
        self.attack.setText(f"The attack on the d_X noise could not run: {why}")

    def set_reconstructing(self, busy: bool) -> None:
        self._busy = busy
        self.reidentify.setText("Cancel re-identifying" if busy else "Try to re-identify")

    def set_reconstruction(self, recon: Mapping[str, Any] | None) -> None:
        self.reidentified.setText(RECON_IDLE if recon is None
                                  else reidentified_sentence(recon))

    def set_reconstruct_failed(self, why: str) -> None:
        self.reidentified.setText(f"Could not try: {why}")
