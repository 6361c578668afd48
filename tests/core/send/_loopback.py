"""A small HTTP server on 127.0.0.1 that records every byte it receives and answers
from a script: OpenAI-style SSE streams (whole, slow, truncated, malformed), error
statuses with headers, silence. Used by the provider, session, CLI and leak tests."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Captured:
    method: str
    path: str
    headers: dict[str, str]
    raw_head: bytes
    body: bytes

    @property
    def all_bytes(self) -> bytes:
        return self.raw_head + self.body


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # Streaming (status 200 only when set)
    deltas: list[str] | None = None
    style: str = "chat"            # "chat" | "completions"
    delay: float = 0.0             # seconds before each event
    done: bool = True              # send "data: [DONE]"
    finish: bool = True            # send a finish_reason event
    truncate_after: int | None = None   # close the socket after this many deltas
    malformed_after: int | None = None  # send a non-JSON data line after this many deltas
    chunked: bool = True
    hang: float = 0.0              # sleep before any response (read-timeout tests)
    drop: bool = False             # close the connection without any response
    raw_chunks: list[bytes] | None = None  # an SSE 200 whose HTTP chunks are these bytes


def sse_event(delta: str | None, style: str, finish: str | None = None) -> bytes:
    if style == "chat":
        choice: dict[str, Any] = {"index": 0, "delta": {} if delta is None else {"content": delta},
                                  "finish_reason": finish}
        obj = {"object": "chat.completion.chunk", "choices": [choice]}
    else:
        obj = {"object": "text_completion",
               "choices": [{"index": 0, "text": delta or "", "finish_reason": finish}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class CaptureServer:
    """``with CaptureServer() as srv: srv.script(Reply(...)); ... srv.requests``."""

    def __init__(self) -> None:
        self.requests: list[Captured] = []
        self._script: list[Reply] = []
        self.default = Reply(deltas=["Hello", " world", "."])
        self.on_request: Any = None   # called with each Captured before answering
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                head = (self.requestline + "\r\n" + str(self.headers)).encode("latin-1")
                with server._lock:
                    server.requests.append(Captured(self.command, self.path, dict(self.headers),
                                                    head, body))
                    reply = server._script.pop(0) if server._script else server.default
                if server.on_request is not None:
                    server.on_request(server.requests[-1])
                server._answer(self, reply)

            do_GET = do_POST

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> "CaptureServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- answering --

    def _answer(self, h: BaseHTTPRequestHandler, r: Reply) -> None:
        if r.hang:
            time.sleep(r.hang)
        if r.drop:
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if r.raw_chunks is not None:
            self._raw(h, r)
            return
        if r.deltas is None:
            h.send_response(r.status)
            for k, v in r.headers.items():
                h.send_header(k, v)
            h.send_header("Content-Type", r.headers.get("Content-Type", "application/json"))
            h.send_header("Content-Length", str(len(r.body)))
            h.end_headers()
            h.wfile.write(r.body)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        for k, v in r.headers.items():
            h.send_header(k, v)
        if r.chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()

        def write(data: bytes) -> None:
            if r.chunked:
                h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            else:
                h.wfile.write(data)
            h.wfile.flush()

        try:
            for i, delta in enumerate(r.deltas):
                if r.truncate_after is not None and i >= r.truncate_after:
                    h.close_connection = True
                    h.connection.shutdown(socket.SHUT_RDWR)
                    return
                if r.malformed_after is not None and i >= r.malformed_after:
                    write(b"data: {not json\n\n")
                    break
                if r.delay:
                    time.sleep(r.delay)
                write(sse_event(delta, r.style))
            if r.finish:
                write(sse_event(None, r.style, finish="stop"))
            if r.done:
                write(b"data: [DONE]\n\n")
            if r.chunked:
                h.wfile.write(b"0\r\n\r\n")
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _raw(h: BaseHTTPRequestHandler, r: Reply) -> None:
        """Each of ``r.raw_chunks`` as one HTTP chunk, written without copying it."""
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for data in r.raw_chunks or ():
                h.wfile.write(f"{len(data):x}\r\n".encode())
                h.wfile.write(data)
                h.wfile.write(b"\r\n")
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading (e.g. at its answer-size limit)
