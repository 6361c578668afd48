"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 (SSE streaming), for the
window's end-to-end test. It records every request body it receives."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackLLM:
    def __init__(self, answer_words: list[str], models: tuple[str, ...] = ("test-model",),
                 key: str | None = None, delay: float = 0.0) -> None:
        self.answer_words = answer_words
        self.models = models            # what GET /v1/models lists
        self.key = key                  # when set, GET /v1/models needs "Bearer <key>"
        self.delay = delay            # seconds before each word (a slowly streaming model)
        self.hang = 0.0               # seconds before the status line (a queued request)
        self.finish_reason = "stop"   # why the answer ends ("length": cut at max_tokens)
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.gets: list[tuple[str, dict[str, str], bytes]] = []   # path, headers, body
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_GET(self):  # noqa: N802
                n = int(self.headers.get("Content-Length", "0"))
                outer.gets.append((self.path, dict(self.headers), self.rfile.read(n)))
                if self.path != "/v1/models":
                    self.send_response(404)
                    self.end_headers()
                    return
                if outer.key and self.headers.get("Authorization") != f"Bearer {outer.key}":
                    body = b'{"error": {"message": "Incorrect API key provided"}}'
                    self.send_response(401)
                else:
                    body = json.dumps({"object": "list", "data": [
                        {"id": m, "object": "model"} for m in outer.models]}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                outer.bodies.append(body)
                outer.headers.append(dict(self.headers))
                time.sleep(outer.hang)
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    self._stream()
                except (BrokenPipeError, ConnectionResetError):
                    pass                      # the client stopped reading (Stop)

            def _stream(self):
                for i, word in enumerate(outer.answer_words):
                    time.sleep(outer.delay)
                    piece = word if i == 0 else " " + word
                    event = {"id": "x", "object": "chat.completion.chunk",
                             "choices": [{"index": 0, "delta": {"content": piece},
                                          "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                done = {"id": "x", "choices": [{"index": 0, "delta": {},
                                                "finish_reason": outer.finish_reason}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "LoopbackLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
