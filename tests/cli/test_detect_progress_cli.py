"""A long input's detection says how far it is on the terminal (stderr), and nothing when
stderr is not a terminal: `preflight detect` on 150,000 characters of real text with the
real detector."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _long_doc import long_document  # noqa: E402

from preflight.cli import detect_progress  # noqa: E402
from preflight.cli.main import main  # noqa: E402

pytestmark = pytest.mark.slow


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def long_file(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text(long_document(150_000), encoding="utf-8")
    return path


def test_detect_shows_its_progress_on_a_terminal(long_file, monkeypatch, capsys):
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["detect", str(long_file), "--json"]) == 0
    said = tty.getvalue()
    steps = [s for s in said.split("\r") if s.startswith("preflight: looking for personal")]
    assert len(steps) >= 5 and "passages read" in steps[-1]
    assert "%" in steps[0] and steps[0] != steps[-1]
    assert "personal data looked for in" in said
    assert json.loads(capsys.readouterr().out)["entities"]      # stdout: the JSON only


def test_a_pipe_or_a_short_text_gets_no_progress():
    heard = []

    class Detector:
        def detect(self, text, *, progress=None, cancel=None):
            heard.append(progress)
            return []

    pipe = io.StringIO()
    detect_progress.detect(Detector(), "x" * detect_progress.LONG_INPUT_CHARS, pipe)
    detect_progress.detect(Detector(), "short", Terminal())
    assert heard == [None, None] and pipe.getvalue() == ""
