"""`preflight gui [FILE]`: open the window.

The CLI and the window are independent faces (an import-linter contract); the window is
loaded by name at run time, so the CLI never imports Qt unless this command runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from preflight.core.errors import PreflightError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gui", help="open the Preflight window")
    p.add_argument("file", nargs="?",
                   help="a document to open (.txt, .md, .eml, .docx, .pdf, .csv)")
    p.add_argument("--theme", choices=("system", "light", "dark"),
                   help="override the appearance setting for this run")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")
                                                 or os.environ.get("QT_QPA_PLATFORM")):
        raise PreflightError(
            "No display to open the window on (DISPLAY and WAYLAND_DISPLAY are not set).",
            "Run it in a desktop session, or under Xvfb: xvfb-run -a preflight gui. "
            "The command line (preflight --help) works without a display.",
        )
    try:
        app = importlib.import_module("preflight.qt.qt_app")
    except ImportError as exc:
        raise PreflightError(
            f"The window cannot start: {exc}.",
            "Install the Qt runtime libraries (./setup.sh installs them: libxcb-cursor0, "
            "libxkbcommon-x11-0, libegl1, libgl1 …) and PySide6.",
        ) from None
    return int(app.run(args.file, theme=args.theme))
