"""The window's logic, kept out of the views: the controllers and how they are wired.

Each controller owns its state and its background ops (through
:mod:`preflight.qt.qt_workers`: named lanes, "the latest request wins"), reads its
upstream collaborators through their public attributes and hears about their changes
through signals — no controller reaches into another's state:

- :class:`~preflight.qt.document_ops.DocumentController` — the text, the detector and the
  detections (with the user's exclusions);
- :class:`~preflight.qt.policy_ops.PolicyController` — the policy in force, the legend's
  changes, the ε range;
- :class:`~preflight.qt.payload_ops.PayloadController` — the sanitized preview at the
  slider's ε, and whether it is fresh (the window fails closed on it);
- :class:`~preflight.qt.utility_ops.UtilityController` — predictions, the utility curve,
  "Find best ε", the cost estimate;
- :class:`~preflight.qt.answers.AnswerController` — "Send" and "Keep local", streamed;
- :class:`~preflight.qt.privacy_ops.PrivacyController` — the Privacy group's figures.

:func:`build_controllers` makes the six over one application layer (a
:class:`~preflight.app.window_doorway.WindowDoorway`) and connects them; the window
connects its views to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject

from preflight.qt.answers import AnswerController
from preflight.qt.document_ops import DocumentController
from preflight.qt.long_send import LongSendController
from preflight.qt.payload_ops import PayloadController, PreviewResult
from preflight.qt.policy_ops import PolicyController
from preflight.qt.privacy_ops import PrivacyController
from preflight.qt.utility_ops import UtilityController

__all__ = ["Controllers", "PreviewResult", "build_controllers"]


@dataclass(frozen=True)
class Controllers:
    doc: DocumentController
    policies: PolicyController
    payload: PayloadController
    utility: UtilityController
    answers: AnswerController
    privacy: PrivacyController
    long: LongSendController

    def start(self) -> None:
        """Load the policies the controls need and warm the detector, in the background."""
        self.policies.load()
        self.doc.start()

    def settings_changed(self) -> None:
        """The settings were saved: policies, ε range, detections and cost follow."""
        self.utility.settings_changed()
        self.policies.settings_changed()
        self.doc.redetect()

    def cancel_all(self) -> None:
        """Cancel every op the controllers started (their results are dropped)."""
        for c in (self.doc, self.payload, self.utility, self.privacy):
            c.cancel_all()
        self.answers.stop()
        self.long.cancel()


def build_controllers(app: Any, parent: QObject | None = None) -> Controllers:
    """The controllers over ``app``, connected: a change upstream voids what was derived
    from it downstream, and a result downstream follows a fresh one upstream."""
    doc = DocumentController(app, parent)
    policies = PolicyController(app, doc, parent)
    payload = PayloadController(app, doc, policies, parent)
    utility = UtilityController(app, doc, policies, payload, parent)
    answers = AnswerController(app, doc, payload, utility, parent)
    privacy = PrivacyController(app, doc, payload, parent)
    long = LongSendController(parent, app, doc, payload, utility, answers)
    answers.sig_over_context.connect(long.choose)     # over the provider's window

    doc.sig_void.connect(payload.on_void)
    doc.sig_ready.connect(lambda: payload.request(immediate=True))
    policies.sig_pending.connect(payload.invalidate)
    policies.sig_changed.connect(payload.on_policy_changed)
    policies.sig_changed.connect(utility.on_policy_changed)
    policies.sig_ready.connect(lambda: payload.request(immediate=True))
    # before any view hears of the range: the payload picks its ε first
    policies.sig_epsilon_range.connect(payload.on_epsilon_range)
    payload.sig_prepared.connect(utility.on_prepared)
    payload.sig_preview_changed.connect(utility.on_preview)
    payload.sig_preview_changed.connect(privacy.on_payload)
    return Controllers(doc, policies, payload, utility, answers, privacy, long)
