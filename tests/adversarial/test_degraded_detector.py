"""A degraded detector (e.g. the NER model missing: names are not found) blocks the send
until the user accepts it explicitly; ``send --yes`` alone does not go on."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import keyring
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, MemoryKeyring, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.cli import main as cli  # noqa: E402
from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.ports import Detector  # noqa: E402
from preflight.core.send.plan import DEGRADED_DETECTOR_ID  # noqa: E402
from preflight.core.send.session import Confirmation, SendBlocked  # noqa: E402

WARNING = "the NER model is missing: names, organizations and places are not detected"


class DegradedDetector(FakeDetector):
    def __init__(self) -> None:
        super().__init__(names=())          # like a blank spaCy pipeline: no names found
        self.warnings = [WARNING]


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


def test_fakes_match_the_detector_port():
    assert isinstance(DegradedDetector(), Detector) and isinstance(FakeDetector(), Detector)


def test_degraded_detector_is_a_blocking_finding(server, tmp_path):
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path,
                          detector=DegradedDetector())
    plan = placeholder_plan(session)
    finding = plan.degraded_detection
    assert finding is not None and finding in plan.blocking
    assert WARNING in finding.reason
    assert DEGRADED_DETECTOR_ID in plan.to_json()["blocking"]

    with pytest.raises(SendBlocked, match="detector runs degraded"):
        session.execute(plan, Confirmation(confirmed=True))
    assert server.requests == [] and session.audit.records() == []

    result = session.execute(plan, Confirmation(True, accept_degraded_detection=True),
                             learn=False)
    assert len(server.requests) == 1 and result.answer


def test_healthy_detector_adds_no_such_finding(server, tmp_path):
    session = session_for(ProviderSettings("loop", server.url, "m"), tmp_path)
    assert placeholder_plan(session).degraded_detection is None


@pytest.fixture
def cli_setup(server, tmp_path, monkeypatch):
    from preflight.app.services import Services

    monkeypatch.setattr(Services, "make_detector",
                        lambda self, detection=None: DegradedDetector())
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["providers", "add", "loop", "--base-url", server.url,
                         "--model", "m"]) == 0
    doc = tmp_path / "doc.txt"
    doc.write_text("Bob Stone asked for the Q3 budget by Friday.", encoding="utf-8")
    yield doc
    keyring.set_keyring(previous)


def test_cli_yes_alone_does_not_send_with_degraded_detector(server, cli_setup, capsys):
    code = cli.main(["send", str(cli_setup), "--method", "placeholder", "--yes",
                     "--no-learn"])
    err = capsys.readouterr().err
    assert code != 0 and "detector runs degraded" in err
    assert "--accept-degraded-detection" in err and "Traceback" not in err
    assert server.requests == []


def test_cli_sends_with_explicit_acceptance(server, cli_setup, capsys):
    code = cli.main(["send", str(cli_setup), "--method", "placeholder", "--yes",
                     "--accept-degraded-detection", "--no-learn", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["sent"] is True and len(server.requests) == 1
