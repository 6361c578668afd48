""""Test connection" against a real loopback HTTP server: what it asks, what it reports."""

from __future__ import annotations

import json
import socket

import pytest
from _loopback import Reply

from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError, ProviderError
from preflight.core.send.presets import PRESETS, preset
from preflight.core.send.probe import check_connection, models_url, validate_base_url


def _models(*names: str) -> Reply:
    body = json.dumps({"object": "list", "data": [{"id": n} for n in names]}).encode()
    return Reply(200, {"Content-Type": "application/json"}, body)


def _prov(url: str, model: str = "m-small") -> ProviderSettings:
    return ProviderSettings(name="work", base_url=url, model=model)


def test_connected_lists_models_with_the_key_and_no_document(server):
    server.script(_models("m-small", "m-large"))
    report = check_connection(_prov(server.url), "sk-test-123")
    assert report.models == ("m-small", "m-large")
    assert report.message == "Connected — 2 models; m-small is among them."
    (req,) = server.requests
    assert (req.method, req.path) == ("GET", "/v1/models")
    assert req.body == b""                                   # never any document text
    assert req.headers["Authorization"] == "Bearer sk-test-123"


def test_a_model_the_server_does_not_list_is_named(server):
    server.script(_models("other"))
    report = check_connection(_prov(server.url, "gpt-typo"), None)
    assert report.message == ("Connected — 1 model; gpt-typo is not among them "
                              "(check the model name).")


def test_bad_key_is_a_401_message(server):
    server.script(Reply(401, {"Content-Type": "application/json"},
                        b'{"error": {"message": "Incorrect API key provided"}}'))
    with pytest.raises(ProviderError) as err:
        check_connection(_prov(server.url), "wrong")
    assert "rejected the API key (HTTP 401)" in err.value.message
    assert "Incorrect API key" in err.value.message


def test_wrong_url_is_a_404_message(server):
    server.script(Reply(404, {}, b"not here"))
    with pytest.raises(ProviderError) as err:
        check_connection(_prov(server.url.replace("/v1", "/api")), None)
    assert "No OpenAI-compatible API at" in err.value.message and "404" in err.value.message
    assert "/v1" in err.value.hint
    assert server.requests[0].path == "/api/models"


def test_redirect_is_reported_not_followed(server):
    server.script(Reply(302, {"Location": "https://elsewhere.example/v1/models"}))
    with pytest.raises(ProviderError, match="redirected to https://elsewhere.example"):
        check_connection(_prov(server.url), "k")
    assert len(server.requests) == 1


def test_refused_connection():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed again: nothing listens there
    with pytest.raises(ProviderError, match=r"could not reach 127\.0\.0\.1: nothing answered"):
        check_connection(_prov(f"http://127.0.0.1:{port}/v1"), None)


def test_tls_error_against_a_plain_http_server(server):
    with pytest.raises(ProviderError, match="secure connection to 127.0.0.1 failed"):
        check_connection(_prov(server.url.replace("http://", "https://")), None)


def test_dns_failure():
    with pytest.raises(ProviderError, match=r"could not find the provider's server no-such-host\.invalid"):
        check_connection(_prov("https://no-such-host.invalid/v1"), None)


@pytest.mark.parametrize("url, says", [
    ("http://10.1.2.3/v1", "plain http://"),
    ("ftp://api.example.com/v1", "invalid base URL"),
    ("https:///v1", "invalid base URL"),
    ("https://YOUR-RESOURCE.openai.azure.com/openai/v1", "still contains YOUR-RESOURCE"),
])
def test_address_refused_before_any_connection(url, says):
    with pytest.raises(ConfigError, match=says):
        validate_base_url(_prov(url))
    with pytest.raises(ConfigError, match=says):
        check_connection(_prov(url), "k")


def test_models_url_per_style_and_azure_deployment():
    assert models_url(_prov("http://127.0.0.1:8080")) == "http://127.0.0.1:8080/v1/models"
    comp = ProviderSettings("c", "https://api.example.com/v1/", "m", api_style="completions")
    assert models_url(comp) == "https://api.example.com/v1/models"
    azure = _prov("https://acme.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01")
    assert models_url(azure) == ("https://acme.openai.azure.com/openai/models"
                                 "?api-version=2024-06-01")


def test_azure_key_goes_in_the_api_key_header(server, monkeypatch):
    # an Azure host, resolved to the loopback server (the header choice is by host name)
    import requests

    real = requests.Session.request
    port = server.url.split(":")[2].split("/")[0]

    def to_loopback(self, method, url, **kw):
        return real(self, method, url.replace("https://acme.openai.azure.com",
                                              f"http://127.0.0.1:{port}"), **kw)

    monkeypatch.setattr(requests.Session, "request", to_loopback)
    server.script(_models("gpt-4o-mini"))
    check_connection(_prov("https://acme.openai.azure.com/v1", "gpt-4o-mini"), "az-key")
    headers = server.requests[0].headers
    assert headers["api-key"] == "az-key" and "Authorization" not in headers


def test_presets_are_valid_providers():
    keys = {p.key for p in PRESETS}
    assert {"openai", "azure", "mistral", "gemini", "llama-cpp", "vllm", "ollama"} <= keys
    for p in PRESETS:
        s = p.settings()
        assert s.base_url and s.model and s.api_style == "chat"
        if not p.placeholder:
            validate_base_url(s)
            assert models_url(s).endswith("/models")
    assert models_url(preset("gemini").settings()) == (
        "https://generativelanguage.googleapis.com/v1beta/openai/models")
