"""The rules both faces apply, each computed in one place.

The window (through :class:`~preflight.app.window_doorway.WindowDoorway`) and the CLI
commands call these functions; neither face composes settings, flags and the company
policy itself, so both offer the same ε range, demand the same minimum utility and pick
the same provider for the same settings and company policy
(``tests/app/test_faces_agree.py`` checks each rule through both faces).

- :func:`epsilon_range`: the embedding's calibrated range, replaced bound by bound by a
  command's flags or else the user's settings, then narrowed to the company's bounds
  (the company's range wins), validated.
- :func:`min_utility`: the user's minimum (or a command's flag), validated, never below
  the company's floor.
- :func:`default_provider`: the provider a send goes to when none is named.
- :func:`modified_policy`: a per-document change of what a policy does with some types
  (the window's legend and "Protect these"), refused where the company locked a type.
"""

from __future__ import annotations

import math
from dataclasses import replace
from collections.abc import Mapping, Sequence
from typing import Any

from preflight.core.config import Settings
from preflight.core.errors import ConfigError
from preflight.core.sanitize.policy import Action, DxScope, Policy

#: What the window's user changes when the settings' ε bounds are wrong.
SETTINGS_BOUNDS_FIX = "Open Settings → Policy and set 0 < minimum < maximum."
#: What the window's user changes when the settings' minimum utility is wrong.
SETTINGS_UTILITY_FIX = "Utility is a cosine similarity; 0.5 is a sensible start."


def epsilon_range(calibrated: tuple[float, float], settings: Settings, org: Any,
                  lo: float | None = None, hi: float | None = None, *,
                  fix: str = SETTINGS_BOUNDS_FIX) -> tuple[float, float]:
    """The ε range d_X works in on this machine (the slider, the search, a sweep).

    Each bound is ``lo``/``hi`` when given (a command's flags), else the settings'
    ``policy.epsilon_min``/``epsilon_max`` when set, else the embedding's ``calibrated``
    one; then the company's bounds narrow it (:meth:`OrgPolicy.clamp_epsilon_range`).
    Bounds that are not finite with 0 < low < high are refused with ``fix`` as the hint."""
    pol = settings.policy
    lo = lo if lo is not None else (pol.epsilon_min or calibrated[0])
    hi = hi if hi is not None else (pol.epsilon_max or calibrated[1])
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (lo, hi)) \
            or not 0 < lo < hi:
        raise ConfigError(f"The ε bounds {lo:g}–{hi:g} are not a valid range.", fix)
    return org.clamp_epsilon_range(float(lo), float(hi))


def min_utility(settings: Settings, org: Any, value: float | None = None, *,
                fix: str = SETTINGS_UTILITY_FIX) -> float:
    """The minimum predicted utility a send must reach: ``value`` (a command's flag) or
    else the settings' ``policy.min_utility``; refused outside −1…1 or below the
    company's floor (:meth:`OrgPolicy.check_min_utility`)."""
    value = settings.policy.min_utility if value is None else value
    if not (isinstance(value, (int, float)) and -1.0 <= value <= 1.0):
        raise ConfigError(f"The minimum utility must be between -1 and 1 (got {value:g}).",
                          fix)
    org.check_min_utility(value)
    return float(value)


def default_provider(settings: Settings) -> str | None:
    """The provider a send goes to when none is named: the settings' default when it
    names a configured provider, else the first configured one (None: none yet)."""
    names = [p.name for p in settings.providers]
    if settings.default_provider in names:
        return settings.default_provider
    return names[0] if names else None


def modified_policy(org: Any, policy: Policy, changes: Mapping[str, Action]) -> Policy:
    """``policy`` with ``changes`` (entity type → action) for this document only; a type
    the company locked cannot go below its minimum (ConfigError, nothing changed)."""
    for etype, action in changes.items():
        org.check_action(etype, action)
    return policy.with_actions(dict(changes))


def protected(org: Any, policy: Policy, types: Sequence[str]) -> Policy:
    """"Protect these": ``types`` become placeholders for this document. A policy of d_X
    alone has no per-type actions: it becomes the hybrid — these types are placeholders,
    d_X noise stays on every other token."""
    base = policy
    if base.dx in (DxScope.ALL, DxScope.SPANS):
        base = replace(base, dx=DxScope.REST, by_type={}, by_category={},
                       fallback=Action.KEEP)
    return modified_policy(org, base, {t: Action.PLACEHOLDER for t in types})
