"""How fast Stop lands in a cloud send. Prints medians and maxima in milliseconds.

    python -m preflight_eval.bench_stop [--runs 9]

Over the product's provider client (``core.send.providers``) and a loopback server, Stop
(the cancel event the window's Esc and the CLI's Ctrl+C set) is pressed 0.3 s into a send
in three states: the provider holds the request without a status line (a queued request),
the provider streams one word every 0.2 s, and the provider never accepts the connection
(a full backlog). The time from Stop to the send's end is the reading; the baseline, in
the same process, is a whole short send to the same server, so the ratio says how a stop
compares with an ordinary round trip on this machine's load. The tests assert only that a
stop never waits for the provider (timings on a loaded machine are noisy).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STOP_AFTER_S = 0.3
HANG_S = 20.0


class _Provider:
    """A loopback OpenAI-style server: ``mode`` "hang", "stream" or "answer"."""

    def __init__(self) -> None:
        self.mode = "answer"
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # noqa: ANN002
                pass

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if outer.mode == "hang":
                    time.sleep(HANG_S)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                words = 200 if outer.mode == "stream" else 3
                try:
                    for i in range(words):
                        if outer.mode == "stream":
                            time.sleep(0.2)
                        event = {"choices": [{"index": 0, "delta": {"content": f" w{i}"},
                                              "finish_reason": None}]}
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except OSError:
                    pass                       # the client stopped reading

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def full_backlog() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket that never accepts, its backlog filled: connecting hangs."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    fillers = []
    for _ in range(8):
        s = socket.socket()
        s.settimeout(0.2)
        try:
            s.connect(srv.getsockname())
        except OSError:
            s.close()
            break
        fillers.append(s)
    return srv, fillers


def _client(url: str):
    from preflight.core.config import ProviderSettings
    from preflight.core.send.providers import RetryPolicy, Timeouts, create_client

    return create_client(ProviderSettings("bench", url, "m"), retry=RetryPolicy(attempts=1),
                         timeouts=Timeouts(connect=30, read=60))


def _stop_ms(url: str) -> float:
    """Stop pressed STOP_AFTER_S into a send: milliseconds from Stop to the send's end."""
    from preflight.core.errors import Cancelled
    from preflight.core.tasks import SUMMARIZE

    client, cancel = _client(url), threading.Event()
    pressed: list[float] = []

    def press() -> None:
        pressed.append(time.perf_counter())
        cancel.set()

    threading.Timer(STOP_AFTER_S, press).start()
    try:
        client.send(client.build_request(SUMMARIZE, "doc"), None, cancel=cancel)
    except Cancelled:
        pass
    return (time.perf_counter() - pressed[0]) * 1000 if pressed else float("nan")


def _round_trip_ms(url: str) -> float:
    from preflight.core.tasks import SUMMARIZE

    client = _client(url)
    t0 = time.perf_counter()
    client.send(client.build_request(SUMMARIZE, "doc"), None, cancel=threading.Event())
    return (time.perf_counter() - t0) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args(argv)
    provider = _Provider()
    base = [_round_trip_ms(provider.url) for _ in range(args.runs)]
    rows: dict[str, list[float]] = {}
    for mode in ("hang", "stream"):
        provider.mode = mode
        rows[f"provider {'holds the request' if mode == 'hang' else 'streams slowly'}"] = [
            _stop_ms(provider.url) for _ in range(args.runs)]
        provider.mode = "answer"
    srv, fillers = full_backlog()
    try:
        rows["connection never accepted"] = [
            _stop_ms(f"http://127.0.0.1:{srv.getsockname()[1]}/v1") for _ in range(args.runs)]
    finally:
        for s in fillers:
            s.close()
        srv.close()
    med = statistics.median(base)
    print(f"baseline: a whole short send, median {med:.1f} ms over {args.runs} runs")
    print(f"{'Stop while':<30} {'median ms':>10} {'max ms':>8} {'ratio':>7}")
    for name, ms in rows.items():
        m = statistics.median(ms)
        print(f"{name:<30} {m:>10.1f} {max(ms):>8.1f} {m / med:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
