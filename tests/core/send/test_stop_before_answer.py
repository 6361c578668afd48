"""Stop lands without waiting for the provider at every stage of a cloud send, over real
loopback sockets (how fast, is measured by `python -m preflight_eval.bench_stop`):
the provider got the request but has not answered (status line pending), the provider
never accepts the connection (backlog full), Stop before anything started. The audit
record says whether the request had left."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from _loopback import Reply
from _sessions import placeholder_plan, session_for
from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled
from preflight.core.send.providers import RetryPolicy, Timeouts, create_client
from preflight.core.send.session import Confirmation
from preflight.core.tasks import SUMMARIZE
from preflight_eval.bench_stop import full_backlog   # the benchmark's own stalled server

STOP_AFTER_S = 0.3
HANG_S = 5.0                 # the provider's status line comes only after this long
STOP_WITHIN_S = 3.0          # well before it: the stop did not wait for the provider
YES = Confirmation(confirmed=True)


def _client(url: str, connect: float = 2.0):
    return create_client(ProviderSettings("slow", url, "m-1"),
                         retry=RetryPolicy(attempts=1),
                         timeouts=Timeouts(connect=connect, read=30))


def _stop_later(cancel: threading.Event) -> threading.Timer:
    timer = threading.Timer(STOP_AFTER_S, cancel.set)
    timer.start()
    return timer


def _timed_send(client, cancel: threading.Event) -> tuple[Cancelled, float]:
    t0 = time.monotonic()
    _stop_later(cancel)
    with pytest.raises(Cancelled) as info:
        client.send(client.build_request(SUMMARIZE, "doc"), None, cancel=cancel)
    return info.value, time.monotonic() - t0 - STOP_AFTER_S


@pytest.mark.parametrize("stream", [True, False])
def test_stop_while_the_provider_has_not_answered(server, stream):
    # The server reads the whole request, then sleeps 5 s before its status line
    # (a queued request or a slow first token; a non-streaming reply likewise).
    reply = (Reply(deltas=["late"], hang=HANG_S) if stream
             else Reply(body=b'{"choices": [{"message": {"content": "late"}}]}', hang=HANG_S))
    server.script(reply)
    cancel = threading.Event()
    exc, took = _timed_send(_client(server.url), cancel)
    assert took < STOP_WITHIN_S, f"stopped {took:.2f} s after Stop"
    assert len(server.requests) == 1            # it had left, and says so
    assert exc.delivered is True
    assert "after the request was sent" in exc.message


def test_stop_while_connecting_to_a_provider_that_never_accepts():
    srv, fillers = full_backlog()
    try:
        port = srv.getsockname()[1]
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", port))
            pytest.skip("this kernel completes connections beyond the backlog")
        except OSError:
            pass
        finally:
            probe.close()
        client = _client(f"http://127.0.0.1:{port}/v1", connect=10.0)
        exc, took = _timed_send(client, threading.Event())
        assert took < STOP_WITHIN_S, f"stopped {took:.2f} s after Stop"
        assert exc.delivered is False and "nothing was sent" in exc.message
        # Once the server accepts after all, the stopped request still never arrives.
        srv.settimeout(0.5)
        received = b""
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            try:
                conn, _ = srv.accept()
            except OSError:
                time.sleep(0.1)
                continue
            conn.settimeout(0.3)
            try:
                received += conn.recv(4096)
            except OSError:
                pass
            conn.close()
        assert b"POST" not in received
    finally:
        for s in fillers:
            s.close()
        srv.close()


def test_stop_before_sending_sends_nothing(server):
    cancel = threading.Event()
    cancel.set()
    client = _client(server.url)
    with pytest.raises(Cancelled) as info:
        client.send(client.build_request(SUMMARIZE, "doc"), None, cancel=cancel)
    assert info.value.delivered is False and server.requests == []


def test_an_answer_that_arrives_in_time_is_not_disturbed(server):
    client = _client(server.url)
    reply = client.send(client.build_request(SUMMARIZE, "doc"), None,
                        cancel=threading.Event())
    assert reply.text == "Hello world."


def test_audit_record_of_a_send_stopped_before_the_answer(server, tmp_path):
    server.script(Reply(deltas=["late"], hang=HANG_S))
    session = session_for(ProviderSettings("loop", server.url, "m-1",
                                           key_env="PF_TEST_KEY"), tmp_path)
    cancel = threading.Event()
    _stop_later(cancel)
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        session.execute(placeholder_plan(session), YES, cancel=cancel)
    assert time.monotonic() - t0 - STOP_AFTER_S < STOP_WITHIN_S
    (row,) = session.audit.records()
    assert row["status"] == "cancelled" and row["delivered"] == 1
    assert "after the request was sent" in row["error"]


def test_audit_record_of_a_send_stopped_before_it_left(server, tmp_path):
    session = session_for(ProviderSettings("loop", server.url, "m-1",
                                           key_env="PF_TEST_KEY"), tmp_path)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        session.execute(placeholder_plan(session), YES, cancel=cancel)
    (row,) = session.audit.records()
    assert row["status"] == "cancelled" and row["delivered"] == 0
    assert "nothing was sent" in row["error"] and server.requests == []
    assert session.audit.prior_sends(placeholder_plan(session).fingerprint) == []
