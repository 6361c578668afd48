"""Two URL parsers, two hosts: an address the same-origin check reads as the provider's
while the HTTP client connects elsewhere must never carry the payload or the key.

Two loopback servers stand for the provider and "the other host" (another port: a
different origin). Every redirect target below is one whose readings differ between
``urllib.parse`` and ``requests``/urllib3; the other host must receive nothing at all, and
the audit must list only the request that really left."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.cli import main as cli  # noqa: E402
from preflight.core.config import ProviderSettings, load_settings  # noqa: E402
from preflight.core.errors import ConfigError, ProviderError  # noqa: E402
from preflight.core.send.destination import UnclearURL, destination  # noqa: E402
from preflight.core.send.probe import validate_base_url  # noqa: E402
from preflight.core.send.session import Confirmation  # noqa: E402

KEY = "sk-test-secret-0123456789abcdef"
YES = Confirmation(confirmed=True)


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture
def provider_srv():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture
def other():
    with CaptureServer() as srv:
        yield srv


def port_of(srv: CaptureServer) -> str:
    return srv.url.split(":")[2].split("/")[0]


def settings_for(base: str, style: str = "chat") -> ProviderSettings:
    if style == "azure":   # the key travels in an api-key header, not Authorization
        base = base.replace("/v1", "/openai/deployments/gpt") + "?api-version=2024-02-01"
    return ProviderSettings("prov", base, "m-1", key_env="PF_TEST_KEY")


# {P}: the provider's port, {O}: the other host's port. Each Location reads as the
# provider's own origin to urllib.parse, or is read differently by the HTTP client.
LOCATIONS = {
    "backslash before userinfo @": "http://127.0.0.1:{O}\\@127.0.0.1:{P}/v1/chat/completions",
    "two backslashes before @": "http://127.0.0.1:{O}\\\\@127.0.0.1:{P}/v1/chat/completions",
    "slash-backslash before @": "http://127.0.0.1:{O}/\\@127.0.0.1:{P}/v1/chat/completions",
    "tab inside the authority": "http://127.0.0.1:{O}\t@127.0.0.1:{P}/v1/chat/completions",
    "userinfo with @ twice": "http://a@b@127.0.0.1:{P}/v1/chat/completions",
    "user and password": "http://user:pw@127.0.0.1:{P}/v1/chat/completions",
    "port with a leading zero": "http://127.0.0.1:0{P}/v1/chat/completions",
    "encoded dot segments": "/v2/%2e%2e/v1/chat/completions",
}


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("form", list(LOCATIONS))
def test_redirect_that_parsers_read_differently_is_not_followed(provider_srv, other,
                                                                 tmp_path, form, status):
    location = LOCATIONS[form].format(P=port_of(provider_srv), O=port_of(other))
    provider_srv.script(Reply(status=status, headers={"Location": location}))
    session = session_for(settings_for(provider_srv.url), tmp_path)
    plan = placeholder_plan(session)

    with pytest.raises(ProviderError) as info:
        session.execute(plan, YES)

    assert "nothing was sent there" in info.value.message
    assert "\t" not in info.value.message                  # shown escaped, one line
    assert other.requests == []                            # no payload, no key, no request
    assert len(provider_srv.requests) == 1                 # the provider's own, once
    (row,) = session.audit.records()
    assert row["status"] == "redirected" and row["delivered"] == 1
    assert json.loads(row["requests"]) == [{"url": plan.request.url, "status": status}]


@pytest.mark.parametrize("style", ["chat", "azure"])
def test_backslash_redirect_carries_no_key_header_anywhere(provider_srv, other, tmp_path,
                                                           style):
    location = f"http://127.0.0.1:{port_of(other)}\\@127.0.0.1:{port_of(provider_srv)}/x"
    provider_srv.script(Reply(status=307, headers={"Location": location}))
    session = session_for(settings_for(provider_srv.url, style), tmp_path)
    with pytest.raises(ProviderError):
        session.execute(placeholder_plan(session), YES)
    assert other.requests == []
    (sent,) = provider_srv.requests
    assert KEY in sent.headers["api-key" if style == "azure" else "Authorization"]


def test_the_audit_has_the_url_exactly_as_it_was_sent(provider_srv, tmp_path):
    provider_srv.script(Reply(status=307, headers={"Location": "/v2/chat|completions"}),
                        Reply(deltas=["Fine."]))
    session = session_for(settings_for(provider_srv.url), tmp_path)
    result = session.execute(placeholder_plan(session), YES, learn=False)
    _, second = provider_srv.requests
    hop = result.requests[1]["url"]
    # The HTTP client percent-encodes "|": the audit shows what reached the server.
    assert second.path == "/v2/chat%7Ccompletions"
    assert hop == provider_srv.url[:-3] + second.path


# -- base URLs: refused before anything is stored or sent ----------------------------------

BAD_BASES = {
    "credentials": ("http://user:secret@127.0.0.1:{P}/v1", "user name or password"),
    "backslash before @": ("http://127.0.0.1:{O}\\@127.0.0.1:{P}/v1", "backslash"),
    "tab in host": ("http://127.0.0.1:{P}\t/v1", "control character"),
    "fullwidth host": ("http://ｌｏｃａｌｈｏｓｔ:{P}/v1", "ASCII"),
    "port with a plus": ("http://127.0.0.1:+{P}/v1", "port"),
    "decimal IPv4": ("http://2130706433:{P}/v1", "number written in an unusual form"),
    "octal IPv4": ("http://0177.0.0.1:{P}/v1", "number written in an unusual form"),
    "trailing dot": ("http://localhost.:{P}/v1", "ends in a dot"),
    "IPv6 zone": ("http://[::1%25lo]:{P}/v1", "percent"),
}


@pytest.mark.parametrize("form", list(BAD_BASES))
def test_unclear_base_url_is_refused_at_send_time(provider_srv, other, tmp_path, form):
    template, says = BAD_BASES[form]
    base = template.format(P=port_of(provider_srv), O=port_of(other))
    session = session_for(ProviderSettings("prov", base, "m-1", key_env="PF_TEST_KEY"),
                          tmp_path)
    with pytest.raises(ConfigError) as info:
        session.execute(placeholder_plan(session), YES)
    assert says in info.value.message and "\n" not in info.value.message
    assert provider_srv.requests == [] and other.requests == []
    assert session.audit.records() == []
    with pytest.raises(ConfigError, match=says):      # the window's Save and Test refuse it
        validate_base_url(ProviderSettings("prov", base, "m-1"))


def test_cli_add_refuses_a_base_url_with_credentials(capsys):
    code = cli.main(["providers", "add", "p", "--base-url",
                     "https://alice:hunter2@api.example.com/v1", "--model", "m"])
    err = capsys.readouterr().err
    assert code != 0 and "user name or password" in err and "Traceback" not in err
    assert "hunter2" not in err.replace("alice:hunter2", "")  # said once at most, never kept
    assert load_settings().providers == []


def test_cli_add_refuses_a_backslash_host(capsys):
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["providers", "add", "p", "--base-url",
                         "https://api.example.com\\@evil.example/v1", "--model", "m"])
    assert code != 0 and "backslash" in capsys.readouterr().err
    assert load_settings().providers == []


# -- the one reading itself -------------------------------------------------------------------

@pytest.mark.parametrize("url, host, port", [
    ("https://api.openai.com/v1", "api.openai.com", 443),
    ("HTTPS://API.Example.COM:8443/v1", "api.example.com", 8443),
    ("http://[::1]:8000/v1", "::1", 8000),
    ("http://[0:0::1]/v1", "::1", 80),
    ("https://res.openai.azure.com/openai/deployments/d?api-version=2024-02-01",
     "res.openai.azure.com", 443),
    ("http://127.0.0.1:8080/v1#@evil.example", "127.0.0.1", 8080),
    ("http://127.0.0.1:8080/v1?next=@evil.example", "127.0.0.1", 8080),
])
def test_plain_addresses_have_one_reading(url, host, port):
    d = destination(url)
    assert (d.host, d.port) == (host, port)


@pytest.mark.parametrize("url", [
    "http://evil.example\\@api.openai.com/v1", "https://api.openai.com\\.evil.example/v1",
    "https://api.openai.com:443@evil.example/v1", "https://api.openai.com%2eevil.example/",
    "https://bücher.example/v1", "https://api.openai.com\u200b.evil.example/",
    "https://api.openai\u202e.com/", "https://0x7f000001/", "https://127.1/",
    "https://api.openai.com:00443/", "https://api.openai.com:65536/", "https://api.openai.com:/",
    "ftp://api.openai.com/", "https:///v1", "https://api.openai.com\n.evil.example/",
])
def test_every_other_form_is_refused(url):
    with pytest.raises(UnclearURL):
        destination(url)


def test_hub_token_goes_over_https_to_the_hub_only(monkeypatch, tmp_path):
    from preflight.runtime.hub import download_file

    with CaptureServer() as hub:
        hub.default = Reply(body=b"weights")
        monkeypatch.setenv("PREFLIGHT_HF_ENDPOINT", hub.url[:-3])   # a plain-http mirror
        monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 30)
        download_file(hub.url[:-3] + "/o/r/resolve/main/f.bin", tmp_path / "f.bin")
    (got,) = hub.requests
    assert "Authorization" not in got.headers       # never in clear, whatever the mirror
