"""`preflight gui`: clear message without a display; the real start-up path runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from preflight.cli.main import main


def test_gui_without_display_explains(monkeypatch, capsys):
    if not sys.platform.startswith("linux"):
        pytest.skip("display variables are a Linux/X11 matter")
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    assert main(["gui"]) == 2
    err = capsys.readouterr().err
    assert "No display" in err and "xvfb-run" in err and "Traceback" not in err


@pytest.mark.slow
def test_gui_starts_and_closes_itself(tmp_path):
    """The real `preflight gui` path (window, background loading) exits cleanly."""
    doc = tmp_path / "d.txt"
    doc.write_text("Jane Doe wrote to jane@example.com.", encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PREFLIGHT_GUI_SMOKE="4",
               PREFLIGHT_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-m", "preflight", "gui", str(doc)], env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
