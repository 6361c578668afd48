"""A provider that redirects must not carry the payload, or the key, to a host nobody
confirmed. Two loopback servers on different ports: the provider, and the "other host"
it points to; the other host must receive nothing at all."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _sessions import placeholder_plan, session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.errors import ProviderError  # noqa: E402
from preflight.core.send.session import Confirmation  # noqa: E402
from preflight.core.send.transport import origin  # noqa: E402

@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


YES = Confirmation(confirmed=True)
KEY = "sk-test-secret-0123456789abcdef"


@pytest.fixture
def provider_srv():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture
def other():
    with CaptureServer() as srv:
        yield srv


def provider_settings(base: str, style: str) -> ProviderSettings:
    if style == "azure":   # the key travels in an api-key header, not Authorization
        base = base.replace("/v1", "/openai/deployments/gpt") + "?api-version=2024-02-01"
    return ProviderSettings("prov", base, "m-1", key_env="PF_TEST_KEY")


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("style", ["chat", "azure"])
def test_cross_origin_redirect_sends_nothing_there(provider_srv, other, tmp_path, status,
                                                  style):
    target = other.url + "/chat/completions"
    provider_srv.script(Reply(status=status, headers={"Location": target}))
    session = session_for(provider_settings(provider_srv.url, style), tmp_path)
    plan = placeholder_plan(session)

    with pytest.raises(ProviderError) as info:
        session.execute(plan, YES)

    port = other.url.split(":")[2].split("/")[0]
    assert f"redirected to http://127.0.0.1:{port}/v1/chat/completions" in info.value.message
    assert "nothing was sent there" in info.value.message
    assert "base URL" in info.value.hint
    assert other.requests == []                        # no payload, no key, no request
    (sent,) = provider_srv.requests                    # exactly one request left
    key_header = "api-key" if style == "azure" else "Authorization"
    assert KEY in sent.headers[key_header]             # the confirmed provider got it
    (row,) = session.audit.records()
    assert row["status"] == "redirected" and row["delivered"] == 1
    assert f"HTTP {status}" in row["error"]
    hops = json.loads(row["requests"])
    assert hops == [{"url": plan.request.url, "status": status}]


def test_redirect_to_https_of_same_host_is_another_origin(provider_srv, tmp_path):
    target = provider_srv.url.replace("http://", "https://") + "/chat/completions"
    provider_srv.script(Reply(status=308, headers={"Location": target}))
    session = session_for(provider_settings(provider_srv.url, "chat"), tmp_path)
    with pytest.raises(ProviderError, match="nothing was sent there"):
        session.execute(placeholder_plan(session), YES)
    assert len(provider_srv.requests) == 1


def test_same_origin_307_is_followed_and_audited(provider_srv, tmp_path):
    provider_srv.script(Reply(status=307, headers={"Location": "/v2/chat/completions"}),
                        Reply(deltas=["<PERSON_1>", " agrees."]))
    session = session_for(provider_settings(provider_srv.url, "chat"), tmp_path)
    plan = placeholder_plan(session)
    result = session.execute(plan, YES, learn=False)

    assert result.answer == "Alice Martin agrees."
    first, second = provider_srv.requests
    assert first.path == "/v1/chat/completions" and second.path == "/v2/chat/completions"
    assert second.body == plan.payload                  # the same bytes, re-posted
    moved = provider_srv.url.replace("/v1", "/v2") + "/chat/completions"
    expected = [{"url": plan.request.url, "status": 307}, {"url": moved, "status": 200}]
    assert list(result.requests) == expected
    (row,) = session.audit.records()
    assert json.loads(row["requests"]) == expected and row["status"] == "done"


def test_same_origin_302_is_not_followed(provider_srv, tmp_path):
    provider_srv.script(Reply(status=302, headers={"Location": "/elsewhere"}))
    session = session_for(provider_settings(provider_srv.url, "chat"), tmp_path)
    with pytest.raises(ProviderError, match=r"HTTP 302.*not followed"):
        session.execute(placeholder_plan(session), YES)
    assert len(provider_srv.requests) == 1
    (row,) = session.audit.records()
    assert row["status"] == "redirected" and row["delivered"] == 1


def test_redirect_loop_on_same_origin_is_bounded(provider_srv, tmp_path):
    loop = Reply(status=307, headers={"Location": "/v1/chat/completions"})
    provider_srv.script(*[loop] * 10)
    session = session_for(provider_settings(provider_srv.url, "chat"), tmp_path)
    with pytest.raises(ProviderError, match="redirected more than 3 times"):
        session.execute(placeholder_plan(session), YES)
    assert len(provider_srv.requests) == 4
    (row,) = session.audit.records()
    assert len(json.loads(row["requests"])) == 4     # every request that left is listed


def test_retries_are_each_audited_with_their_url(provider_srv, tmp_path):
    from preflight.core.send.providers import RetryPolicy

    provider_srv.script(Reply(status=503), Reply(status=503))
    session = session_for(provider_settings(provider_srv.url, "chat"), tmp_path,
                          retry=RetryPolicy(attempts=3, backoff=0.0))
    plan = placeholder_plan(session)
    result = session.execute(plan, YES, learn=False)
    assert result.attempts == 3 and len(provider_srv.requests) == 3
    assert [h["status"] for h in result.requests] == [503, 503, 200]
    assert {h["url"] for h in result.requests} == {plan.request.url}


@pytest.mark.parametrize("a, b, same", [
    ("https://api.example.com/v1", "https://api.example.com:443/x", True),
    ("https://api.example.com/v1", "http://api.example.com/v1", False),
    ("https://api.example.com/v1", "https://api.example.com:8443/v1", False),
    ("https://api.example.com/v1", "https://API.example.com/other", True),
    ("https://api.example.com/v1", "https://evil.example.com/v1", False),
])
def test_origin_is_scheme_host_and_port(a, b, same):
    assert (origin(a) == origin(b)) is same
