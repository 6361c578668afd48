"""The user's named policies as the settings keep them (the keys of a policy file): the
window's Policy box lists them and "Save as named policy…" adds one."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

from preflight.core.config import SavedPolicy, Settings
from preflight.core.errors import ConfigError
from preflight.core.sanitize.policy import PRESETS, Policy, policy_from_mapping


def saved_policy_row(policy: Policy) -> SavedPolicy:
    """The settings row of a policy (the keys of a policy file)."""
    d = policy.describe()
    return SavedPolicy(name=policy.name, title=policy.title, description=policy.description,
                       dx=d["dx"], epsilon=policy.epsilon, fallback=d["fallback"],
                       categories=dict(d["by_category"]), types=dict(d["by_type"]))


def policy_choices(services: Any) -> list[tuple[str, str, bool]]:
    """(name, title, uses d_X) of every preset and saved policy, presets first."""
    out = [(p.name, p.title, p.uses_dx) for p in PRESETS.values()]
    return out + [(p.name, p.title, p.uses_dx) for p in services.saved_policies()
                  if p.name not in PRESETS]


def with_saved_policy(settings: Settings, policy: Policy) -> Settings:
    """A copy of ``settings`` with ``policy`` among the saved policies (replacing one of
    the same name); a preset's name or a row a policy file would refuse is refused."""
    if policy.name in PRESETS:
        raise ConfigError(f"'{policy.name}' is the name of a built-in policy.",
                          "Choose another name for your policy.")
    row = saved_policy_row(policy)
    policy_from_mapping({k: v for k, v in asdict(row).items() if v is not None},
                        f"policy '{policy.name}'")      # refuses a bad name or key
    out = copy.deepcopy(settings)
    out.policy.saved = [s for s in out.policy.saved if s.name != policy.name] + [row]
    return out
