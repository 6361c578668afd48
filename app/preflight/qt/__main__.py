"""`python -m preflight.qt [FILE]` opens the window."""

import sys

from preflight.qt.qt_app import run

raise SystemExit(run(sys.argv[1] if len(sys.argv) > 1 else None))
