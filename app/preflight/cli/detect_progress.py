"""Detection of a long input with its progress on the terminal (stderr).

A text of :data:`LONG_INPUT_CHARS` or more takes tens of seconds to read for personal
data; when stderr is a terminal, one line there says how far it is ("preflight: looking
for personal data… 40 % (880 of 2,187 passages read)"), rewritten in place, and ends with
the time it took. Piped output stays clean; Ctrl+C stops, as everywhere in the CLI.
"""

from __future__ import annotations

import inspect
import sys
import time
from typing import Any, TextIO

from preflight.core.types import Span

LONG_INPUT_CHARS = 100_000


def detect(detector: Any, text: str, stream: TextIO | None = None) -> list[Span]:
    """``detector.detect(text)``, with its progress on ``stream`` (stderr) for a long
    text when that is a terminal and the detector reports progress."""
    out = stream if stream is not None else sys.stderr
    if (len(text) < LONG_INPUT_CHARS or not _is_terminal(out)
            or "progress" not in inspect.signature(detector.detect).parameters):
        return detector.detect(text)
    said = {"tenth": -1}
    start = time.monotonic()

    def progress(share: float, words: str) -> None:
        tenth = int(share * 10)
        if tenth != said["tenth"]:
            said["tenth"] = tenth
            rest = words.split(": ", 1)[-1]
            out.write(f"\rpreflight: looking for personal data… {share:.0%} ({rest})")
            out.flush()

    try:
        spans = detector.detect(text, progress=progress)
    finally:
        out.write("\r\x1b[K")       # the line goes; what follows is printed clean
        out.flush()
    out.write(f"preflight: personal data looked for in {time.monotonic() - start:.0f} s "
              f"({len(text):,} characters).\n")
    out.flush()
    return spans


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
