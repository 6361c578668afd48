"""The CLI's JSON output, read in process (the faces' agreement tests)."""

from __future__ import annotations

import contextlib
import io
import json


def cli_json(*argv: str) -> dict:
    from preflight.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(list(argv)) == 0
    return json.loads(out.getvalue())
