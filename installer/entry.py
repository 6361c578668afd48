"""Entry point of the frozen bundle: the `preflight` command line.

PyInstaller needs a script, not a console_scripts entry; this one does what the
``preflight = preflight.cli.main:main`` entry point does in a source install. On Windows
and macOS the bundle also holds a windowed twin, ``preflight-gui``, which the Start menu
and Finder launch with no arguments: it always means ``preflight gui``.
"""

import multiprocessing
import sys
from pathlib import Path


def _argv_for_windowed_launcher(argv: list[str]) -> list[str]:
    # Finder adds a -psn_* process serial number on old macOS versions; drop it.
    rest = [a for a in argv if not a.startswith("-psn_")]
    return ["gui", *rest]


if __name__ == "__main__":
    # Frozen executables re-run themselves for multiprocessing children (torch,
    # sentence-transformers and joblib may spawn); without this each child would start
    # the CLI again.
    multiprocessing.freeze_support()
    args = sys.argv[1:]

    if args[:1] == ["--bundle-check"]:
        # Packagers' diagnostic (docs/INSTALLER.md): loads every bundled native library
        # and model through the real code paths and prints a report.
        import bundle_check

        sys.exit(bundle_check.main(args[1:]))

    if Path(sys.executable).stem.lower().endswith("-gui"):
        args = _argv_for_windowed_launcher(args)

    from preflight.cli.main import main

    sys.exit(main(args))
