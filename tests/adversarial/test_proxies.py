"""Proxies: nothing in the environment sends a document or a key through another machine.

Company laptops often carry ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``. A tiny loopback
"proxy" (a socket server that records what reaches it and answers 502) stands for that
machine: with the variables set and ``NO_PROXY`` unset, it must receive nothing from a
send, the connection test or the company assessor. A proxy the provider names is used,
shown in the plan and recorded in the audit — for https to another machine only."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.errors import ConfigError, PreflightError  # noqa: E402
from preflight.core.send.session import Confirmation  # noqa: E402

KEY = "sk-test-secret-0123456789abcdef"
YES = Confirmation(confirmed=True)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
              "all_proxy")


class RecordingProxy:
    """Accepts connections on 127.0.0.1, keeps the first 64 KiB of each, answers 502."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and len(data) < 65536:
                        piece = conn.recv(4096)
                        if not piece:
                            break
                        data += piece
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
                except OSError:
                    pass
                self.received.append(data)

    def __enter__(self) -> "RecordingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture
def proxy():
    with RecordingProxy() as p:
        yield p


@pytest.fixture
def env_proxy(proxy, monkeypatch):
    """Every proxy variable points at the recording proxy; nothing is exempted."""
    for var in PROXY_VARS:
        monkeypatch.setenv(var, proxy.url)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    return proxy


@pytest.fixture
def provider_srv():
    with CaptureServer() as srv:
        yield srv


def test_environment_proxy_gets_nothing_from_a_send(env_proxy, provider_srv, tmp_path):
    session = session_for(ProviderSettings("prov", provider_srv.url, "m-1",
                                           key_env="PF_TEST_KEY"), tmp_path)
    plan = placeholder_plan(session)
    result = session.execute(plan, YES, learn=False)
    assert result.answer == "Hello world."
    assert env_proxy.received == []                     # neither the key nor the body
    (sent,) = provider_srv.requests
    assert KEY in sent.headers["Authorization"] and sent.body == plan.payload
    assert plan.notices == ()                           # no proxy to mention: none is used
    (row,) = session.audit.records()
    assert json.loads(row["requests"]) == [{"url": plan.request.url, "status": 200}]


def test_environment_proxy_gets_nothing_from_the_connection_test(env_proxy, provider_srv):
    from preflight.core.send.probe import check_connection

    provider_srv.default = Reply(body=b'{"data": [{"id": "m-1"}]}')
    report = check_connection(ProviderSettings("prov", provider_srv.url, "m-1"), KEY)
    assert report.models == ("m-1",)
    assert env_proxy.received == [] and len(provider_srv.requests) == 1


def test_environment_proxy_gets_nothing_from_the_company_assessor(env_proxy, provider_srv):
    from preflight.core.tasks import SUMMARIZE
    from preflight.runtime.remote_slm import RemoteSLM

    answer = RemoteSLM(provider_srv.url[:-3]).run(SUMMARIZE, "The original document.")
    assert answer == "Hello world."
    assert env_proxy.received == [] and len(provider_srv.requests) == 1


def test_netrc_credentials_never_replace_the_key(provider_srv, tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login corp password netrc-secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    session = session_for(ProviderSettings("prov", provider_srv.url, "m-1",
                                           key_env="PF_TEST_KEY"), tmp_path)
    session.execute(placeholder_plan(session), YES, learn=False)
    (sent,) = provider_srv.requests
    assert sent.headers["Authorization"] == f"Bearer {KEY}"


# -- a proxy the provider names ---------------------------------------------------------------

def test_named_proxy_is_used_shown_and_audited(proxy, tmp_path):
    settings = ProviderSettings("cloud", "https://api.example.test/v1", "m-1",
                                key_env="PF_TEST_KEY", proxy=proxy.url)
    session = session_for(settings, tmp_path)
    plan = placeholder_plan(session)
    (notice,) = plan.notices
    assert f"proxy {proxy.url}" in notice and "api.example.test" in notice
    with pytest.raises(PreflightError):
        session.execute(plan, YES)                      # the recording proxy answers 502
    (head,) = proxy.received
    # HTTPS through a proxy is a tunnel: the proxy learns the host, not the key or body.
    assert head.startswith(b"CONNECT api.example.test:443 ")
    assert KEY.encode() not in head and b"Alice" not in head
    (row,) = session.audit.records()
    (hop,) = json.loads(row["requests"])
    assert hop["proxy"] == proxy.url and hop["url"] == plan.request.url


def test_named_proxy_is_not_used_for_a_server_on_this_computer(proxy, provider_srv,
                                                               tmp_path):
    settings = ProviderSettings("local", provider_srv.url, "m-1", key_env="PF_TEST_KEY",
                                proxy=proxy.url)
    session = session_for(settings, tmp_path)
    plan = placeholder_plan(session)
    assert plan.notices == ()
    session.execute(plan, YES, learn=False)
    assert proxy.received == [] and len(provider_srv.requests) == 1


def test_named_proxy_with_plain_http_to_another_machine_is_refused(proxy, tmp_path):
    settings = ProviderSettings("lan", "http://10.20.30.40:8080/v1", "m-1",
                                allow_insecure_http=True, proxy=proxy.url)
    session = session_for(settings, tmp_path)
    with pytest.raises(ConfigError, match="proxy would read the document and the API key"):
        placeholder_plan(session)
    assert proxy.received == [] and session.audit.records() == []


@pytest.mark.parametrize("bad", ["http://user:pw@127.0.0.1:3128", "http://proxy\\@evil:1",
                                 "socks5://127.0.0.1:1080"])
def test_unclear_proxy_is_refused_before_anything_leaves(bad, tmp_path):
    settings = ProviderSettings("cloud", "https://api.example.test/v1", "m-1",
                                key_env="PF_TEST_KEY", proxy=bad)
    with pytest.raises(ConfigError, match="proxy"):
        placeholder_plan(session_for(settings, tmp_path))


def test_cli_add_keeps_the_proxy(capsys):
    from preflight.cli import main as cli
    from preflight.core.config import load_settings

    assert cli.main(["providers", "add", "cloud", "--base-url", "https://api.example.test/v1",
                     "--model", "m", "--proxy", "http://proxy.corp.example:3128"]) == 0
    (saved,) = load_settings().providers
    assert saved.proxy == "http://proxy.corp.example:3128"
    assert cli.main(["providers", "add", "bad", "--base-url", "https://api.example.test/v1",
                     "--model", "m", "--proxy", "http://u:p@proxy.corp.example:3128"]) != 0
    assert "proxy" in capsys.readouterr().err


def test_only_the_company_ca_bundle_is_read_from_the_environment(tmp_path, monkeypatch):
    import requests

    from preflight.core.send.route import harden

    bundle = tmp_path / "company-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    http = harden(requests.Session())
    assert http.verify == str(bundle) and http.trust_env is False and http.proxies == {}
