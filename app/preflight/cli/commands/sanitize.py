"""`preflight sanitize FILE|-`: detect PII and apply a policy.

``--policy NAME|FILE`` (default: the active policy) or ``--method`` (a classic preset)
chooses what happens to each kind of value. Policies with reversible actions (placeholder,
pseudonym) write their vault — the only place the originals are kept — to ``--vault`` or to
``<data dir>/vaults/<sha256 of the text>.json``, and say where on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from preflight.app.services import build_services
from preflight.cli import detect_progress
from preflight.core import paths
from preflight.cli.document_arg import read_input
from preflight.cli.policy_args import add_policy_arguments, chosen_policy
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import DxScope
from preflight.core.sanitize.operators import document_sha256
from preflight.core.sanitize.vault import Vault
from preflight.core.sanitize.vault_file import check_vault_target


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sanitize", help="replace the PII of a document (prints the sanitized text)",
        description="Detect PII in a document and sanitize it under a policy (one action "
                    "per kind of value). Placeholders and pseudonyms are reversible: their "
                    "vault is written to a file only you can read; `preflight restore` "
                    "uses it.",
    )
    parser.add_argument("file", metavar="FILE",
                        help="document to sanitize (.txt .md .eml .docx .pdf), or - for stdin")
    add_policy_arguments(parser)
    parser.add_argument("--seed", type=int, default=None,
                        help="make random choices reproducible (pseudonym, dx); keep it "
                             "secret for pseudonym")
    parser.add_argument("--vault", metavar="FILE", default=None,
                        help="where to write the vault of a reversible method (never replaces "
                             "anything but an older vault of the same document)")
    parser.add_argument("--json", action="store_true",
                        help="print text, change list and method facts as JSON")
    dx = parser.add_argument_group("d_X options")
    dx.add_argument("--epsilon", type=float, default=None, help="privacy parameter ε")
    parser.set_defaults(handler=run)


def _document_name(source: str) -> str:
    return "standard input" if source == "-" else Path(source).name


def default_vault_path(text: str) -> Path:
    return paths.data_dir() / "vaults" / f"{document_sha256(text)}.json"


def run(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json

    text = read_input(args.file)
    if args.vault:   # a bad --vault fails now, not after detection
        check_vault_target(Path(args.vault), document_sha256(text), _document_name(args.file))
    services = build_services()
    policy = chosen_policy(args, services)
    params = SanitizeParams(seed=args.seed, epsilon=args.epsilon)
    warnings: list[str] = []
    spans = []
    # d_X over the whole text is the one policy that does not use the detection.
    if policy.dx is not DxScope.ALL and text:
        detector = services.detector()
        spans = detect_progress.detect(detector, text)
        warnings.extend(detector.warnings)
    memory = None if args.seed is not None else services.placeholder_memory(args.file, text)
    result, vault = services.sanitize(policy, text, spans, params, memory=memory)

    vault_path: Path | None = None
    if isinstance(vault, Vault):
        vault.bind(result.text, _document_name(args.file))
        vault_path = vault.save(Path(args.vault) if args.vault else default_vault_path(text))
        print(f"preflight: vault written to {vault_path} (it holds the originals; keep it "
              f"private, `preflight restore --vault` needs it)", file=sys.stderr)
    elif args.vault:
        warnings.append(f"--vault ignored: policy '{policy.name}' is not reversible "
                        "here (it made no placeholder or pseudonym).")

    if args.json:
        out = result.to_json()
        if vault_path is not None:
            out["vault"] = str(vault_path)
        if warnings:
            out["warnings"] = warnings
        print_json(out)
    else:
        for w in warnings:
            print(f"preflight: warning: {w}", file=sys.stderr)
        write_text(result.text)
    return 0


def write_text(text: str) -> None:
    """Write ``text`` exactly (no newline added, CRLF kept on every platform)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8", "surrogatepass"))
    buffer.flush()
