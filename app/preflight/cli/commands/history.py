"""`preflight history`: the audit log of sends and local answers; export to CSV, JSONL or
JSON, each record with its hash-chain events (`preflight audit verify --export FILE`
checks such a file; docs/DEPLOYMENT.md shows how to check one without Preflight).

``doc ε`` is the ε the record's document had spent once that send was made: its own ε plus
every earlier send of the same or a near-duplicate document (sequential composition, see
docs/PRIVACY.md)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "history", help="show or export the audit log of what was sent",
        description="List every send (and local answer) recorded in the audit log, or "
                    "export all records with their exact payloads and their hash chain to "
                    "CSV, JSONL or JSON.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--export", metavar="FILE", help="write all records and their chain to FILE.csv, .jsonl or .json (a new file)")
    parser.add_argument("--force", action="store_true",
                        help="with --export: replace FILE if it exists (a regular file only; "
                             "never through a link)")
    parser.add_argument("--limit", type=int, default=50, help="records to list (default 50)")
    parser.set_defaults(handler=run)


def _fmt(value, spec: str = "") -> str:  # type: ignore[no-untyped-def]
    return "-" if value is None else format(value, spec)


def run(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.audit_export import exportable

    log = AuditLog()
    try:
        if args.export:
            n = log.export(args.export, overwrite=args.force)
            print(f"Exported {n} record(s) to {args.export}.")
            return 0
        rows = log.records()
        rows = rows[-args.limit:] if args.limit > 0 else rows
        spent = log.document_epsilon(r["id"] for r in rows)
    finally:
        log.close()
    if args.json:
        print_json({"records": [{**exportable(r), "document_epsilon": spent.get(r["id"])}
                                for r in rows]})
        return 0
    if not rows:
        print("The audit log is empty: nothing was sent yet.")
        return 0
    print(f"{'id':>4}  {'time (UTC)':19}  {'status':11}  {'provider':12}  {'method':11}  "
          f"{'ε':>6}  {'doc ε':>6}  {'tokens':>11}  {'cost':>8}  {'pred':>4}  {'real':>4}")
    for r in rows:
        tokens = f"{_fmt(r['input_tokens'])}+{_fmt(r['output_tokens'])}"
        print(f"{r['id']:>4}  {r['created_at'][:19]:19}  {r['status']:11}  "
              f"{(r['provider'] or '-')[:12]:12}  {(r['method'] or '-')[:11]:11}  "
              f"{_fmt(r['epsilon'], '.3g'):>6}  {_fmt(spent.get(r['id']), '.3g'):>6}  "
              f"{tokens:>11}  {_fmt(r['cost'], '.4f'):>8}  "
              f"{_fmt(r['predicted_utility'], '.2f'):>4}  {_fmt(r['realized_utility'], '.2f'):>4}")
    return 0
