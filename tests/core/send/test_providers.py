"""Provider clients against a capture server on loopback: streaming, retries and the
error for every failure a user can meet."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from _loopback import Reply, sse_event
from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled, ConfigError, ProviderError
from preflight.core.send.providers import (
    RetryPolicy, StreamBroken, Timeouts, create_client, provider_kinds,
)
from preflight.core.tasks import SUMMARIZE, Task


def client_for(url: str, style: str = "chat", retry: RetryPolicy | None = None,
               timeouts: Timeouts | None = None, sleeps: list | None = None):
    settings = ProviderSettings("test", url, "m-1", api_style=style)
    waits = sleeps if sleeps is not None else []
    return create_client(settings, retry=retry or RetryPolicy(attempts=3, backoff=0.01),
                         timeouts=timeouts or Timeouts(connect=2, read=5),
                         sleep=waits.append)


def test_registry_has_both_styles_and_rejects_unknown():
    assert {"chat", "completions"} <= set(provider_kinds())
    with pytest.raises(ConfigError, match="unknown API style"):
        create_client(ProviderSettings("x", "http://127.0.0.1:1/v1", "m", api_style="grpc"))


@pytest.mark.parametrize("base, expected", [
    ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
    ("https://api.mistral.ai/v1/", "https://api.mistral.ai/v1/chat/completions"),
    ("https://generativelanguage.googleapis.com/v1beta/openai",
     "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
    ("https://res.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01",
     "https://res.openai.azure.com/openai/deployments/gpt4o/chat/completions"
     "?api-version=2024-06-01"),
])
def test_url_building(base, expected):
    assert client_for(base).url() == expected


def test_azure_uses_api_key_header_and_others_bearer():
    azure = client_for("https://res.openai.azure.com/openai/deployments/d?api-version=1")
    req = azure.build_request(SUMMARIZE, "doc")
    assert req.auth_header == "api-key" and req.auth_prefix == ""
    req = client_for("https://api.openai.com/v1").build_request(SUMMARIZE, "doc")
    assert req.auth_header == "Authorization" and req.auth_prefix == "Bearer "
    assert ("Authorization", "Bearer <API key from keyring>") in req.display_headers()


def test_invalid_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="invalid base URL"):
        client_for("ftp//nowhere").url()


def test_chat_body_is_exact_json_with_task_messages():
    req = client_for("http://127.0.0.1:1/v1").build_request(SUMMARIZE, "Le café <PERSON_1>")
    body = json.loads(req.body)
    assert body["model"] == "m-1" and body["stream"] is True
    assert body["messages"] == SUMMARIZE.messages("Le café <PERSON_1>")
    assert "Le café".encode() in req.body          # UTF-8, not \\u escapes
    assert req.content_texts == tuple(m["content"] for m in body["messages"])


def test_completions_body_uses_completion_prompt():
    task = Task("question", question="Who?")
    req = client_for("http://127.0.0.1:1/v1", "completions").build_request(task, "A text.")
    body = json.loads(req.body)
    assert body["prompt"] == task.completion_prompt("A text.")
    assert req.url.endswith("/v1/completions")


@pytest.mark.parametrize("style", ["chat", "completions"])
@pytest.mark.parametrize("chunked", [True, False])
def test_streams_deltas_in_order_and_sends_body_byte_exact(server, style, chunked):
    server.script(Reply(deltas=["One", " two", " three"], style=style, chunked=chunked))
    client = client_for(server.url, style)
    req = client.build_request(SUMMARIZE, "the document")
    seen: list[str] = []
    reply = client.send(req, "sk-test-0123456789abcdef", on_delta=seen.append)
    assert seen == ["One", " two", " three"]
    assert reply.text == "One two three" and reply.finish_reason == "stop"
    assert reply.attempts == 1
    got = server.requests[0]
    assert got.body == req.body
    assert got.headers["Authorization"] == "Bearer sk-test-0123456789abcdef"


def test_no_key_sends_no_authorization_header(server):
    client = client_for(server.url)
    client.send(client.build_request(SUMMARIZE, "d"), None)
    assert "Authorization" not in server.requests[0].headers


def test_non_streaming_json_reply_is_accepted(server):
    body = json.dumps({"choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
    server.script(Reply(body=body))
    client = client_for(server.url)
    reply = client.send(client.build_request(SUMMARIZE, "d"), None)
    assert reply.text == "whole" and reply.usage["completion_tokens"] == 1


def test_429_with_retry_after_is_retried_after_the_asked_wait(server):
    server.script(Reply(status=429, headers={"Retry-After": "2"},
                        body=b'{"error": {"message": "slow down"}}'),
                  Reply(deltas=["ok"]))
    sleeps: list[float] = []
    client = client_for(server.url, sleeps=sleeps)
    reply = client.send(client.build_request(SUMMARIZE, "d"), None)
    assert reply.text == "ok" and reply.attempts == 2
    assert sleeps == [2.0]
    assert len(server.requests) == 2


def test_429_retry_after_longer_than_max_wait_is_reported_not_waited(server):
    server.script(Reply(status=429, headers={"Retry-After": "120"}, body=b"{}"))
    sleeps: list[float] = []
    client = client_for(server.url, sleeps=sleeps)
    with pytest.raises(ProviderError, match=r"HTTP 429\).*Retry after 120 s") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert sleeps == [] and len(server.requests) == 1
    assert "quota" in info.value.hint


def test_500_is_retried_with_backoff_then_reported(server):
    server.script(*[Reply(status=500, body=b'{"error": "boom"}')] * 3)
    sleeps: list[float] = []
    client = client_for(server.url, sleeps=sleeps)
    with pytest.raises(ProviderError, match=r"server error \(HTTP 500\).*boom"):
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert sleeps[1] > sleeps[0]            # exponential backoff


def test_503_then_success(server):
    server.script(Reply(status=503, body=b""), Reply(deltas=["fine"]))
    client = client_for(server.url)
    assert client.send(client.build_request(SUMMARIZE, "d"), None).text == "fine"


@pytest.mark.parametrize("status, needle, hint", [
    (401, "rejected the API key", "API key"),
    (403, "refused access", "permission"),
    (404, "no such endpoint or model", "base URL"),
    (413, "too large", "Shorten"),
    (400, "refused the request (HTTP 400)", "provider settings"),
])
def test_client_errors_are_clear_and_never_retried(server, status, needle, hint):
    server.script(Reply(status=status, body=b'{"error": {"message": "nope"}}'))
    client = client_for(server.url)
    with pytest.raises(ProviderError) as info:
        client.send(client.build_request(SUMMARIZE, "d"), "sk-abcdefghijklmnop")
    assert needle in info.value.message and "nope" in info.value.message
    assert hint in info.value.hint
    assert len(server.requests) == 1
    assert "sk-abcdefghijklmnop" not in str(info.value)


def test_truncated_stream_is_not_retried_and_keeps_partial(server):
    server.script(Reply(deltas=["a", "b", "c", "d"], truncate_after=2))
    client = client_for(server.url)
    with pytest.raises(StreamBroken) as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert info.value.partial == "ab"
    assert "not re-sent" in info.value.hint
    assert len(server.requests) == 1


def test_stream_without_done_or_finish_is_truncated(server):
    server.script(Reply(deltas=["a"], done=False, finish=False))
    client = client_for(server.url)
    with pytest.raises(StreamBroken, match="stopped before it was complete"):
        client.send(client.build_request(SUMMARIZE, "d"), None)


def test_finish_reason_without_done_is_complete(server):
    server.script(Reply(deltas=["a"], done=False, finish=True))
    client = client_for(server.url)
    assert client.send(client.build_request(SUMMARIZE, "d"), None).text == "a"


def test_malformed_stream_is_reported_with_partial(server):
    server.script(Reply(deltas=["x", "y", "z"], malformed_after=1))
    client = client_for(server.url)
    with pytest.raises(StreamBroken, match="malformed") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert info.value.partial == "x" and len(server.requests) == 1


DEEP = b"[" * 5000 + b"]" * 5000          # valid JSON, too deep for Python's parser


def test_a_stream_event_nested_too_deeply_is_a_broken_stream(server):
    # A hostile provider or proxy: the parser's RecursionError must not become a crash.
    server.script(Reply(raw_chunks=[sse_event("x", "chat"), b"data: " + DEEP + b"\n\n"]))
    client = client_for(server.url)
    with pytest.raises(StreamBroken, match="malformed") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert info.value.partial == "x"


def test_a_whole_reply_nested_too_deeply_is_not_an_openai_reply(server):
    server.script(Reply(body=DEEP, headers={"Content-Type": "application/json"}))
    client = client_for(server.url)
    with pytest.raises(StreamBroken, match="not an OpenAI-compatible reply"):
        client.send(client.build_request(SUMMARIZE, "d"), None)


def test_html_instead_of_api_is_reported(server):
    server.script(Reply(body=b"<html>login</html>", headers={"Content-Type": "text/html"}))
    client = client_for(server.url)
    with pytest.raises(StreamBroken, match="not an OpenAI-compatible reply"):
        client.send(client.build_request(SUMMARIZE, "d"), None)


def test_read_timeout_before_answer_is_not_retried(server):
    server.script(Reply(hang=1.5, deltas=["late"]))
    client = client_for(server.url, timeouts=Timeouts(connect=2, read=0.5))
    with pytest.raises(ProviderError, match="did not answer within") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert "not re-sent" in info.value.hint and len(server.requests) == 1


def test_slow_stream_that_stalls_mid_answer_is_broken_not_retried(server):
    server.script(Reply(deltas=["a", "b"], delay=1.2))
    client = client_for(server.url, timeouts=Timeouts(connect=2, read=0.5))
    with pytest.raises(ProviderError):
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert len(server.requests) == 1


def test_slow_stream_within_timeout_arrives_whole(server):
    server.script(Reply(deltas=["a", "b", "c"], delay=0.2))
    client = client_for(server.url, timeouts=Timeouts(connect=2, read=2))
    assert client.send(client.build_request(SUMMARIZE, "d"), None).text == "abc"


def test_connection_dropped_after_request_written_is_not_retried(server):
    server.script(Reply(drop=True), Reply(deltas=["never"]))
    client = client_for(server.url)
    with pytest.raises(ProviderError, match="broke while sending") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert getattr(info.value, "delivered", None) is None
    assert len(server.requests) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_retried_then_says_nothing_was_sent():
    sleeps: list[float] = []
    client = client_for(f"http://127.0.0.1:{_free_port()}/v1", sleeps=sleeps)
    with pytest.raises(ProviderError, match="could not reach") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert len(sleeps) == 2 and "Nothing was sent" in info.value.hint
    assert info.value.delivered is False


def test_dns_failure_is_named(monkeypatch):
    client = client_for("https://no-such-host.invalid/v1")
    with pytest.raises(ProviderError, match="could not find the provider.s server") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert info.value.delivered is False


def test_tls_failure_is_named(server):
    # An https URL to a plain-HTTP server fails in the TLS handshake.
    client = client_for(server.url.replace("http://", "https://"))
    with pytest.raises(ProviderError, match="secure connection") as info:
        client.send(client.build_request(SUMMARIZE, "d"), None)
    assert "REQUESTS_CA_BUNDLE" in info.value.hint


def test_cancel_mid_stream_stops_and_keeps_partial(server):
    server.script(Reply(deltas=["a", "b", "c", "d"], delay=0.15))
    cancel = threading.Event()
    client = client_for(server.url)

    def on_delta(d: str) -> None:
        if d == "b":
            cancel.set()

    with pytest.raises(Cancelled) as info:
        client.send(client.build_request(SUMMARIZE, "d"), None, on_delta=on_delta, cancel=cancel)
    assert info.value.partial == "ab"


def test_callbacks_report_attempts_and_acceptance(server):
    server.script(Reply(status=502, body=b""), Reply(deltas=["x"]))
    events: list[str] = []
    client = client_for(server.url)
    client.send(client.build_request(SUMMARIZE, "d"), None,
                on_attempt=lambda n: events.append(f"try{n}"),
                on_accepted=lambda: events.append("accepted"))
    assert events == ["try1", "try2", "accepted"]
