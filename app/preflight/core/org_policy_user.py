"""The company's rules on what the user controls: the detection allow-list and threshold,
degraded-detection acceptance, per-item overrides, and the audit log the rules read.

Everything a user can edit (the settings file, CLI flags, the window's ticks, the audit
file's existence) either cannot loosen a company rule or is refused with one line. These
rules are methods of :class:`~preflight.core.org_policy.OrgPolicy` (this mixin), so the
window and the CLI ask the same object.
"""

from __future__ import annotations

from typing import Any, Sequence

from preflight.core.org_policy_file import OrgRules
from preflight.core.pii.floor import (
    BLOCKING_CATEGORIES, DEFAULT_SCORE_THRESHOLD, NO_FLOOR, DetectionFloor,
)
from preflight.core.sanitize.policy import Action
from preflight.core.types import Category


class UserControls:
    """Mixed into :class:`OrgPolicy` (which provides ``rules``, ``broken`` and
    ``allow_overrides``)."""

    rules: OrgRules | None
    broken: bool
    allow_overrides: bool

    def detection_floor(self) -> DetectionFloor:
        """The types the user's allow-list and score threshold cannot loosen: those with
        a minimum above keep and, when per-item overrides are forbidden, every direct
        identifier and secret (an allow-list entry is a standing override). A broken file
        guards everything."""
        if self.broken:
            return DetectionFloor(categories=frozenset(Category))
        r = self.rules
        if r is None:
            return NO_FLOOR
        cats = {c for c, a in r.categories.items() if a is not Action.KEEP}
        if not r.allow_overrides:
            cats.update(BLOCKING_CATEGORIES)
        return DetectionFloor(
            frozenset(t for t, a in r.types.items() if a is not Action.KEEP),
            frozenset(cats), DEFAULT_SCORE_THRESHOLD if r.max_score_threshold is None
            else r.max_score_threshold)

    @property
    def allow_degraded_detection(self) -> bool:
        """Whether a send may go on with a degraded detector (accepted by the user); the
        file's ``allow_degraded_detection``, else the same as ``allow_overrides``."""
        r = self.rules
        if r is None:
            return not self.broken
        chosen = r.allow_degraded_detection
        return r.allow_overrides if chosen is None else chosen

    def overrides_refusal(self, items: Sequence[str]) -> tuple[str, str] | None:
        """(message, hint) when ``items`` may not be sent one by one, else None."""
        if not items or self.allow_overrides:
            return None
        return (f"Your organization's policy does not allow sending residual personal data "
                f"item by item ({', '.join(items)}).",
                "Protect those values (e.g. a stricter method or the deny-list), or keep "
                "the document local.")

    def allow_list_refusal(self, findings: Sequence[Any]) -> tuple[str, str] | None:
        """(message, hint) when these re-scan findings may not join the user's allow-list
        (a standing override): overrides forbidden, or a type the company protects."""
        refusal = self.overrides_refusal(sorted(f.id for f in findings))
        floor = self.detection_floor()
        guarded = [f for f in findings if floor.guards(f.type, f.category)]
        if refusal is None and guarded:
            refusal = (f"Your organization's policy protects {guarded[0].type}: the "
                       "detection allow-list does not apply to it.",
                       "Send it once with an override, if your organization allows it.")
        return refusal

    def degraded_refusal(self, warning: str) -> tuple[str, str] | None:
        """(message, hint) when a degraded detector stops every send, else None."""
        if self.allow_degraded_detection:
            return None
        return (f"Your organization's policy does not allow sending while the PII detector "
                f"runs degraded ({warning}).",
                "Install the missing model (`preflight models install`), or keep the "
                "document local.")

    # -- the audit log the rules read -------------------------------------------------
    @property
    def needs_audit_history(self) -> bool:
        """Whether a rule reads or ships the audit log: resends refused, an ε cap per
        document, or a central store."""
        r = self.rules
        return r is not None and (not r.allow_resend or r.max_document_epsilon is not None
                                  or r.central_audit is not None)

    @property
    def lost_logs(self) -> tuple[str, ...]:
        """Ids of audit logs IT accepted as lost (``[audit] lost_logs``)."""
        return self.rules.lost_logs if self.rules is not None else ()

    def detection_limits(self, allow_list: Sequence[str], threshold: float) -> list[str]:
        """What the company's floor changes in the user's detection settings, one line
        each (for `preflight info` and the window's company notice); empty: nothing."""
        floor = self.detection_floor()
        if floor.empty:
            return []
        what = ", ".join([*sorted(floor.types),
                          *(c.value.replace("_", " ") + "s" for c in
                            sorted(floor.categories, key=lambda c: c.value))])
        out = []
        if any(v.strip() for v in allow_list):
            out.append(f"Your detection allow-list does not apply to {what}: your "
                       "organization's policy protects them.")
        if threshold > floor.max_threshold:
            out.append(f"Your detection threshold {threshold:g} applies only to the types "
                       f"your organization leaves to you; for {what} it is "
                       f"{floor.max_threshold:g}.")
        return out
