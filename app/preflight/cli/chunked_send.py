"""`preflight send --long chunked`: a document over the provider's context window, as a
summary of each part and then of the summaries (:mod:`preflight.core.send.chunked`).

Every step prints its progress on stderr ("Summarizing part 3 of 12"). Ctrl+C stops
cleanly: the request on the wire is cancelled, nothing more is sent, and the command
says how many requests left and where their audit records are.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from preflight.app.long_documents import part_words
from preflight.cli import detect_progress
from preflight.core.errors import Cancelled, InputError
from preflight.core.tasks import Task


class _Progress:
    """Prints each step on stderr and remembers how many requests are done."""

    def __init__(self) -> None:
        self.done = 0

    def __call__(self, done: int, total: int, words: str) -> None:
        self.done = done
        print(f"preflight: {part_words(done, total, words)}", file=sys.stderr, flush=True)


def run_chunked_send(args: argparse.Namespace, services: Any, session: Any, text: str,
                     task: Task, policy: Any, params: Any, ask: Any, frame: Any) -> int:
    """Detect, sanitize, plan every part, confirm once, send; ``ask(plan, overrides)``
    returns the confirmation (the terminal conversation of ``send``); the answer is
    written to ``frame`` (``send``'s :class:`AnswerFrame`)."""
    from preflight.cli.main import print_json
    from preflight.core.send.chunked import prepare_chunked, run_chunked

    if task.kind != "summarize":
        raise InputError("A chunked send summarizes; it cannot answer a question over parts.",
                         "Drop --task question, or use --long first-part.")
    print(f"preflight: finding names and identifiers in {len(text):,} characters…",
          file=sys.stderr, flush=True)
    spans = detect_progress.detect(services.detector(), text)
    memory = None if args.seed is not None else services.placeholder_memory(args.file, text)
    sanitized, vault = services.sanitize(policy, text, spans, params, memory=memory)
    plan = prepare_chunked(session, text, sanitized, spans, task, args.provider, vault=vault,
                           memory=memory, progress=_Progress())
    out = sys.stderr if args.json else sys.stdout
    out.write(f"Chunked summary: {len(plan.parts)} parts, then one summary of the summaries "
              f"= {plan.requests} requests to {plan.provider.name}, "
              f"{plan.input_tokens:,} input tokens for the parts.\n")
    for f in plan.findings:
        mark = "BLOCKS" if f.blocking else "note"
        out.write(f"  [{mark}] {f.type} '{f.value}' (id {f.id}): {f.reason}\n")
    confirmation = ask(plan, set(args.allow) | set(args.remember_allow))
    box: dict[str, Any] = {}
    cancel = threading.Event()
    progress = _Progress()

    def work() -> None:
        try:
            box["result"] = run_chunked(session, plan, confirmation, progress=progress,
                                        cancel=cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="chunked-send", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        print("preflight: stopping (the request in flight is cancelled)…", file=sys.stderr)
        worker.join()
        box.setdefault("error", Cancelled())
    error = box.get("error")
    if isinstance(error, Cancelled):
        print(f"preflight: stopped by you after {progress.done} of {plan.requests} requests; "
              "nothing more was sent (each request is in `preflight history`).",
              file=sys.stderr)
        return 130
    if error is not None:
        raise error
    result = box["result"]
    if args.json:
        print_json({"chunked": True, "parts": len(plan.parts), "requests": plan.requests,
                    "answer": result.answer, "answer_raw": result.answer_raw,
                    "withheld": result.withheld or None,
                    "part_summaries": [r.answer for r in result.summaries],
                    "record_ids": list(result.record_ids), "sent": True})
        return 0
    frame.write(result.answer.strip())
    sys.stdout.write("\n")
    if result.withheld:
        print(f"preflight: note: {result.withheld}", file=sys.stderr)
    print(f"--- chunked summary of {len(plan.parts)} parts; audit records "
          f"{', '.join(str(i) for i in result.record_ids)} ---", file=sys.stderr)
    return 0


def confirm_chunked(args: argparse.Namespace, plan: Any, overrides: set[str],
                    terminal_cls: Any) -> Any:
    """The confirmation of a chunked send: ``--yes`` with ``--allow`` per blocking item,
    or each item and the whole plan asked on the terminal (its findings are the union of
    every part's). ``terminal_cls``: ``send``'s terminal."""
    from preflight.core.send.session import Confirmation, SendBlocked

    unknown = overrides - {f.id for f in plan.findings}
    if unknown:
        raise InputError(f"--allow names no finding of this plan: {', '.join(sorted(unknown))}.",
                         "Use the ids printed with the plan.")
    resend, degraded = args.allow_resend, args.accept_degraded_detection
    if args.yes:
        return Confirmation(True, frozenset(overrides), resend, degraded)
    terminal = terminal_cls(stdin_is_document=args.file == "-")
    try:
        if not terminal.available:
            raise SendBlocked("Not sent: there is no terminal to confirm on.",
                              "Run again with --yes (and --allow ID for each item marked "
                              "BLOCKS).")
        for f in plan.blocking:
            if f.id not in overrides and terminal.ask(f"Send {f.type} '{f.value}' as it is?"):
                overrides.add(f.id)
        if plan.prior_sends and not resend:
            resend = terminal.ask("Parts of this document were sent before. Send again?")
        confirmed = terminal.ask(f"Send these {plan.requests} requests to "
                                 f"{plan.provider.name}?")
    finally:
        terminal.close()
    return Confirmation(confirmed, frozenset(overrides), resend, degraded)


def first_part_text(session: Any, text: str, task: Task, provider: Any) -> tuple[Any, str]:
    """(the fitter, the beginning of ``text`` that fits, cut at a paragraph end): only
    that part is detected and sanitized."""
    from preflight.core.send.chunked import first_part, fitter
    from preflight.core.types import SanitizedText

    fit = fitter(session, task, session.provider(provider))
    part = first_part(text, SanitizedText(text, "none"), (), fit).original
    print(f"preflight: sending the first {len(part):,} of {len(text):,} characters (cut at "
          "a paragraph end).", file=sys.stderr)
    return fit, part


def first_part_sanitized(text: str, sanitized: Any, spans: Any, fit: Any
                         ) -> tuple[str, Any, list[Any]]:
    """The first part of an output that placeholders made longer than the window."""
    from preflight.core.send.chunked import first_part

    part = first_part(text, sanitized, spans, fit)
    return part.original, part.sanitized, list(part.spans)
