"""The company policy: machine-wide rules an administrator deploys, which the user's own
settings and policies cannot loosen.

The file (TOML, see docs/POLICIES.md "Company policy file") lives at
:func:`preflight.core.paths.org_policy_path` — ``PREFLIGHT_ORG_POLICY`` points elsewhere.
It sets minimum actions per entity type or category, the providers documents may go to,
bounds on ε, a cap on the ε one document may spend over all its sends
(``max_document_epsilon``, see :mod:`preflight.core.privacy.ledger`), the minimum utility,
whether per-item overrides and resends are allowed, and the central audit store
(``[audit.central]``, :mod:`preflight.core.org_policy_audit`).

No file: :meth:`OrgPolicy.none` (no rules). A file that cannot be read or is invalid does
not stop Preflight: it gives a *broken* policy, under which everything local works and
every send is refused with :meth:`OrgPolicy.send_block_reason` (fail closed).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from preflight.core import paths
from preflight.core.errors import ConfigError
from preflight.core.fsutil import NotARegularFile, read_regular
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.org_policy_learning import CompanyModelSettings
from preflight.core.org_policy_file import (
    ORG_HINT, OrgRules, describe_rules, invalid, parse_org_policy, under_prefix,
)
from preflight.core.org_policy_user import UserControls
from preflight.core.pii.entities import category_of
from preflight.core.sanitize.policy import (
    RELATIVE_DATE, STRICTNESS, Action, DxScope, Policy, at_least,
)
from preflight.core.types import Category

MAX_ORG_POLICY_BYTES = 1_000_000
#: What the window shows next to a setting the company policy fixes.
LOCKED_TEXT = "set by your organization"


@dataclass(frozen=True)
class Tightened:
    """A policy raised to the company minimums and what was raised (key → (was, now));
    keys are entity types, category values, or ``"dx"`` for the d_X scope."""

    policy: Policy
    raised: Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class OrgPolicy(UserControls):
    """The company policy in effect. Build with :func:`load_org_policy`."""

    path: Path | None = None
    sha256: str | None = None
    rules: OrgRules | None = None
    error: ConfigError | None = field(default=None, compare=False)
    #: The audit log the rules read is not the one this computer wrote (see
    #: :mod:`preflight.core.send.audit_presence`): sending is refused like a broken file.
    audit_gap: ConfigError | None = field(default=None, compare=False)

    @classmethod
    def none(cls) -> "OrgPolicy":
        return cls()

    # -- state -------------------------------------------------------------------------
    @property
    def present(self) -> bool:
        return self.path is not None

    @property
    def broken(self) -> bool:
        return self.error is not None

    def send_block_reason(self) -> str | None:
        """Why nothing may be sent (an invalid or unreadable file, an audit log that is
        not the one the rules were kept in), else None."""
        err = self.error or self.audit_gap
        return str(err) if err is not None else None

    def _blocked(self) -> None:
        err = self.error or self.audit_gap
        if err is not None:
            raise ConfigError(err.message, err.hint)

    def _who(self) -> str:
        return f"your organization's policy ({self.path})"

    # -- minimum actions ---------------------------------------------------------------
    def locked_types(self) -> dict[str, Action]:
        """Entity type (capitals) or category value (lower case) → its minimum action."""
        if self.rules is None:
            return {}
        out: dict[str, Action] = {c.value: a for c, a in self.rules.categories.items()}
        out.update(self.rules.types)
        return out

    def minimum_for(self, entity_type: str) -> Action | None:
        """The strictest of the type's own minimum and its category's (None: no minimum)."""
        if self.rules is None:
            return None
        found = [a for a in (self.rules.types.get(entity_type),
                             self.rules.categories.get(category_of(entity_type)))
                 if a is not None]
        return max(found, key=STRICTNESS.__getitem__) if found else None

    def check_action(self, entity_type: str, action: Action) -> None:
        """Refuse giving ``entity_type`` an action below its minimum (the window's legend)."""
        floor = self.minimum_for(entity_type)
        if floor is not None and not at_least(action, floor):
            raise ConfigError(
                f"{entity_type} cannot be {action.value}: {self._who()} requires at least "
                f"{floor.value}.", f"Choose {floor.value} or a stricter action.")

    def tighten_report(self, policy: Policy) -> Tightened:
        """``policy`` with every action below a minimum raised to it, and what changed.

        A d_X-only policy (noise on the whole text or on the detected values, no
        replacements) cannot meet a minimum above keep, so it becomes the hybrid: the
        minimum types replaced, d_X noise on everything else."""
        rules = self.rules
        if rules is None or not (rules.types or rules.categories):
            return Tightened(policy, {})
        raised: dict[str, tuple[str, str]] = {}
        if policy.dx in (DxScope.ALL, DxScope.SPANS) and any(
                a is not Action.KEEP for a in self.locked_types().values()):
            raised["dx"] = (policy.dx.value, DxScope.REST.value)
            policy = replace(policy, dx=DxScope.REST)
        by_cat = dict(policy.by_category)
        for cat, floor in rules.categories.items():
            was = by_cat.get(cat, policy.fallback)
            if not at_least(was, floor):
                by_cat[cat] = floor
                raised[cat.value] = (was.value, floor.value)
            else:
                by_cat.setdefault(cat, was)
        policy = replace(policy, by_category=by_cat)
        by_type = dict(policy.by_type)
        for etype in sorted(set(by_type) | set(rules.types)):
            floor = self.minimum_for(etype)
            was = _action_of(policy, etype)
            if floor is not None and not at_least(was, floor):
                by_type[etype] = floor
                raised[etype] = (was.value, floor.value)
        return Tightened(replace(policy, by_type=by_type), raised)

    def tighten(self, policy: Policy) -> Policy:
        """``policy`` raised to the company minimums (see :meth:`tighten_report`)."""
        return self.tighten_report(policy).policy

    def check_policy(self, policy: Policy) -> None:
        """Refuse a policy the user chose explicitly that sets anything below a minimum."""
        raised = self.tighten_report(policy).raised
        if not raised:
            return
        key, (was, floor) = next(iter(raised.items()))
        label = key if key.isupper() else f"the category {key}"
        what = (f"applies d_X to {'the whole text' if was == 'all' else 'the detected values'}"
                " without replacing anything" if key == "dx" else f"sets {label} to {was}")
        need = ("replacements for the types it names" if key == "dx"
                else f"at least {floor} for {label}")
        raise ConfigError(f"The policy '{policy.name}' {what}, but {self._who()} requires "
                          f"{need}.", "Choose a stricter action, or use a policy that "
                          "leaves it to the organization's minimum.")

    # -- ε and utility -----------------------------------------------------------------
    @property
    def epsilon_bounds(self) -> tuple[float | None, float | None]:
        r = self.rules
        return (r.epsilon_min, r.epsilon_max) if r is not None else (None, None)

    def check_epsilon(self, eps: float) -> None:
        lo, hi = self.epsilon_bounds
        if (lo is not None and eps < lo) or (hi is not None and eps > hi):
            raise ConfigError(f"ε = {eps:g} is outside the range {_range(lo, hi)} set by "
                              f"{self._who()}.", f"Choose ε in {_range(lo, hi)}.")

    def clamp_epsilon_range(self, lo: float, hi: float) -> tuple[float, float]:
        """The part of ``[lo, hi]`` the company allows (its own bounds when they do not
        overlap: the company's range wins)."""
        olo, ohi = self.epsilon_bounds

        def clamp(x: float) -> float:
            x = max(x, olo) if olo is not None else x
            return min(x, ohi) if ohi is not None else x

        new_lo, new_hi = clamp(lo), clamp(hi)
        if new_lo < new_hi:
            return new_lo, new_hi
        if olo is not None and ohi is not None:
            return olo, ohi
        raise ConfigError(f"The ε range {_range(lo, hi)} of this embedding lies outside "
                          f"the range {_range(olo, ohi)} set by {self._who()}.",
                          "Ask your IT administrator to set both epsilon.min and epsilon.max.")

    @property
    def max_document_epsilon(self) -> float | None:
        """The most ε all sends of one document may spend together (None: no cap)."""
        return self.rules.max_document_epsilon if self.rules is not None else None

    @property
    def central_audit(self) -> CentralAuditSettings | None:
        """The central audit store every record is also written to (None: local only)."""
        return self.rules.central_audit if self.rules is not None else None

    @property
    def share_learning_pairs(self) -> bool:
        """Whether the learning pairs (numbers only) also go to the central store."""
        return bool(self.rules is not None and self.rules.share_learning_pairs
                    and self.rules.central_audit is not None)

    @property
    def utility_model(self) -> CompanyModelSettings | None:
        """The company-trained utility model the laptops load (None: the shipped one)."""
        return self.rules.utility_model if self.rules is not None else None

    @property
    def assessor_endpoint(self) -> Any:
        """The company-hosted assessor (an :class:`AssessorEndpoint`; None: in-process)."""
        return self.rules.assessor if self.rules is not None else None

    @property
    def min_utility(self) -> float | None:
        return self.rules.min_utility if self.rules is not None else None

    def check_min_utility(self, value: float) -> None:
        floor = self.min_utility
        if floor is not None and value < floor:
            raise ConfigError(f"The minimum utility cannot be {value:g}: {self._who()} "
                              f"requires at least {floor:g}.",
                              f"Use {floor:g} or more.")

    def clamp_min_utility(self, value: float) -> float:
        floor = self.min_utility
        return max(value, floor) if floor is not None else value

    # -- providers, overrides, resends --------------------------------------------------
    @property
    def allowed_providers(self) -> tuple[str, ...] | None:
        return self.rules.allowed_providers if self.rules is not None else None

    def provider_allowed(self, base_url: str) -> bool:
        allowed = self.allowed_providers
        return allowed is None or any(under_prefix(base_url, prefix) for prefix in allowed)

    def check_provider(self, base_url: str) -> None:
        """Refuse a base URL outside the allow-list (and anything while broken)."""
        self._blocked()
        if not self.provider_allowed(base_url):
            raise ConfigError(
                f"The provider address {base_url} is not allowed by {self._who()}.",
                f"Allowed: {', '.join(self.allowed_providers or ())}; ask your IT "
                "administrator to add it.")

    @property
    def allow_overrides(self) -> bool:
        return self.rules.allow_overrides if self.rules is not None else not self.broken

    @property
    def allow_resend(self) -> bool:
        return self.rules.allow_resend if self.rules is not None else not self.broken

    @property
    def default_policy(self) -> str | None:
        return self.rules.default_policy if self.rules is not None else None

    # -- reporting ---------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """For `preflight info --json` and the audit record."""
        if not self.present:
            return {"status": "none", "file": str(paths.org_policy_path())}
        out: dict[str, Any] = {"status": "invalid" if self.broken else "ok",
                               "file": str(self.path), "sha256": self.sha256}
        if self.audit_gap is not None:
            out["audit_log"] = str(self.audit_gap)
        if self.error is not None:
            out["error"] = str(self.error)
            return out
        assert self.rules is not None
        out["sets"] = describe_rules(self.rules, self.locked_types(),
                                     self.allow_degraded_detection)
        return out



def _range(lo: float | None, hi: float | None) -> str:
    return f"[{'0' if lo is None else f'{lo:g}'}, {'∞' if hi is None else f'{hi:g}'}]"


def _action_of(policy: Policy, etype: str) -> Action:
    """What ``policy`` does to a value of type ``etype`` (see :meth:`Policy.action_for`)."""
    if policy.dx in (DxScope.ALL, DxScope.SPANS):
        return Action.KEEP
    if etype in policy.by_type:
        return policy.by_type[etype]
    if etype == RELATIVE_DATE and "DATE_TIME" in policy.by_type:
        return policy.by_type["DATE_TIME"]
    cat: Category = category_of(etype)
    return policy.by_category.get(cat, policy.fallback)


def load_org_policy(path: Path | str | None = None) -> OrgPolicy:
    """The company policy at ``path`` (default: :func:`paths.org_policy_path`).

    Never raises for a bad file: no file → :meth:`OrgPolicy.none`; unreadable, too big,
    not UTF-8 or invalid → a broken policy whose error names the file and the line.
    """
    p = Path(path) if path is not None else paths.org_policy_path()
    try:
        # lstat, fstat and a bounded read: a FIFO, device or link there is refused at once
        raw = read_regular(p, MAX_ORG_POLICY_BYTES)
    except FileNotFoundError:
        return OrgPolicy.none()
    except NotARegularFile as exc:
        return OrgPolicy(p, error=invalid(str(p), None, exc.strerror))
    except OSError as exc:
        return OrgPolicy(p, error=ConfigError(
            f"Your organization's policy file {p} cannot be read "
            f"({exc.strerror or type(exc).__name__}).", ORG_HINT))
    digest = hashlib.sha256(raw).hexdigest()
    if len(raw) > MAX_ORG_POLICY_BYTES:
        return OrgPolicy(p, digest, error=invalid(str(p), None, "it is larger than 1 MB"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return OrgPolicy(p, digest, error=invalid(str(p), None, "it is not UTF-8 text"))
    try:
        return OrgPolicy(p, digest, parse_org_policy(text, str(p)))
    except ConfigError as err:
        return OrgPolicy(p, digest, error=err)
