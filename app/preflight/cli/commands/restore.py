"""`preflight restore FILE|- --vault FILE`: put the originals back.

Works on the sanitized text itself (gives the document back exactly, secrets included) and
on an LLM's answer about it (tolerant to spellings such as ``PERSON_1`` or
``<person_1>'s``; secrets stay placeholders there, see ``core.sanitize.restoring``).
The vault must belong to the text (see ``vault_file.check_vault_fits``): restoring with
another document's vault would write that document's people into this text.
"""

from __future__ import annotations

import argparse
import sys

from preflight.core.sanitize.vault import Vault, restore, withheld_note, withheld_secrets
from preflight.core.sanitize.vault_file import check_vault_fits
from preflight.core.textio import read_document


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "restore", help="replace placeholders/pseudonyms with the originals",
        description="Replace the placeholders or pseudonyms in a text (a sanitized "
                    "document or an answer about it) with the original values from the "
                    "vault written by `preflight sanitize`.",
    )
    parser.add_argument("file", metavar="FILE", help="text to restore, or - for stdin")
    parser.add_argument("--vault", metavar="FILE", required=True,
                        help="the vault written when the document was sanitized")
    parser.add_argument("--any-vault", action="store_true",
                        help="restore even if the vault does not seem to belong to the text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from preflight.cli.commands.sanitize import write_text

    vault = Vault.load(args.vault)
    text = read_document(args.file)
    if not args.any_vault:
        note = check_vault_fits(text, vault)
        if note:
            print(f"preflight: note: {note}", file=sys.stderr)
    write_text(restore(text, vault))
    withheld = withheld_secrets(text, vault)
    if withheld:   # an answer, not the document itself: credentials stay placeholders
        print(f"preflight: note: {withheld_note(withheld).strip()}", file=sys.stderr)
    return 0
