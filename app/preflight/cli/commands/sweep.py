"""`preflight sweep FILE|- --seed N`: the d_X text at evenly spaced ε (same noise).

Prepares the document once under a policy with d_X noise and evaluates the ε range
(:func:`preflight.app.rules.epsilon_range`, the window's slider range) at ``--steps``
points spaced evenly in log ε — what the window's slider shows, as JSON. Without ``--policy``/``--method`` the active policy applies if it adds d_X noise,
else d_X on the whole text ("dx-all", the research sweep).
"""

from __future__ import annotations

import argparse
import math

from preflight.cli import detect_progress
from preflight.cli.policy_args import add_policy_arguments, policy_name
from preflight.core.errors import ConfigError
from preflight.core.textio import read_document


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep", help="d_X-sanitize a document at many ε with the same noise",
        description="Sanitize a document with d_X-privacy at --steps values of ε spread "
                    "over the calibrated range (log-spaced), all with the same noise draw.",
    )
    parser.add_argument("file", metavar="FILE", help="text file, or - for stdin")
    parser.add_argument("--seed", type=int, default=None,
                        help="noise seed (reproducible output; a known seed voids the guarantee)")
    parser.add_argument("--steps", type=int, default=20, help="number of ε values (default 20)")
    add_policy_arguments(parser)
    parser.add_argument("--min-epsilon", type=float, default=None,
                        help="lowest ε (default: the settings', else calibrated)")
    parser.add_argument("--max-epsilon", type=float, default=None,
                        help="highest ε (default: the settings', else calibrated)")
    parser.add_argument("--json", action="store_true", help="print JSON (the only format)")
    parser.set_defaults(handler=run)


def epsilon_steps(lo: float, hi: float, steps: int) -> list[float]:
    if steps == 1:
        return [math.sqrt(lo * hi)]
    return [math.exp(math.log(lo) + i * (math.log(hi) - math.log(lo)) / (steps - 1))
            for i in range(steps)]


def run(args: argparse.Namespace) -> int:
    from preflight.app import rules
    from preflight.app.services import build_services
    from preflight.cli.main import print_json
    from preflight.core.sanitize.base import SanitizeParams

    if not 1 <= args.steps <= 1000:
        raise ConfigError(f"--steps must be between 1 and 1000, not {args.steps}.",
                          "Use e.g. --steps 20.")
    text = read_document(args.file)
    services = build_services()
    name = policy_name(args)
    policy = services.policy(name)
    if name is None and not policy.uses_dx:
        policy = services.policy("dx-all")
    if not policy.uses_dx:
        raise ConfigError(f"The policy '{policy.name}' adds no d_X noise: there is no ε to "
                          "sweep.", "Use --policy identifiers-dx or --policy dx-all.")
    mech = services.dx()
    # the window's slider range (preflight.app.rules): flags, else the settings, else the
    # calibration, within the company's ε bounds
    lo, hi = rules.epsilon_range(mech.epsilon_range, services.settings,
                                 services.org_policy(), args.min_epsilon, args.max_epsilon,
                                 fix="Give 0 < --min-epsilon < --max-epsilon.")
    spans = []
    if policy.dx.value != "all" and text:
        spans = detect_progress.detect(services.detector(), text)
    params = SanitizeParams(seed=args.seed, epsilon=None)
    prepared = services.mechanism(policy).prepare(text, spans, params)
    steps = []
    for eps in epsilon_steps(lo, hi, args.steps):
        r = prepared.at(eps)
        steps.append({"epsilon": eps, "text": r.text,
                      "tokens_changed": r.report.dx.tokens_changed,
                      "tokens_total": r.report.dx.tokens_total})
    print_json({
        "epsilon_range": [lo, hi],
        "policy": policy.describe(),
        "scope": {"all": "all", "spans": "pii", "rest": "rest"}[policy.dx.value],
        "rank_constant": mech.rank_constant,
        "embedding": mech.space.name,
        "steps": steps,
    })
    return 0
