"""Shared by the tests of the rules both faces apply: the window's fake ports plugged into
every ``Services`` of the process (so the CLI, which builds its own services from the
settings file, runs the same fakes). The CLI's JSON read in process: ``cli_out.cli_json``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture
def rig(monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qt"))
    from ports import Rig

    from preflight.app.services import Services

    rig = Rig()
    real_init = Services.__init__
    monkeypatch.setattr(Services, "__init__", lambda self, settings, ports=None:
                        real_init(self, settings, ports or rig.ports()))
    return rig
