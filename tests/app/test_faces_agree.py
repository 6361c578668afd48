"""The CLI and the window produce the same detections and sanitized text for the same
document and settings, because both obtain everything from ``build_services``.

Runs the real detector (spaCy + Presidio) — in-process for the CLI, in the window's child
process for the doorway — on a .docx, with a deny-list and an allow-list entry to show the
user's detection settings are applied by both faces.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

from preflight.app.documents import read_for_window
from preflight.app.window_doorway import WindowDoorway
from preflight.cli import main as cli
from preflight.core.config import DetectionSettings, Settings, save_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docfiles import make_docx  # noqa: E402

pytestmark = pytest.mark.slow

PARAGRAPHS = [
    "Jane Doe met Max Power in Berlin to plan Project Bluebird.",
    "Write to jane.doe@example.com or call +1 415 555 0100 before Friday.",
]
SETTINGS = Settings(detection=DetectionSettings(deny_list=["Bluebird"],
                                                allow_list=["Berlin"]))


def cli_json(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(list(argv)) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    doc = make_docx(tmp_path_factory.mktemp("doc") / "report.docx", PARAGRAPHS)
    return doc


def test_cli_and_window_agree(faces: Path) -> None:
    save_settings(SETTINGS)                       # the (isolated) user's settings file
    doc = faces
    text = read_for_window(doc)
    cli_spans = cli_json("detect", str(doc), "--json")["entities"]

    door = WindowDoorway()
    try:
        spans = door.detect(text)
        assert [s.to_json() for s in spans] == cli_spans
        values = {text[s.start:s.end] for s in spans}
        assert "Bluebird" in values                            # deny-list applied
        assert not any("Berlin" in v for v in values)          # allow-list applied
        assert {"Jane Doe", "jane.doe@example.com"} <= values

        for method in ("placeholder", "redact", "mask"):
            cli_out = cli_json("sanitize", str(doc), "-m", method, "--json")
            win_out, _vault = door.sanitize(method, text, spans, seed=7)
            assert win_out.text == cli_out["text"], method
            assert "jane.doe@example.com" not in win_out.text
    finally:
        door.shutdown()


def test_without_the_settings_the_faces_would_differ(faces: Path) -> None:
    """Guards the test above: the lists do change what is detected."""
    save_settings(Settings())
    text = read_for_window(faces)
    values = {text[e["start"]:e["end"]]
              for e in cli_json("detect", str(faces), "--json")["entities"]}
    assert "Bluebird" not in values and any("Berlin" in v for v in values)
