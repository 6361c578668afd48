"""Every provider fault the window can show, produced for real by a loopback server,
reads in the user's words: what happened and what to do — no Python or OS jargon, no
command-line flags (the window's wording comes from the application layer)."""

from __future__ import annotations

import re
import socket

import pytest

from _loopback import Reply
from preflight.app.presentation import error_text
from preflight.core.config import ProviderSettings
from preflight.core.errors import PreflightError
from preflight.core.send.providers import RetryPolicy, Timeouts, create_client
from preflight.core.tasks import SUMMARIZE

#: What a reader of the window must never see (Python, OS and HTTP-library internals,
#: CLI commands and flags).
JARGON = re.compile(
    r"Errno|errno|invalid literal|base 16|Traceback|[A-Z][a-z]+(Error|Exception)\b|urllib3|"
    r"HTTPConnection|Max retries|object at 0x|b''|preflight [a-z-]+ |\s--[a-z]|set-key")


def _client(url: str):
    return create_client(ProviderSettings("Acme Cloud", url, "m-1"),
                         retry=RetryPolicy(attempts=2, backoff=0.01, max_wait=1),
                         timeouts=Timeouts(connect=2, read=5), sleep=lambda s: None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAULTS = [
    # (what the server does, words the window must say)
    ("refused", None, "could not reach 127.0.0.1"),
    ("unknown host", "https://no-such-host.invalid/v1", "could not find the provider"),
    ("dropped", [Reply(drop=True)], "broke while sending"),
    ("stream cut", [Reply(deltas=["The", " answer", " is"] * 5, truncate_after=4)],
     "broke off while it was arriving"),
    ("garbled stream", [Reply(deltas=["a", "b", "c"], malformed_after=1)], "Acme Cloud"),
    ("bad key", [Reply(status=401, body=b'{"error": {"message": "Incorrect API key"}}')],
     "Settings → Providers → Set key"),
    ("forbidden", [Reply(status=403, body=b'{"error": "model not allowed"}')],
     "refused access"),
    ("rate limit", [Reply(status=429, headers={"Retry-After": "120"},
                          body=b'{"error": {"message": "slow down"}}')], "slow down"),
    ("server error", [Reply(status=502, body=b"<html>Bad gateway</html>")] * 2,
     "server error"),
    ("json error", [Reply(status=500, body=b'{"detail": "upstream overloaded"}')] * 2,
     "upstream overloaded"),
]


@pytest.mark.parametrize("fault,replies,says", FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_reads_in_the_users_words(server, fault, replies, says):
    url = (f"http://127.0.0.1:{_free_port()}/v1" if replies is None else
           replies if isinstance(replies, str) else server.url)
    if isinstance(replies, list):
        server.script(*replies)
    client = _client(url)
    with pytest.raises(PreflightError) as info:
        client.send(client.build_request(SUMMARIZE, "A short note."), "sk-test-0123456789ab")
    message, hint = error_text(info.value, "window")
    shown = f"{message} {hint}"
    assert says in shown
    assert hint.strip()                                  # what to do
    assert not JARGON.search(shown), shown


def test_a_bad_base_url_reads_in_the_users_words():
    with pytest.raises(PreflightError) as info:
        _client("ftp//nowhere").url()
    shown = " ".join(error_text(info.value, "window"))
    assert "base URL" in shown and not JARGON.search(shown), shown


def test_the_cli_keeps_its_command_for_the_same_fault(server):
    server.script(Reply(status=401, body=b'{"error": "bad key"}'))
    client = _client(server.url)
    with pytest.raises(PreflightError) as info:
        client.send(client.build_request(SUMMARIZE, "A short note."), "sk-test-0123456789ab")
    assert error_text(info.value, "cli")[1] == "Set the key: preflight providers set-key " \
                                              "Acme Cloud."
