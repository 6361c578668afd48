"""`preflight audit`: check the audit log's hash chain, and copy it to the company's
central store.

- ``verify [--db PATH | --export FILE | --central]`` — check the chain offline and name
  the first changed, deleted or reordered record, or the end of the log cut off (exit 1
  when one is found), then say what the check cannot see;
- ``sync`` — send what the central store lacks now (the window and `preflight send` also
  do it in the background);
- ``status`` — how far the chain and the central copy go;
- ``schema`` — the SQL that creates the central store's tables (for IT);
- ``set-password`` — keep the central store's password in the OS keyring entry the
  company policy names.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit", help="verify the audit log's hash chain; sync it to the central store",
        description="Every audit record is hash-chained. Verify the local log, a copy, an "
                    "export or the central copy; send the log to the company's central "
                    "store (docs/DEPLOYMENT.md).")
    sub = parser.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="check the chain and name the first problem")
    where = verify.add_mutually_exclusive_group()
    where.add_argument("--db", metavar="PATH", help="an audit.sqlite3 file (read-only)")
    where.add_argument("--export", metavar="FILE", help="an export (.jsonl, .csv, .json)")
    where.add_argument("--central", action="store_true",
                       help="this computer's copy in the central store")
    verify.add_argument("--json", action="store_true", help="machine-readable output")
    verify.set_defaults(handler=run_verify)
    for name, helptext, handler in (
            ("sync", "send the records the central store lacks now", run_sync),
            ("status", "how far the chain and the central copy go", run_status)):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("--json", action="store_true", help="machine-readable output")
        cmd.set_defaults(handler=handler)
    schema = sub.add_parser("schema", help="print the central store's SQL schema and the "
                            "laptops' role (for IT)")
    schema.add_argument("--from", dest="after", type=int, default=0, metavar="VERSION",
                        help="only the migrations after this schema version (to upgrade an "
                             "existing store: its preflight_audit_schema table holds it)")
    schema.set_defaults(handler=run_schema)
    sub.add_parser("set-password", help="keep the central store's password in the OS "
                   "keyring").set_defaults(handler=run_set_password)


def _report(report: Any, what: str, as_json: bool) -> int:
    from preflight.cli.main import print_json

    if as_json:
        print_json({"verified": what, **report.to_json()})
        return 0 if report.ok else 1
    if report.ok:
        extra = (f"; {report.adopted} record(s) predate the chain and were chained as found "
                 "at the upgrade" if report.adopted else "")
        print(f"{what}: the chain is intact ({report.records} record(s), {report.events} "
              f"event(s), head {report.head[0]} {report.head[1][:16]}…){extra}.")
    else:
        print(f"{what}: the chain is BROKEN — {report.first}.", file=sys.stderr)
        for problem in report.problems[1:10]:
            print(f"  also: {problem}", file=sys.stderr)
        if len(report.problems) > 10:
            print(f"  … and {len(report.problems) - 10} more", file=sys.stderr)
    for note in report.notes:
        print(f"Note: {note}")
    if report.cannot_detect:
        print("What this check covers:")
        for line in report.cannot_detect:
            print(f"  - {line}")
    return 0 if report.ok else 1


def _services() -> Any:
    from preflight.app.services import build_services

    return build_services()


def _sink(services: Any) -> Any:
    from preflight.core.errors import ConfigError

    org = services.org_policy()
    if org.broken:
        raise ConfigError(str(org.error.message), org.error.hint)
    sink = services.audit_sink()
    if sink is None:
        raise ConfigError("Your organization's policy names no central audit store.",
                          "The local log is complete on its own; IT sets [audit.central] "
                          "in the company policy to add one (docs/DEPLOYMENT.md).")
    return sink


def run_verify(args: argparse.Namespace) -> int:
    from preflight.core.send.audit import AuditLog

    if args.export:
        from preflight.core.send.audit_export import verify_export

        return _report(verify_export(args.export), args.export, args.json)
    if args.db:
        return _report(AuditLog.verify_file(args.db), args.db, args.json)
    if not args.central:
        log = AuditLog()
        try:
            return _report(log.verify(), str(log.path), args.json)
        finally:
            log.close()
    from dataclasses import replace

    from preflight.core.send.audit_chain import verify_chain
    from preflight.core.send.audit_seal import limits

    services = _services()
    sink = _sink(services)
    log = AuditLog()
    try:
        events, rows, head = sink.read(log.log_id)
        report = verify_chain(events, rows, expected_head=head,
                              versions=sink.history(log.log_id))
        report = replace(report, seal="central", cannot_detect=limits("central"))
        return _report(report, f"central store {sink.settings.where}", args.json)
    finally:
        sink.close()
        log.close()


def run_sync(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.audit_sync import sync_log

    services = _services()
    sink = _sink(services)
    log = AuditLog()
    try:
        result = sync_log(log, sink, learning=services.shared_learning())
    finally:
        sink.close()
        log.close()
    if args.json:
        print_json({"sent_events": result.sent_events, "sent_records": result.sent_records,
                    "central_head": result.head[0], "local_head": result.local_head[0],
                    "sent_learning_pairs": result.sent_pairs})
    else:
        print(f"Sent {result.sent_events} event(s) of {result.sent_records} record(s) to "
              f"{sink.settings.where}; the central copy is at event {result.head[0]} of "
              f"{result.local_head[0]}."
              + (f" Shared {result.sent_pairs} learning pair(s) (numbers only)."
                 if result.sent_pairs else ""))
    return 0


def run_status(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json
    from preflight.core.errors import PreflightError
    from preflight.core.send.audit import AuditLog

    services = _services()
    log = AuditLog()
    try:
        out: dict[str, Any] = {"log": str(log.path), "log_id": log.log_id,
                               "events": log.head()[0], "last_confirmed": log.synced_seq()}
    finally:
        log.close()
    central = services.org_policy().central_audit
    out["central"] = central.where if central is not None else None
    if central is not None:
        try:
            sink = _sink(services)
            try:
                out["central_events"] = sink.head(out["log_id"])[0]
                out["central_login_may_rewrite"] = sink.may_rewrite()
            finally:
                sink.close()
        except PreflightError as err:
            out["central_error"] = str(err)
    if args.json:
        print_json(out)
        return 0
    print(f"Local log {out['log']} ({out['log_id']}): {out['events']} event(s).")
    if central is None:
        print("No central audit store is configured.")
    elif "central_events" in out:
        left = out["events"] - out["central_events"]
        print(f"Central store {out['central']}: {out['central_events']} event(s); "
              + (f"{left} waiting to be sent." if left else "up to date."))
        if out["central_login_may_rewrite"]:
            print("Warning: this computer's login owns the central store's tables (or is a "
                  "superuser), so it could change what the store holds. IT should create "
                  "them with another login and grant this one only SELECT and INSERT "
                  "(`preflight audit schema`, docs/DEPLOYMENT.md).")
    else:
        print(f"Central store {out['central']}: {out['central_error']} "
              f"(last confirmed: event {out['last_confirmed']}).")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from preflight.runtime.audit_pg import schema_sql

    sys.stdout.write(schema_sql(args.after))
    return 0


def run_set_password(args: argparse.Namespace) -> int:
    import getpass

    from preflight.core.errors import ConfigError
    from preflight.core.send.keys import KeyStore

    central = _services().org_policy().central_audit
    if central is None or not central.password_keyring:
        raise ConfigError("Your organization's policy names no keyring entry for the "
                          "central audit store's password.",
                          "Ask IT: [audit.central] password_keyring (docs/DEPLOYMENT.md).")
    secret = getpass.getpass(f"Password for the central audit store {central.where}: ")
    KeyStore().set(central.password_keyring, secret)
    print(f"Stored in the OS keyring as '{central.password_keyring}'.")
    return 0
