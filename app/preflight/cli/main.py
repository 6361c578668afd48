"""`preflight` command line: a thin face over the core.

Each sub-command lives in ``preflight.cli.commands.<name>`` and exposes
``register(subparsers)``; a handler takes the parsed args and returns an exit code.
Errors the user can act on (:class:`PreflightError`) print as one line on stderr with
a non-zero exit code — never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import logging
import sys
from typing import Any

from preflight import __version__
from preflight.app.presentation import error_text
from preflight.core.errors import PreflightError

COMMAND_MODULES = (
    "detect", "sanitize", "restore", "info", "models", "gui", "assess", "recommend",
    "forget_keys",
    "send", "providers", "history",
    "sweep", "privacy", "audit",
)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="preflight",
        description="Sanitize a document before a cloud LLM sees it.",
    )
    parser.add_argument("--version", action="version", version=f"preflight {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"preflight.cli.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # In a frozen bundle the window's detector child process re-enters this entry point;
    # freeze_support() makes that child run its task instead of the CLI (no-op otherwise).
    import multiprocessing

    multiprocessing.freeze_support()
    _fill_closed_standard_fds()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args) or 0)
    except PreflightError as err:
        print(f"preflight: error: {' '.join(error_text(err, 'cli')).strip()}",
              file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("preflight: stopped.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            return _internal_error(exc)
        # The machine, not Preflight: a read-only or full disk, a folder without access.
        where = f" {exc.filename}" if exc.filename else ""
        print(f"preflight: error: cannot use{where} ({exc.strerror}). Check the "
              "permissions and free space of that folder, or set PREFLIGHT_HOME to a "
              "writable folder.", file=sys.stderr)
        return EXIT_IO_ERROR
    except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
        return _internal_error(exc)


def _fill_closed_standard_fds() -> None:
    """Open the null device on any of descriptors 0–2 that the caller closed (``0<&-``).

    Otherwise the next file Preflight opens (a vault, the audit database) would get that
    number, and whatever reads stdin or writes stdout/stderr at the C level (a library's
    log line) would use the file instead. ``sys.stdin`` stays ``None``: a command that
    needs stdin still says that it is closed.
    """
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:             # a lower one was free after all: nothing to fill
                os.close(null)


# sysexits.h: EX_IOERR for the environment's I/O failures; EX_SOFTWARE (70) only for bugs.
EXIT_IO_ERROR = 74
_ENVIRONMENT_ERRNOS = frozenset(
    getattr(errno, name) for name in ("EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "EIO")
    if hasattr(errno, name)
)


def _internal_error(exc: BaseException) -> int:
    try:
        where = f"details were written to {_write_crash_log()}"
    except (OSError, PreflightError):
        where = "no crash log could be written (the cache folder is not writable)"
    print(f"preflight: internal error ({type(exc).__name__}). This is a bug in Preflight; "
          f"{where}.", file=sys.stderr)
    return 70


def _write_crash_log() -> str:
    """Traceback to a file in the cache dir (frames and exception types, no locals)."""
    import traceback

    from preflight.core import paths
    from preflight.core.fsutil import open_regular
    from preflight.core.send.logfilter import redact

    path = paths.cache_dir() / "crash.log"
    with open_regular(path, "a", encoding="utf-8") as fh:   # never through a link or FIFO
        fh.write(redact(traceback.format_exc()))  # no API key in a crash report
    return str(path)
