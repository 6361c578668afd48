"""``--policy NAME|FILE`` (and ``--method`` as shorthand) for every command that sanitizes.

With neither option the active policy of the settings applies ("identifiers" unless the
user chose another). ``--method`` names a classic preset: ``placeholder``, ``pseudonym``,
``generalize``, ``mask``, ``redact``, ``delete`` (every detected value gets that action)
or ``dx`` (d_X on the whole text, or on the detected values with ``--scope pii``).
"""

from __future__ import annotations

import argparse
from typing import Any

from preflight.core.errors import ConfigError
from preflight.core.sanitize.policy import METHOD_PRESETS, PRESETS, preset_for_method


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("policy (what happens to each kind of value)")
    group.add_argument(
        "--policy", "-p", metavar="NAME|FILE", default=None,
        help=f"a preset ({', '.join(PRESETS)}), a policy saved in Settings, or a policy "
             "TOML file (default: the active policy, 'identifiers' unless changed)")
    group.add_argument(
        "--method", "-m", metavar="METHOD", default=None, choices=list(METHOD_PRESETS),
        help=f"shorthand for a classic preset: {', '.join(METHOD_PRESETS)}")
    group.add_argument(
        "--scope", choices=("all", "pii"), default=None,
        help="with --method dx: perturb every token (all, default) or only detected PII")


def policy_name(args: argparse.Namespace, default: str | None = None) -> str | None:
    """The policy the options name (None: the settings' active policy)."""
    if args.policy and args.method:
        raise ConfigError("--policy and --method both choose the policy.",
                          "Give one of them (--method is shorthand for a preset).")
    if args.scope and args.method != "dx":
        raise ConfigError("--scope only applies to --method dx.",
                          "Drop --scope, or use --policy dx-pii / dx-all.")
    if args.method:
        return preset_for_method(args.method, args.scope or "all")
    return args.policy or default


def chosen_policy(args: argparse.Namespace, services: Any, default: str | None = None) -> Any:
    return services.policy(policy_name(args, default))
