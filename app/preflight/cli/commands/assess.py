"""`preflight assess`: predicted usefulness of a cloud answer on one sanitization."""

from __future__ import annotations

import argparse
import gc
import sys
from dataclasses import dataclass, replace
from typing import Any

from preflight.app import refinement, rules
from preflight.app.leave_summary import summarize_leaving
from preflight.app.ops_status import utility_model_status
from preflight.app.prediction import measured_on_text, scope_text
from preflight.app.presentation import calibration_text, driver_text, explanation_lines
from preflight.app.services import Services, build_services
from preflight.cli import detect_progress
from preflight.cli.commands.privacy import add_privacy_slm_argument, assess_privacy
from preflight.cli.document_arg import read_input
from preflight.cli.policy_args import add_policy_arguments, chosen_policy
from preflight.core.errors import ConfigError
from preflight.core.utility.curve import read_curve, utility_curve
from preflight.core.utility.recommend import CURVE_POINTS, log_grid, prepared_range


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "assess", help="predict how useful a cloud answer on the sanitized text will be",
        description="Sanitize FILE under a policy and predict the cloud model's utility: "
                    "the similarity of its summary to the original (-1..1), lowered for "
                    "facts the answer states that the document does not hold. Says what "
                    "the prediction was measured on, and when FILE lies outside it.",
    )
    p.add_argument("file", help="document to assess, or - for standard input")
    add_policy_arguments(p)
    p.add_argument("--epsilon", type=float, default=None, help="d_X privacy parameter ε")
    p.add_argument("--seed", type=int, default=None, help="random seed (d_X noise)")
    p.add_argument("--correct", action="store_true",
                   help="let the SLM repair the grammar of d_X output first")
    p.add_argument("--fast", action="store_true", help="instant prediction only (no SLM)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_privacy_slm_argument(p)
    p.set_defaults(handler=run)


def sanitize_document(services: Services, text: str, policy: Any, epsilon: float | None,
                      seed: int | None) -> tuple[Any, list, Any, Any]:
    """Detect PII (with the user's detection settings) and sanitize ``text`` under
    ``policy``; returns (SanitizedText, spans, the d_X preparation or None, the vault
    that restores an answer or None). A policy
    with d_X is prepared once with a fixed seed (drawn when none is given), so the
    privacy figures attack the very noise of the payload shown."""
    import secrets

    from preflight.core.sanitize.base import SanitizeParams

    if policy.uses_dx and epsilon is None and policy.epsilon is None:
        raise ConfigError(f"The policy '{policy.name}' adds d_X noise, which needs a "
                          "privacy level.",
                          "Pass --epsilon, or let `preflight recommend` choose one.")
    if epsilon is not None and epsilon <= 0:
        raise ConfigError(f"ε must be positive (got {epsilon:g}).", "Pass --epsilon > 0.")
    spans = detect_progress.detect(services.detector(), text)
    if policy.uses_dx:
        eps = epsilon if epsilon is not None else policy.epsilon
        params = SanitizeParams(seed=seed if seed is not None else secrets.randbits(31),
                                epsilon=eps)
        prepared = services.mechanism(policy).prepare(text, spans, params)
        return prepared.at(eps), spans, prepared, getattr(prepared, "vault", None)
    sanitized, vault = services.sanitize(policy, text, spans, SanitizeParams(seed=seed))
    return sanitized, spans, None, vault


def read_and_sanitize(args: argparse.Namespace
                      ) -> tuple[Services, str, Any, Any, list, Any, Any]:
    """The shared start of `assess` and `privacy`: (services, text, policy, sanitized,
    spans, the d_X preparation or None, the vault or None) for ``args.file`` under the
    chosen policy."""
    text = read_input(args.file)
    services = build_services()
    policy = chosen_policy(args, services)
    sanitized, spans, prepared, vault = sanitize_document(services, text, policy,
                                                          args.epsilon, args.seed)
    return services, text, policy, sanitized, spans, prepared, vault


def run(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json

    services, text, policy, sanitized, spans, prepared, vault = read_and_sanitize(args)
    # the window's ε range (preflight.app.rules), read before the d_X geometry is freed
    eps_range = rules.epsilon_range(services.dx().epsilon_range, services.settings,
                                    services.org_policy()) if prepared is not None else None
    # The privacy figures first: the attack on d_X noise reads the d_X geometry freed below.
    privacy = assess_privacy(services, args, text, sanitized, spans, prepared) \
        if args.json else None
    # One document per run: the detector (spaCy) and the d_X geometry (two vocabulary x
    # dimension matrices) are not needed again; freeing them before the SLM and the
    # embedder load lowers the peak by ~250 MB (bench_assess_limits).
    services.release("detector", "dx", "token_space")
    gc.collect()
    assessor = services.assessor()
    if args.fast:
        result = assessor.fast(text, sanitized, spans, correct=args.correct)
    else:
        # The window's rule (app.refinement): refined where it helps, else the instant
        # value and why. The refine step runs every SLM call before the first embedding:
        # closing the SLM in between means the two models are never in memory together.
        result, _why = refinement.measure(assessor, text, sanitized, spans,
                                          correct=args.correct, vault=vault,
                                          slm_done=lambda: services.release("slm"))
    placed = instant_on_curve(assessor, text, prepared, sanitized, spans, result,
                              correct=args.correct, epsilon_range=eps_range) \
        if prepared is not None else None
    if placed is not None:
        est = result.estimate_fast
        result = replace(result, predicted_fast=placed.utility, estimate_fast=None if est
                         is None else replace(est, value=placed.utility, low=placed.low,
                                              high=placed.high))
    calibration = calibration_text(services.calibration_status())
    measured = services.scope()      # what the prediction was measured on (a summary's)
    scope = None if measured is None else measured.verdict(text)
    leaves = summarize_leaving(text, sanitized, spans).sentence
    # where the local model ran: only when a refined value came of it (the window's rule)
    place = services.assessor_place() if result.predicted is not None else None
    utility_model = utility_model_status(services)      # loaded already by the assessor
    if utility_model.warning:
        print(f"preflight: warning: {utility_model.warning}", file=sys.stderr)
    if args.json:
        out = assessment_json(result, sanitized, policy)
        if placed is not None:
            out["predicted_utility_fast_raw"] = round(placed.raw, 4)
        out.update(calibration=calibration, privacy=privacy, leaves=leaves,
                   scope=None if scope is None else scope.to_json(),
                   assessor=place.to_json() if place is not None else None,
                   utility_model=utility_model.to_json())
        print_json(out)
        return 0
    w = sys.stdout.write
    eps = sanitized.epsilon
    w(f"policy {policy.title} ({policy.name})" + (f", ε = {eps:g}" if eps else "") + "\n")
    w(leaves + "\n")
    w(f"predicted utility (instant): {result.predicted_fast:.3f}"
      + (f" (on this document's utility curve over ε; the raw estimate is {placed.raw:.3f})"
         if placed is not None and abs(placed.raw - placed.utility) >= 5e-4 else "") + "\n")
    if result.predicted is not None:
        w(f"predicted utility (with the local model): {result.predicted:.3f}\n")
    elif result.meta.get("refined_withheld"):
        w(result.meta["refined_withheld"] + "\n")
    for line in [scope_text(scope), *explanation_lines(result.explained),
                 calibration, measured_on_text(scope)]:
        w(line + "\n" if line else "")
    if place is not None:
        w(place.label + "\n")
    w("\n" + result.text + "\n")
    return 0


@dataclass(frozen=True)
class Placed:
    utility: float          # the instant prediction on the non-decreasing curve
    raw: float              # the instant prediction as the regressor gave it
    low: float | None       # its band, on the curve's band
    high: float | None


def instant_on_curve(assessor: Any, text: str, prepared: Any, sanitized: Any, spans: list,
                     result: Any, *, correct: bool = False,
                     epsilon_range: tuple[float, float] | None = None) -> Placed | None:
    """The instant prediction at the payload's ε read from the document's utility curve
    over ``epsilon_range`` (default: the preparation's calibrated range), as the window's
    number is, so `assess` at a larger ε never reports less."""
    eps = sanitized.epsilon
    if eps is None:
        return None
    lo, hi = epsilon_range if epsilon_range is not None else prepared_range(prepared)
    curve = utility_curve(assessor, text, prepared, log_grid(lo, hi, CURVE_POINTS), spans,
                          correct=correct)
    point = read_curve(curve.points, float(eps))
    if point is None:
        return None
    return Placed(point.utility, float(result.predicted_fast), point.low, point.high)


def assessment_json(result: Any, sanitized: Any, policy: Any) -> dict[str, Any]:
    """The ``--json`` document (one builder, so other sections can be added here):
    the assessment (``predicted``, ``interval`` {low, high, level}, ``unsanitized_expected``,
    ``kept_share``, ``drivers`` with their wording, features) and what was assessed."""
    out = result.to_json()
    est = result.explained
    if est is not None:
        out["explanation"] = explanation_lines(est)
        for entry, d in zip(out["drivers"], est.drivers):
            entry["text"] = driver_text(d.feature, d.value, d.effect)
    out.update(method=sanitized.method, policy=policy.describe(),
               epsilon=sanitized.epsilon, sanitized_text=result.text)
    return out
