"""`preflight privacy`: what the payload of one sanitization still gives away.

Prints the quasi-identifiers left in the payload (with a warning when several remain
together), the ε this document has already spent on earlier sends plus what this send
would add, and — unless ``--no-attack`` — the local model's attempt to reconstruct the
original from the payload (a few seconds). ``--json`` prints the same figures as
``assess --json`` puts under ``"privacy"``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from preflight.cli.policy_args import add_policy_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "privacy", help="what a sanitized document still gives away (attack, ε ledger)",
        description="Sanitize FILE under a policy and report the quasi-identifiers left in "
                    "the payload, the ε spent on this document so far, and how much of the "
                    "original the local model reconstructs from the payload.",
    )
    p.add_argument("file", metavar="FILE|-", help="document to check ('-' reads stdin)")
    add_policy_arguments(p)
    p.add_argument("--epsilon", type=float, default=None, help="d_X privacy parameter ε")
    p.add_argument("--seed", type=int, default=None, help="random seed (d_X noise)")
    p.add_argument("--no-attack", action="store_true",
                   help="skip the reconstruction attack by the local model (seconds)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def add_privacy_slm_argument(parser: argparse.ArgumentParser) -> None:
    """``--privacy-slm`` for `assess`: also run the reconstruction attack (seconds)."""
    parser.add_argument("--privacy-slm", action="store_true",
                        help="also run the local model's reconstruction attack for the "
                             "\"privacy\" figures of --json (takes seconds)")


def assess_privacy(services: Any, args: argparse.Namespace, original: str, sanitized: Any,
                   spans: Sequence[Any], prepared: Any = None) -> dict[str, Any]:
    """`assess`'s "privacy" object (the SLM attack only with ``--privacy-slm``)."""
    from preflight.app.privacy_report import privacy_report

    return privacy_report(services, original, sanitized, spans, prepared=prepared,
                          attack=bool(getattr(args, "privacy_slm", False)))


def run(args: argparse.Namespace) -> int:
    from preflight.app.privacy_report import privacy_report
    from preflight.cli.commands.assess import read_and_sanitize
    from preflight.cli.main import print_json

    services, text, policy, sanitized, spans, prepared, _vault = read_and_sanitize(args)
    services.release("detector")          # the SLM comes next: lower the peak
    report = privacy_report(services, text, sanitized, spans, attack=not args.no_attack,
                            prepared=prepared)
    if args.json:
        print_json({"policy": policy.describe(), "method": sanitized.method,
                    "epsilon": sanitized.epsilon, "privacy": report})
        return 0
    eps = sanitized.epsilon
    print(f"policy {policy.title} ({policy.name})" + (f", ε = {eps:g}" if eps else ""))
    print_report(report, sys.stdout)
    return 0


def print_report(report: dict[str, Any], out: Any) -> None:
    w = out.write
    quasi = report["quasi_identifiers"]
    w(f"Quasi-identifiers left in the payload: {len(quasi)}\n")
    for q in quasi:
        w(f"  {q['kind']}: {q['value']}\n")
    if report["quasi_warning"]:
        w(f"  [WARNING] {report['quasi_warning']}\n")
    w(report["epsilon_ledger"]["text"] + "\n")
    dx = report.get("dx_attack")
    if dx is not None:
        pii = (f", {dx['success_pii']:.0%} of the tokens inside detected PII"
               if dx.get("success_pii") is not None else "")
        w(f"Optimal attack on the d_X noise (ε = {dx['epsilon']:g}): recovers "
          f"{dx['success']:.0%} of the {dx['tokens']} noised tokens exactly{pii} "
          f"(± {dx['mc_error'] + dx['sampling_error']:.0%}; guessing the released token "
          f"itself: {dx['identity']:.0%}, nearest neighbour: {dx['nearest']:.0%})\n")
        w("  by ε: " + ", ".join(f"{p['epsilon']:.3g} → {p['success']:.0%}"
                                 for p in dx["curve"]) + "\n")
    attack = report["reconstruction"]
    if attack is not None:
        share = attack["restored_share"]
        kinds = ", ".join(f"{k} {v['recovered']}/{v['total']}"
                          for k, v in attack["by_kind"].items())
        w(f"Reconstruction by the local model ({attack['attacked_words']} of "
          f"{attack['payload_words']} payload words read): recovered "
          f"{attack['values_recovered']} of {attack['values_total']} protected values"
          + (f" ({kinds})" if kinds else "") + "; restored "
          f"{attack['words_restored']} of {attack['words_changed']} changed words"
          + (f" ({share:.0%})" if share is not None else "") + "\n")
        for v in attack["values"]:
            if v["match"]:
                where = "; the payload still writes it" if v["in_payload"] else ""
                w(f"  {v['match']}: {v['type']} '{v['value']}'{where}\n")
        for note in attack["notes"]:
            w(f"  {note}\n")
    for note in report.get("notes", []):
        w(f"({note})\n")
