"""`preflight detect FILE|-`: list the PII found in a document.

``--json`` prints ``{"entities": [span...], "warnings": [...]}``; otherwise a readable
table (the values are shown: this runs locally, for the user's own document).
"""

from __future__ import annotations

import argparse
import sys

from dataclasses import replace

from preflight.app.services import build_services
from preflight.cli import detect_progress
from preflight.cli.document_arg import read_input
from preflight.cli.main import print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "detect", help="list the PII found in a document",
        description="Detect PII (names, contact data, card numbers, keys, addresses, health "
                    "and payment details...) in a text file and list it.",
    )
    parser.add_argument("file", metavar="FILE",
                        help="document to scan (.txt .md .eml .docx .pdf), or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the spans as JSON")
    parser.add_argument("--deny", metavar="WORD", action="append", default=[],
                        help="always flag this word or phrase (repeatable; adds to the "
                             "deny-list of the settings for this run)")
    parser.add_argument("--allow", metavar="WORD", action="append", default=[],
                        help="never flag this word or phrase (repeatable)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    text = read_input(args.file)
    services = build_services()
    base = services.settings.detection
    detection = replace(base, deny_list=[*base.deny_list, *args.deny],
                        allow_list=[*base.allow_list, *args.allow])
    # The detector is built on demand: Presidio and spaCy take seconds to import.
    detector = services.make_detector(detection)
    spans = detect_progress.detect(detector, text)
    if args.json:
        print_json({"entities": [s.to_json() for s in spans], "warnings": detector.warnings})
        return 0
    for warning in detector.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not spans:
        print("No PII found.")
        return 0
    rows = [("START", "END", "TYPE", "CATEGORY", "SCORE", "VALUE", "WHY")]
    for s in spans:
        value = text[s.start:s.end].replace("\r", "").replace("\n", "⏎")
        if len(value) > 40:
            value = value[:37] + "…"
        rows.append((str(s.start), str(s.end), s.type, s.category.value, f"{s.score:.2f}",
                     value, s.why))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    print(f"\n{len(spans)} item(s) found.")
    return 0
