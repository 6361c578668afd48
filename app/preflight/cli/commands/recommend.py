"""`preflight recommend`: the most private ε that still gives a useful cloud answer."""

from __future__ import annotations

import argparse
import sys

from preflight.cli import detect_progress
from preflight.cli.policy_args import add_policy_arguments, chosen_policy

UTILITY_FIX = "Pass --min-utility between -1 and 1 (0.5 is a sensible start)."
BOUNDS_FIX = "Give 0 < --epsilon-min < --epsilon-max."


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "recommend", help="send or keep local: the most private setting still useful enough",
        description="Under a policy with d_X noise, search the ε range for the most private "
                    "sanitization whose predicted cloud utility reaches --min-utility; under "
                    "a policy without, check its one output. If nothing reaches it, keep the "
                    "document local and print the local model's answer.",
    )
    p.add_argument("file", help="document, or - for standard input")
    p.add_argument("--min-utility", type=float, default=None,
                   help="required predicted utility, -1..1 (default: the policy setting)")
    p.add_argument("--epsilon-min", type=float, default=None, help="policy lower bound on ε")
    p.add_argument("--epsilon-max", type=float, default=None, help="policy upper bound on ε")
    p.add_argument("--seed", type=int, default=None, help="random seed (d_X noise)")
    add_policy_arguments(p)
    p.add_argument("--correct", action="store_true", help="SLM repairs d_X output first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from preflight.app import refinement, rules
    from preflight.app.services import build_services
    from preflight.cli.document_arg import read_input
    from preflight.cli.main import print_json
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.answer_review import check_line
    from preflight.core.send.answer_text import finish_answer
    from preflight.core.tasks import SUMMARIZE

    services = build_services()
    # the same rules as the window's (preflight.app.rules): flags, else the settings,
    # within the company's floor and ε bounds
    org = services.org_policy()
    min_u = rules.min_utility(services.settings, org, args.min_utility, fix=UTILITY_FIX)
    chosen = chosen_policy(args, services)
    if chosen.uses_dx:
        eps_min, eps_max = rules.epsilon_range(services.dx().epsilon_range,
                                               services.settings, org, args.epsilon_min,
                                               args.epsilon_max, fix=BOUNDS_FIX)
    text = read_input(args.file)
    spans = detect_progress.detect(services.detector(), text)
    mech = services.mechanism(chosen)
    params = SanitizeParams(seed=args.seed)
    # the window's rules (app.refinement): the search on the curve the window draws, the
    # decision on the value the faces show
    if chosen.uses_dx:
        rec = refinement.search(text, mech.prepare(text, spans, params), services.assessor(),
                                min_u, spans=spans, epsilon_min=eps_min, epsilon_max=eps_max,
                                correct=args.correct)
    else:
        rec = refinement.decide(text, mech.sanitize(text, spans, params), services.assessor(),
                                min_u, spans=spans, correct=args.correct,
                                vault=getattr(mech, "vault", None))
    out = rec.to_json()
    out["policy"] = chosen.describe()
    out["sanitized_text"] = rec.assessment.text if rec.decision == "send" else None
    notes: list[str] = []
    if rec.decision != "send":
        # The recommendation read the local model's first lines (the assessor's short cap);
        # keeping the document local means its whole answer, as `send --keep-local` gives it.
        local = services.send_session().keep_local(text, SUMMARIZE)
        out["local_answer"], note = finish_answer(local.answer, local.finish_reason)
        notes = ([note] if note else []) + list(local.notes)
        out["local_answer_notes"] = notes
        # checked against the document like any answer (`send` prints it the same way)
        out["local_answer_check"] = local.answer_check.to_json() if local.answer_check else None
        said = check_line(local.answer_check, dx=False)
        notes = notes + ([f"preflight: check: {said}"] if said else [])
    if args.json:
        print_json(out)
        return 0
    w = sys.stdout.write
    if rec.decision == "send" and rec.epsilon is None:
        w(f"send under '{chosen.title}' (predicted utility {rec.predicted_utility:.3f} "
          f"≥ {min_u:g})\n\n{out['sanitized_text']}\n")
    elif rec.decision == "send":
        w(f"send with ε = {rec.epsilon:.4g} (predicted utility {rec.predicted_utility:.3f} "
          f"≥ {min_u:g})\n\n{out['sanitized_text']}\n")
    else:
        what = "no ε in range reaches" if chosen.uses_dx else f"'{chosen.title}' misses"
        w(f"keep local: {what} utility {min_u:g} "
          f"(best predicted {rec.predicted_utility:.3f}). The local model's answer:\n\n"
          f"{out['local_answer']}\n")
        for note in notes:
            print(note, file=sys.stderr)
    return 0
