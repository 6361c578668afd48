"""Plain http:// to another machine is refused unless the provider allows it explicitly,
and the plan then says so in words; loopback http is fine without any flag."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, fake_mechanisms  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.cli import main as cli  # noqa: E402
from preflight.core.config import ProviderSettings, load_settings  # noqa: E402
from preflight.core.errors import ConfigError  # noqa: E402
from preflight.core.send.providers import create_client  # noqa: E402
from preflight.core.send.transport import is_loopback_host  # noqa: E402


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


REMOTE_HTTP = "http://10.20.30.40:8080/v1"   # never contacted: refused before any I/O


def test_plain_http_to_another_machine_is_refused(tmp_path):
    session = session_for(ProviderSettings("lan", REMOTE_HTTP, "m"), tmp_path)
    with pytest.raises(ConfigError) as info:
        placeholder_plan(session)
    assert "plain http://" in info.value.message and "10.20.30.40" in info.value.message
    assert "--allow-insecure-http" in info.value.hint
    assert session.audit.records() == []
    # The client refuses too, whoever builds the request.
    with pytest.raises(ConfigError, match="plain http://"):
        create_client(ProviderSettings("lan", REMOTE_HTTP, "m")).url()


def test_allowed_cleartext_is_stated_in_the_plan(tmp_path):
    provider = ProviderSettings("lan", REMOTE_HTTP, "m", allow_insecure_http=True)
    plan = placeholder_plan(session_for(provider, tmp_path))
    (notice,) = plan.notices
    assert "Plain HTTP to 10.20.30.40" in notice and "unencrypted" in notice
    assert plan.to_json()["notices"] == [notice]


@pytest.mark.parametrize("base", [
    "http://127.0.0.1:8080/v1", "http://127.8.9.10/v1", "http://localhost:11434/v1",
    "http://[::1]:8000/v1", "https://api.example.com/v1",
])
def test_loopback_http_and_https_need_no_flag_and_no_notice(base, tmp_path):
    plan = placeholder_plan(session_for(ProviderSettings("p", base, "m"), tmp_path))
    assert plan.notices == ()


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.255.0.1", True), ("::1", True), ("localhost", True),
    ("LOCALHOST", True), ("127.evil.example", False), ("10.0.0.1", False),
    ("localhost.evil.example", False), ("0.0.0.0", False), ("", False),
])
def test_loopback_hosts(host, loopback):
    assert is_loopback_host(host) is loopback


def test_cli_add_refuses_remote_http_without_the_flag(capsys):
    code = cli.main(["providers", "add", "lan", "--base-url", REMOTE_HTTP, "--model", "m"])
    err = capsys.readouterr().err
    assert code != 0 and "plain http://" in err and "Traceback" not in err
    assert load_settings().providers == []
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["providers", "add", "lan", "--base-url", REMOTE_HTTP, "--model", "m",
                         "--allow-insecure-http"]) == 0
    (saved,) = load_settings().providers
    assert saved.allow_insecure_http is True
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["providers", "list", "--json"])
    assert json.loads(out.getvalue())["providers"][0]["allow_insecure_http"] is True


def test_cli_plan_warns_about_allowed_cleartext(tmp_path, monkeypatch, capsys):
    from preflight.cli.commands import send as send_cmd
    from preflight.core.send import session as session_mod

    monkeypatch.setattr(session_mod, "_build_detector", lambda cls, settings: FakeDetector())

    class NoTerminal:
        available = False

        def __init__(self, stdin_is_document: bool) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(send_cmd, "_Terminal", NoTerminal)
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["providers", "add", "lan", "--base-url", REMOTE_HTTP, "--model", "m",
                         "--allow-insecure-http"]) == 0
    doc = tmp_path / "d.txt"
    doc.write_text("Bob Stone reviews the budget.", encoding="utf-8")
    code = cli.main(["send", str(doc), "--method", "placeholder"])
    out = capsys.readouterr().out
    assert code != 0   # no terminal, no --yes: refused, nothing sent
    assert "[WARNING] Plain HTTP to 10.20.30.40" in out
