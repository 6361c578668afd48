"""`preflight send`: sanitize, show exactly what would leave, and send only on confirmation.

Without ``--yes`` the payload, cost and any residual PII are printed and the user is asked
on the terminal (``/dev/tty`` when the document comes from stdin). With no terminal and
no ``--yes`` the command prints the plan and refuses. What the re-scan blocks (a value the
policy protects still in the payload, or a validated identifier or secret) is sent only
when overridden item by item (asked one by one, or ``--allow ID``); notes (a name the NER
model guesses, a value the policy keeps) never block. ``--remember-allow ID`` is
``--allow ID`` that also adds the value to the detection allow-list in the settings, so a
false positive is not flagged again (never for a secret); a document
sent before needs ``--allow-resend`` (or a yes on the terminal). A degraded PII detector
(e.g. the NER model missing) blocks the send until ``--accept-degraded-detection`` (or a
yes on the terminal): ``--yes`` alone does not accept it.

A document whose request is over the provider's context window is refused before
detection; ``--long first-part`` sends the beginning that fits, ``--long chunked`` a
summary of each part and then of the summaries (:mod:`preflight.cli.chunked_send`).

Size (~450 lines): the command is one conversation on the terminal (the plan, item-by-item
overrides, the key prompt, the framed answer); its rules live in the application layer.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any, Callable

from preflight.app import long_documents
from preflight.cli import detect_progress
from preflight.cli.answer_stream import SentenceStream
from preflight.cli.chunked_send import (
    confirm_chunked, first_part_sanitized, first_part_text, run_chunked_send,
)
from preflight.cli.policy_args import add_policy_arguments, chosen_policy
from preflight.core.errors import ConfigError, InputError, PreflightError
from preflight.core.send.answer_guard import neutralize
from preflight.core.tasks import SUMMARY_MAX_TOKENS, Task

#: On a terminal every line of an answer starts with this mark, and nothing Preflight
#: prints itself does: a line the provider wrote cannot pass for Preflight's own.
GUTTER = "│ "
ASCII_GUTTER = "| "          # for a terminal whose encoding has no box-drawing line


class AnswerFrame:
    """Where a model's answer is written: no terminal control or text-direction character
    gets through (the core removed the provider's already; this also covers the local
    model's tokens), and on a terminal each line of the answer sits behind :data:`GUTTER`.
    Redirected to a file or a pipe, the answer is written as it is."""

    def __init__(self, out: Any) -> None:
        self._out = out
        try:
            self.gutter = bool(out.isatty())
        except (AttributeError, ValueError, OSError):
            self.gutter = False
        try:
            GUTTER.encode(getattr(out, "encoding", None) or "utf-8")
            self._mark = GUTTER
        except (LookupError, UnicodeEncodeError):
            self._mark = ASCII_GUTTER
        self._line_start = True

    def write(self, text: str) -> None:
        text = neutralize(text)
        if self.gutter:
            pieces = []
            for i, line in enumerate(text.split("\n")):
                if i:
                    pieces.append("\n")
                    self._line_start = True
                if line:
                    if self._line_start:
                        pieces.append(self._mark)
                    pieces.append(line)
                    self._line_start = False
            text = "".join(pieces)
        self._out.write(text)

    def flush(self) -> None:
        self._out.flush()

    def heading(self, who: str) -> str:
        """The line printed (on stderr) before the answer."""
        mark = f" (each of its lines begins with \"{self._mark.strip()}\")" if self.gutter else ""
        return f"--- answer from {who}{mark} ---"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "send", help="sanitize a document and send it to a cloud LLM (on confirmation)",
        description="Sanitize FILE (or stdin with '-'), show the exact request, its token "
                    "count and cost, re-scan it for PII, and send it only when confirmed. "
                    "The answer streams with placeholders restored; an audit record is "
                    "written before anything leaves.",
    )
    parser.add_argument("file", metavar="FILE|-", help="document to send ('-' reads stdin)")
    add_policy_arguments(parser)
    parser.add_argument("--epsilon", type=float, help="privacy parameter ε (d_X policies)")
    parser.add_argument("--seed", type=int, help="random seed (reproducible sanitization)")
    parser.add_argument("--task", choices=("summarize", "question"), default="summarize")
    parser.add_argument("--question", default="", help="the question (with --task question)")
    parser.add_argument("--instruction", default="", metavar="TEXT",
                        help="your own instruction, e.g. \"summarize for the board in 5 "
                             "bullets\" (sanitized like the question)")
    parser.add_argument("--provider", help="provider name (default: the default provider)")
    parser.add_argument("--yes", action="store_true",
                        help="send without asking (residual PII still needs --allow)")
    parser.add_argument("--allow", action="append", default=[], metavar="ID",
                        help="send this residual PII item anyway (ID from the plan; repeatable)")
    parser.add_argument("--remember-allow", action="append", default=[], metavar="ID",
                        help="like --allow, and add the value to the detection allow-list "
                             "in the settings so it is not flagged again (not for secrets)")
    parser.add_argument("--allow-resend", action="store_true",
                        help="confirm sending a document that was sent before")
    parser.add_argument("--accept-degraded-detection", action="store_true",
                        help="send although the PII detector runs degraded (e.g. its NER "
                             "model is missing); --yes alone does not")
    parser.add_argument("--keep-local", action="store_true",
                        help="do not send: the local SLM answers on the original text")
    parser.add_argument("--no-learn", action="store_true",
                        help="do not compute the realized utility after the answer")
    parser.add_argument("--long", choices=("first-part", "chunked"),
                        help="a document over the provider's context window: send the first "
                             "part that fits (cut at a paragraph end), or a chunked summary "
                             "(each part summarized, then the summaries); without it such a "
                             "send is refused before any work")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _task(args: argparse.Namespace) -> Task:
    if args.task == "question":
        if not args.question.strip():
            raise InputError("--task question needs --question.", "Add --question \"...\".")
        return Task("question", question=args.question, max_tokens=SUMMARY_MAX_TOKENS,
                    note=args.instruction)
    if args.question:
        raise InputError("--question is only used with --task question.",
                         "Add --task question, or drop --question.")
    return Task("summarize", note=args.instruction)


class _Terminal:
    """Asks yes/no on the user's terminal, even when the document came from stdin."""

    def __init__(self, stdin_is_document: bool) -> None:
        self._fh: Any = None
        # stdin may be closed (``0<&-``: sys.stdin is None) or not a terminal (``< /dev/null``)
        if not stdin_is_document and sys.stdin is not None and _isatty(sys.stdin):
            self._read: Callable[[], str] | None = sys.stdin.readline
            self._write = sys.stderr
            return
        try:
            self._fh = open("/dev/tty", "r+", encoding="utf-8")  # noqa: SIM115
            self._read, self._write = self._fh.readline, self._fh
        except OSError:
            self._read, self._write = None, sys.stderr

    @property
    def available(self) -> bool:
        return self._read is not None

    def ask(self, question: str) -> bool:
        """Yes only when the user types it; an answer that cannot be read is a no."""
        assert self._read is not None
        try:
            self._write.write(f"{question} [y/N] ")
            self._write.flush()
            return self._read().strip().lower() in ("y", "yes")
        except (OSError, ValueError):      # the terminal went away (EIO, closed file)
            return False

    def secret(self, prompt: str) -> str:
        stream = self._fh if self._fh is not None else None
        return getpass.getpass(prompt, stream=stream)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError):          # a stream whose descriptor was closed
        return False


def _print_plan(plan: Any, out: Any) -> None:
    from preflight.core.send.plan import DEGRADED_DETECTOR_ID

    w = out.write
    policy = plan.sanitized.report.policy
    if policy is not None:
        w(f"Policy: {policy.title} ({plan.method})\n")
    w(f"Provider: {plan.provider.name} ({plan.provider.model}, {plan.provider.api_style})\n")
    w(f"POST {plan.request.url}\n")
    for k, v in plan.request.display_headers():
        w(f"  {k}: {v}\n")
    for k, v in plan.task.user_text().items():     # as sanitized (the same vault)
        w(f"{'Question' if k == 'question' else 'Instruction'} as sent: {v}\n")
    w(f"Exact request body ({len(plan.payload)} bytes):\n")
    try:
        w(json.dumps(json.loads(plan.payload), ensure_ascii=False, indent=2) + "\n")
    except ValueError:
        w(plan.payload.decode("utf-8", "replace") + "\n")
    w("(shown indented; the bytes sent are the same JSON on one line, UTF-8)\n")
    w(f"Cost: {plan.cost.describe()}\n")
    for notice in plan.notices:
        w(f"  [WARNING] {notice}\n")
    if plan.predicted_utility is not None:
        w(f"Predicted utility: {plan.predicted_utility:.2f}\n")
    for f in plan.findings:
        if f.id == DEGRADED_DETECTOR_ID:
            w(f"  [BLOCKS] {f.reason} (accept with --accept-degraded-detection)\n")
            continue
        mark = "BLOCKS" if f.blocking else "note"
        w(f"  [{mark}] {f.type} '{f.value}' in the {f.part} (id {f.id}): {f.reason}\n")
    if any(f.rememberable for f in plan.findings):
        w("  (a false positive: --remember-allow ID sends it and stops flagging it)\n")
    if plan.ledger is not None and (plan.ledger.total or plan.ledger.prior_sends
                                    or plan.ledger.limit is not None):
        w(f"{plan.ledger.describe()}\n")
    for p in plan.prior_sends:
        w(f"  [RESEND] this document was sent on {p.created_at} to {p.provider} "
          f"({p.method}{f', ε {p.epsilon:g}' if p.epsilon is not None else ''}; "
          f"match: {p.match})\n")
    if plan.prior_sends and not plan.resend_needs_ack:
        w("  (no d_X noise in this send: it adds ε 0, no resend confirmation needed)\n")


def remember_allowed(plan: Any, ids: list[str], org: Any) -> None:
    """Add the values of findings ``ids`` to the detection allow-list (saved settings),
    saying so on stderr; refuses a secret, an override the company ``org`` forbids and a
    type it protects before changing anything."""
    from preflight.core.config import load_settings, save_settings, settings_path
    from preflight.core.send.session import SendBlocked

    chosen = [f for f in plan.findings if f.id in set(ids)]
    refused = [f for f in chosen if not f.rememberable]
    if refused:
        f = refused[0]
        raise InputError(f"--remember-allow {f.id}: a {f.type} is never added to the "
                         "allow-list (it would then leave unnoticed in every document).",
                         f"Use --allow {f.id} to send it this once.")
    refusal = org.allow_list_refusal(chosen)
    if refusal is not None:
        raise SendBlocked(*refusal)
    settings = load_settings()
    allow = settings.detection.allow_list
    known = {v.casefold() for v in allow}
    added = [f for f in chosen if f.value.casefold() not in known]
    for f in added:
        allow.append(f.value)
        known.add(f.value.casefold())
    if added:
        save_settings(settings)
    for f in chosen:
        strong = " (a validated identifier: only you can tell it is not one)" if (
            f.kind == "validated") else ""
        print(f"preflight: {f.type} '{f.value}' is on the detection allow-list in "
              f"{settings_path()} and will not be flagged again{strong}; remove it there "
              "to undo.", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from preflight.app.services import build_services
    from preflight.cli.document_arg import read_input
    from preflight.cli.main import print_json
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.answer_review import check_line, realized_phrase
    from preflight.core.send.answer_text import (
        NOISE_NOTE,
        Restoration,
        finish_answer,
        restoration_line,
    )
    from preflight.core.send.keys import key_account, keyring_status, resolve_key
    from preflight.core.send.plan import DEGRADED_DETECTOR_ID
    from preflight.core.send.session import Confirmation, SendBlocked
    from preflight.core.send.stream import MAX_ANSWER_CHARS

    text = read_input(args.file)
    task = _task(args)
    services = build_services()
    session = services.send_session()

    if args.keep_local:        # ends like a cloud answer: cut at a sentence, and says why
        local_stream = SentenceStream(AnswerFrame(sys.stdout))
        local = session.keep_local(text, task,
                                   on_token=None if args.json else local_stream.feed)
        shown, cut = finish_answer(local.answer, local.finish_reason)
        local_notes = ([cut] if cut else []) + list(local.notes)
        if args.json:
            print_json({**local.to_json(), "answer_shown": shown, "notes": local_notes})
            return _audit_status(local.audit_error, quiet=True)
        local_stream.finish(local.finish_reason)
        sys.stdout.write("\n")
        for note in local_notes:
            print(note, file=sys.stderr)
        _print_check(check_line(local.answer_check, dx=False))
        print(f"(local answer by the SLM; nothing was sent; audit record {local.record_id})",
              file=sys.stderr)
        return _audit_status(local.audit_error)

    policy = chosen_policy(args, services)
    params = SanitizeParams(seed=args.seed, epsilon=args.epsilon)
    session.provider(args.provider)          # an unknown provider fails before detection
    over = long_documents.over_context(session, text, task, args.provider)
    if over is not None and args.long is None:   # before detection: say it first
        raise long_documents.OverContext(over, session.provider(args.provider).name, (
            "Run again with --long first-part (the beginning that fits, cut at a paragraph "
            "end) or --long chunked (each part summarized, then the summaries)."))
    if over is not None and args.long == "chunked":
        return run_chunked_send(args, services, session, text, task, policy, params,
                                lambda plan, ids: confirm_chunked(args, plan, ids, _Terminal),
                                AnswerFrame(sys.stdout))
    fitter = None
    if over is not None:                     # first part: detect only what is sent
        fitter, text = first_part_text(session, text, task, args.provider)
    detector = services.detector()
    spans = detect_progress.detect(detector, text) if text.strip() else []
    for warning in detector.warnings:
        print(f"preflight: warning: {warning}", file=sys.stderr)
    memory = None if args.seed is not None else services.placeholder_memory(args.file, text)
    sanitized, vault = services.sanitize(policy, text, spans, params, memory=memory)
    if fitter is not None and not fitter.fits(sanitized.text):   # placeholders made it longer
        text, sanitized, spans = first_part_sanitized(text, sanitized, spans, fitter)
    plan = session.prepare_send(text, args.provider, policy.name, params, task, spans=spans,
                                sanitized=sanitized, vault=vault, memory=memory)
    overrides = set(args.allow) | set(args.remember_allow)
    unknown = overrides - {f.id for f in plan.findings}
    if unknown:
        raise InputError(f"--allow/--remember-allow names no finding of this plan: "
                         f"{', '.join(sorted(unknown))}.", "Use the ids printed with the plan.")
    org = services.org_policy()
    if args.remember_allow:
        remember_allowed(plan, args.remember_allow, org)
    resend_ok = args.allow_resend
    accept_degraded = args.accept_degraded_detection
    plan_out = sys.stderr if args.json else sys.stdout

    if not args.yes:
        terminal = _Terminal(stdin_is_document=args.file == "-")
        try:
            _print_plan(plan, plan_out)
            plan_out.flush()
            session.check_epsilon_ledger(plan)   # over the company's ε cap: ask nothing
            if not terminal.available:
                if args.json:
                    print_json({"plan": plan.to_json(), "policy": policy.describe(),
                                "sent": False})
                raise SendBlocked(
                    "Not sent: there is no terminal to confirm on.",
                    "Review the plan above and run again with --yes (and --allow ID for each "
                    "item marked BLOCKS).",
                )
            degraded = plan.degraded_detection
            refusal = degraded and org.degraded_refusal(degraded.value)
            if refusal:                          # forbidden by the company: ask nothing
                raise SendBlocked(*refusal)
            if degraded is not None and not accept_degraded:
                accept_degraded = terminal.ask(
                    f"The PII detector runs degraded ({degraded.value}); names may go "
                    "unnoticed. Send anyway?")
            for f in plan.blocking:
                if f.id == DEGRADED_DETECTOR_ID:
                    continue
                if f.id not in overrides and terminal.ask(
                        f"Send {f.type} '{f.value}' as it is?"):
                    overrides.add(f.id)
            if plan.resend_needs_ack and not resend_ok:
                resend_ok = terminal.ask(
                    f"This document was sent before and this send adds ε "
                    f"{plan.ledger.this_send:g}; differently noised copies can be averaged "
                    "to undo the noise. Send it again anyway?")
            confirmed = terminal.ask(f"Send this to {plan.provider.name}?")
            try:
                resolve_key(plan.provider, session.keystore, session.session_keys)
            except ConfigError:
                if confirmed and not keyring_status().available and terminal.ask(
                        "No OS keyring here. Type a key to hold in memory for this run only?"):
                    session.session_keys.set(key_account(plan.provider),
                                             terminal.secret("API key (not echoed): "))
        finally:
            terminal.close()
    else:
        confirmed = True
        for notice in plan.notices:
            print(f"preflight: warning: {notice}", file=sys.stderr)
        if plan.ledger is not None and plan.ledger.total:
            print(f"preflight: {plan.ledger.describe()}", file=sys.stderr)

    confirmation = Confirmation(confirmed, frozenset(overrides), resend_ok, accept_degraded)
    session.check(plan, confirmation)  # refuse before printing anything as "answer"

    frame = AnswerFrame(sys.stdout)
    stream = SentenceStream(frame)
    # the heading comes with the answer's first words: a send that fails before any
    # arrive prints the error alone, under no empty "answer" heading
    heading = [] if args.json else [frame.heading(plan.provider.name)]

    def feed(chunk: str) -> None:
        if heading:
            print(heading.pop(), file=sys.stderr)
        stream.feed(chunk)

    try:
        result = session.execute(plan, confirmation, learn=not args.no_learn,
                                 on_chunk=None if args.json else feed)
    except PreflightError:
        if not args.json and not heading:
            stream.finish(None)            # what arrived before the failure, whole
            sys.stdout.write("\n")
        raise
    if heading:                            # an empty answer: still under its heading
        print(heading.pop(), file=sys.stderr)
    restoration = Restoration.of(sanitized)
    notes = ([restoration_line(restoration)] + ([NOISE_NOTE] if restoration.noise else [])
             + list(result.notes))       # what was left, removed or redacted: beside it
    if args.json:
        shown, cut = finish_answer(result.answer, result.finish_reason)
        out = result.to_json()
        check = out.pop("answer_check")            # one place: beside the answer
        print_json({"plan": plan.to_json(), "policy": policy.describe(),
                    "result": out, "sent": True, "answer_shown": shown,
                    "answer_check": check, "notes": ([cut] if cut else []) + notes})
        return _audit_status(result.audit_error, quiet=True)
    cut = stream.finish(result.finish_reason)
    sys.stdout.write("\n")
    for note in ([cut] if cut else []) + notes:
        print(f"preflight: note: {note}", file=sys.stderr)
    _print_check(check_line(result.answer_check, dx=restoration.noise))
    moved = [h["url"] for h in result.requests if h["url"] != plan.request.url]
    if moved:
        print(f"(the provider redirected within its own address; the request went to "
              f"{moved[-1]}, recorded in audit record {result.record_id})", file=sys.stderr)
    if result.truncated:
        print(f"(the answer was cut at {MAX_ANSWER_CHARS} characters, the size limit; the "
              "audit record says 'truncated')", file=sys.stderr)
    cost = f", cost {result.cost:.4f}" if plan.cost.priced else ""
    util = realized_phrase(result.realized_utility, result.similarity, result.answer_check)
    util = f", {util}" if util else ""
    print(f"--- {result.input_tokens} + {result.output_tokens} tokens ({result.token_method})"
          f"{cost}{util}; audit record {result.record_id} ---", file=sys.stderr)
    return _audit_status(result.audit_error)


def _print_check(line: str) -> None:
    """The answer check after the answer (stderr, beside the notes): what the answer states
    that the document does not hold, and which of it came through noise."""
    if line:
        print(f"preflight: check: {line}", file=sys.stderr)


def _audit_status(audit_error: str | None, quiet: bool = False) -> int:
    """0, or — the answer was shown but the audit log could not record all of it — the
    I/O error status after saying so on stderr (``quiet``: JSON carries it already)."""
    if audit_error is None:
        return 0
    if not quiet:
        print(f"preflight: warning: {audit_error}", file=sys.stderr)
    from preflight.core.send.audit import AuditWriteError

    return AuditWriteError.exit_code
