"""The policy in force and the ε range: :class:`PolicyController`.

It loads the policies the Policy box offers, applies the one chosen, changes one entity
type's action from the legend or "Protect these" (a modified copy, for this document:
the company's locks are the application's rule, :meth:`WindowDoorway.with_actions`),
saves the result as a named policy, and loads the ε range the first time a d_X policy
needs it (offering the policies without d_X when it cannot load). A change voids the
preview (:attr:`PolicyController.sig_pending`, :attr:`PolicyController.sig_changed`) and
asks for a new one (:attr:`PolicyController.sig_ready`).
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from preflight.app.presentation import error_text
from preflight.core.errors import Cancelled, PreflightError
from preflight.core.sanitize.policy import DEFAULT_POLICY, Action, DxScope, Policy, effective_type
from preflight.core.types import Category
from preflight.qt.qt_workers import QtOp

MODIFIED = " (modified)"
#: The actions the legend offers (``delete`` changes the sentence around the value; it
#: stays available through saved policies and files).
LEGEND_ACTIONS = (Action.KEEP, Action.GENERALIZE, Action.PSEUDONYM, Action.PLACEHOLDER,
                  Action.MASK, Action.REDACT)


def base_title(policy: Policy) -> str:
    return policy.title.removesuffix(MODIFIED)


def has_pseudonyms(policy: Policy) -> bool:
    return Action.PSEUDONYM in {*policy.by_type.values(), *policy.by_category.values(),
                                policy.fallback}


class PolicyController(QObject):
    """The policy applied to the document, and d_X's ε range (see the module doc)."""

    sig_policies = Signal(list)                   # [(name, title, uses_dx)]
    sig_policy = Signal(object)                   # the Policy now applied
    sig_pending = Signal(str)                     # a change started: the preview is void
    sig_changed = Signal()                        # another policy applies now
    sig_ready = Signal()                          # a preview may be computed now
    sig_epsilon_range = Signal(float, float)
    sig_status = Signal(str)
    sig_error = Signal(str, str)

    def __init__(self, app: Any, doc: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app, self.doc = app, doc            # doc: the detected types of the legend
        self.choices: list[tuple[str, str, bool]] = []
        self.policy: Policy | None = None
        self.modified = False                     # a legend change not saved yet
        self.generation = 0                       # a result must be of this one
        self.dx_ok = True
        self.epsilon_range: tuple[float, float] | None = None

    @property
    def uses_dx(self) -> bool:
        return self.policy is not None and self.policy.uses_dx

    @property
    def per_type_actions(self) -> bool:
        """Whether the policy's per-type actions change anything (not for d_X alone)."""
        return self.policy is not None and self.policy.dx not in (DxScope.ALL, DxScope.SPANS)

    # -- loading and choosing ----------------------------------------------------------------
    def load(self, select: str | None = None) -> None:
        """Load the policy choices and apply ``select`` (default: the active one)."""
        app, dx_ok = self.app, self.dx_ok

        def op(ctx) -> tuple[list, Policy | None]:
            choices = [c for c in app.policies() if dx_ok or not c[2]]
            names = [c[0] for c in choices]
            want = select or app.settings.policy.active or DEFAULT_POLICY
            return choices, app.policy(want if want in names else DEFAULT_POLICY)

        self.sig_status.emit("Loading the policies…")
        QtOp(self, op, self._on_policies, self._on_error, lane="pool").run()

    def _on_policies(self, res: tuple[list, Policy]) -> None:
        self.choices, policy = res
        if self.modified and self.policy is not None:
            policy = self.policy                # keep the user's unsaved legend changes
        self._apply(policy, modified=self.modified)

    def _apply(self, policy: Policy, *, modified: bool) -> None:
        self.policy, self.modified = policy, modified
        self.generation += 1
        self.sig_changed.emit()
        self.sig_policies.emit(self.choices)
        self.sig_policy.emit(policy)
        if policy.uses_dx and self.epsilon_range is None:
            self._load_range()
        else:
            self.sig_ready.emit()

    def set_policy(self, name: str) -> None:
        """The user chose ``name`` in the Policy box (it becomes the active policy)."""
        if self.policy is not None and name == self.policy.name and not self.modified:
            return
        app = self.app
        self.generation += 1                    # the old policy's result is void now
        self.sig_pending.emit(f"Applying the policy “{name}”…")

        def chosen(policy: Policy) -> None:
            self._apply(policy, modified=False)
            QtOp(self, lambda ctx: app.set_active_policy(name), lambda _r: None,
                 self._on_quiet_error, lane="pool").run()

        def failed(exc: BaseException) -> None:
            self._on_error(exc)
            if self.policy is not None:          # back to the policy still in force
                self._apply(self.policy, modified=self.modified)

        QtOp(self, lambda ctx: app.policy(name), chosen, failed, lane="pool").run()

    def new_document(self) -> None:
        """Legend changes belong to one document: the next starts from the active policy."""
        if self.modified:
            self.modified = False
            self.load()

    def settings_changed(self) -> None:
        """The settings were saved: the ε range and the policies may have changed."""
        if self.epsilon_range is not None:
            QtOp(self, lambda ctx: self.app.epsilon_range(), self._on_range,
                 self._on_error, lane="dx").run()
        self.load(select=self.policy.name if self.policy is not None
                  and not self.modified else None)

    # -- the legend ------------------------------------------------------------------------
    def action_for_type(self, etype: str) -> Action | None:
        """The current policy's action for ``etype`` (None before the policies load)."""
        if self.policy is None:
            return None
        text = self.doc.text
        for s in self.doc.spans:
            if effective_type(s, text[s.start:s.end]) == etype:
                return self.policy.action_for(s, text[s.start:s.end])
        return self.policy.by_type.get(etype, self.policy.fallback)

    def detected_types(self) -> dict[Category, list[str]]:
        """The detected entity types (as the policy sees them), by category."""
        out: dict[Category, list[str]] = {}
        text = self.doc.text
        for s in self.doc.spans:
            etype = effective_type(s, text[s.start:s.end])
            if etype not in out.setdefault(s.category, []):
                out[s.category].append(etype)
        return out

    def set_type_action(self, etype: str, action: Action) -> None:
        """The legend: a modified copy of the policy with ``etype`` → ``action``."""
        if self.policy is None or self.action_for_type(etype) is action:
            return
        self._modify(lambda: self.app.with_actions(self.policy, {etype: action}),
                     f"{etype}: {action.value}")

    def protect_types(self, types: list[str]) -> None:
        """"Protect these" (the banner above Send): ``types`` become placeholders for this
        document, as a modified policy (d_X alone becomes the hybrid)."""
        if self.policy is None or not types:
            return
        self._modify(lambda: self.app.protect(self.policy, types),
                     f"{', '.join(types)}: placeholder")

    def _modify(self, change: Any, what: str) -> None:
        try:            # a type the company locked cannot go below its minimum
            changed = change()
        except PreflightError as exc:
            self.sig_error.emit(exc.message, exc.hint)
            return
        self._apply(replace(changed, title=base_title(self.policy) + MODIFIED),
                    modified=True)
        self.sig_status.emit(f"{what} (this document; “Save as named policy…” keeps it).")

    def save_policy_as(self, name: str) -> None:
        """Store the current (modified) policy under ``name`` and switch to it."""
        if self.policy is None:
            return
        policy = replace(self.policy, name=name.strip(), title=name.strip(),
                         source="settings")
        app = self.app

        def op(ctx) -> str:
            app.save_policy(policy)
            app.set_active_policy(policy.name)
            return policy.name

        def done(saved: str) -> None:
            self.modified = False
            self.sig_status.emit(f"Saved the policy “{saved}”.")
            self.load(select=saved)

        QtOp(self, op, done, self._on_error, lane="pool").run()

    # -- d_X availability --------------------------------------------------------------
    def _load_range(self) -> None:
        self.sig_status.emit("Loading the token embedding for d_X…")
        QtOp(self, lambda ctx: self.app.epsilon_range(), self._on_range,
             self._on_dx_unavailable, lane="dx").run()

    def _on_dx_unavailable(self, exc: BaseException) -> None:
        """d_X cannot load (e.g. its model is missing): offer the policies without it."""
        self.dx_ok = False
        msg, hint = error_text(exc)
        self.sig_status.emit("d_X is unavailable; policies without d_X still work.")
        self.sig_error.emit(f"d_X-privacy is unavailable: {msg}", hint)
        self.modified = False
        self.load(select=DEFAULT_POLICY)

    def _on_range(self, rng: tuple[float, float]) -> None:
        # What is loaded by now stays for the session: moved out of the collector's
        # reach, a full collection no longer walks it (one took 80-100 ms in the middle
        # of a slider step; bench_policy).
        gc.freeze()
        self.epsilon_range = (float(rng[0]), float(rng[1]))
        self.sig_epsilon_range.emit(*self.epsilon_range)
        self.sig_status.emit("d_X ready.")
        self.sig_ready.emit()

    # -- errors ----------------------------------------------------------------------------
    def _on_error(self, exc: BaseException) -> None:
        if not isinstance(exc, Cancelled):
            self.sig_error.emit(*error_text(exc))

    def _on_quiet_error(self, exc: BaseException) -> None:
        if not isinstance(exc, Cancelled):
            self.sig_status.emit(" ".join(error_text(exc)).strip())
