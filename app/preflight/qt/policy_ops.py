"""The document controller's policy ops: loading the policies, choosing one, changing one
entity type's action from the legend, saving the result as a named policy, and loading
the ε range the first time a d_X policy needs it.

A mixin of :class:`preflight.qt.controllers.DocumentController` (it uses the controller's
state and signals); split out to keep the controller readable.
"""

from __future__ import annotations

import gc
import math
from dataclasses import replace

from preflight.app.presentation import error_text
from preflight.core.errors import PreflightError
from preflight.core.sanitize.policy import (
    DEFAULT_POLICY,
    Action,
    DxScope,
    Policy,
    effective_type,
)
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


class PolicyOps:
    """Mixin: needs ``backend``, ``policy``, ``policy_choices``, ``modified``... (see
    :class:`~preflight.qt.controllers.DocumentController`)."""

    @property
    def uses_dx(self) -> bool:
        return self.policy is not None and self.policy.uses_dx

    @property
    def per_type_actions(self) -> bool:
        """Whether the policy's per-type actions change anything (not for d_X alone)."""
        return self.policy is not None and self.policy.dx not in (DxScope.ALL, DxScope.SPANS)

    def _load_policies(self, select: str | None = None) -> None:
        backend, dx_ok = self.backend, self._dx_ok

        def op(ctx) -> tuple[list, Policy | None]:
            choices = [c for c in backend.policies() if dx_ok or not c[2]]
            names = [c[0] for c in choices]
            want = select or backend.settings.policy.active or DEFAULT_POLICY
            return choices, backend.policy(want if want in names else DEFAULT_POLICY)

        QtOp(self, op, self._on_policies, self._on_error, lane="pool").run()

    def _on_policies(self, res: tuple[list, Policy]) -> None:
        self.policy_choices, policy = res
        if self.modified and self.policy is not None:
            policy = self.policy                # keep the user's unsaved legend changes
        self._apply_policy(policy, modified=self.modified)

    def _apply_policy(self, policy: Policy, *, modified: bool) -> None:
        self.policy, self.modified = policy, modified
        self._policy_gen += 1
        self.prepared = None
        self.recommendation = None
        self._invalidate(self._gate() or "Applying the policy…")
        self.sig_policies.emit(self.policy_choices)
        self.sig_policy.emit(policy)
        if policy.uses_dx and self.epsilon_range is None:
            self._load_range()
        else:
            self._request_preview(immediate=True)

    def set_policy(self, name: str) -> None:
        """The user chose ``name`` in the Policy box (it becomes the active policy)."""
        if self.policy is not None and name == self.policy.name and not self.modified:
            return
        backend = self.backend
        self._policy_gen += 1                   # the old policy's result is void now
        self._invalidate(f"Applying the policy “{name}”…")

        def chosen(policy: Policy) -> None:
            self._apply_policy(policy, modified=False)
            QtOp(self, lambda ctx: backend.set_active_policy(name), lambda _r: None,
                 self._on_quiet_error, lane="pool").run()

        def failed(exc: BaseException) -> None:
            self._on_error(exc)
            if self.policy is not None:          # back to the policy still in force
                self._apply_policy(self.policy, modified=self.modified)

        QtOp(self, lambda ctx: backend.policy(name), chosen, failed, lane="pool").run()

    def action_for_type(self, etype: str) -> Action | None:
        """The current policy's action for ``etype`` (None before the policies load)."""
        if self.policy is None:
            return None
        for s in self.spans:
            if effective_type(s, self.text[s.start:s.end]) == etype:
                return self.policy.action_for(s, self.text[s.start:s.end])
        return self.policy.by_type.get(etype, self.policy.fallback)

    def detected_types(self) -> dict[Category, list[str]]:
        """The detected entity types (as the policy sees them), by category."""
        out: dict[Category, list[str]] = {}
        for s in self.spans:
            etype = effective_type(s, self.text[s.start:s.end])
            if etype not in out.setdefault(s.category, []):
                out[s.category].append(etype)
        return out

    def set_type_action(self, etype: str, action: Action) -> None:
        """The legend: a modified copy of the policy with ``etype`` → ``action``."""
        if self.policy is None or self.action_for_type(etype) is action:
            return
        try:            # a type the company locked cannot go below its minimum
            self.backend.org_policy.check_action(etype, action)
        except PreflightError as exc:
            self.sig_error.emit(exc.message, exc.hint)
            return
        changed = self.policy.with_actions({etype: action})
        self._apply_policy(replace(changed, title=base_title(self.policy) + MODIFIED),
                           modified=True)
        self.sig_status.emit(f"{etype}: {action.value} (this document; “Save as named "
                             "policy…” keeps it).")

    def protect_types(self, types: list[str]) -> None:
        """"Protect these" (the banner above Send): ``types`` become placeholders for this
        document, as a modified policy. A policy of d_X alone has no per-type actions: it
        becomes the hybrid — these types are placeholders, d_X noise stays on every other
        token (the text around the values included)."""
        if self.policy is None or not types:
            return
        try:
            for etype in types:
                self.backend.org_policy.check_action(etype, Action.PLACEHOLDER)
        except PreflightError as exc:
            self.sig_error.emit(exc.message, exc.hint)
            return
        base = self.policy
        if base.dx in (DxScope.ALL, DxScope.SPANS):
            base = replace(base, dx=DxScope.REST, by_type={}, by_category={},
                           fallback=Action.KEEP)
        changed = base.with_actions({t: Action.PLACEHOLDER for t in types})
        self._apply_policy(replace(changed, title=base_title(self.policy) + MODIFIED),
                           modified=True)
        self.sig_status.emit(f"{', '.join(types)}: placeholder (this document; “Save as "
                             "named policy…” keeps it).")

    def save_policy_as(self, name: str) -> None:
        """Store the current (modified) policy under ``name`` and switch to it."""
        if self.policy is None:
            return
        policy = replace(self.policy, name=name.strip(), title=name.strip(),
                         source="settings")
        backend = self.backend

        def op(ctx) -> str:
            backend.save_policy(policy)
            backend.set_active_policy(policy.name)
            return policy.name

        def done(saved: str) -> None:
            self.modified = False
            self.sig_status.emit(f"Saved the policy “{saved}”.")
            self._load_policies(select=saved)

        QtOp(self, op, done, self._on_error, lane="pool").run()

    # -- d_X availability --------------------------------------------------------------
    def _load_range(self) -> None:
        self.sig_status.emit("Loading the token embedding for d_X…")
        QtOp(self, lambda ctx: self.backend.epsilon_range(), self._on_range,
             self._on_dx_unavailable, lane="dx").run()

    def _on_dx_unavailable(self, exc: BaseException) -> None:
        """d_X cannot load (e.g. its model is missing): offer the policies without it."""
        self._dx_ok = False
        msg, hint = error_text(exc)
        self.sig_status.emit("d_X is unavailable; policies without d_X still work.")
        self.sig_error.emit(f"d_X-privacy is unavailable: {msg}", hint)
        self.modified = False
        self._load_policies(select=DEFAULT_POLICY)

    def _on_range(self, rng: tuple[float, float]) -> None:
        # What is loaded by now stays for the session: moved out of the collector's
        # reach, a full collection no longer walks it (one took 80-100 ms in the middle
        # of a slider step; bench_policy).
        gc.freeze()
        lo, hi = rng
        self.epsilon_range = (lo, hi)
        start = self.policy.epsilon if self.policy is not None else None
        if self.epsilon is None or not lo <= self.epsilon <= hi:
            self.epsilon = start if start and lo <= start <= hi else math.sqrt(lo * hi)
        self.sig_epsilon_range.emit(lo, hi)
        self.sig_status.emit("d_X ready.")
        self._request_preview(immediate=True)
