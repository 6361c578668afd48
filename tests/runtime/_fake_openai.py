"""A fake OpenAI-compatible server on 127.0.0.1 for the company-assessor tests: it records
every request body and answers like llama_cpp.server — chat completions as an SSE stream,
completions with ``echo`` + ``logprobs`` as the prompt's per-token log-probabilities
(a "token" is a word here; the first is null, the generated token comes last)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


def word_logprob(word: str) -> float:
    """The fake model's log-probability of a word (longer words are less likely)."""
    return -0.5 * len(word)


class FakeOpenAI:
    """``with FakeOpenAI() as srv: ...``; ``srv.bodies`` holds (path, JSON body)."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.answer = "A short summary of the text."
        self.status = 200               # answer every request with this status
        self.logprobs = True            # False: completions carry "logprobs": null
        self.delay = 0.0                # seconds between streamed pieces
        self.lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with srv.lock:
                    srv.bodies.append((self.path, body))
                if srv.status != 200:
                    self._send(srv.status, b'{"error": "no"}', "application/json")
                elif self.path.endswith("/chat/completions"):
                    self._stream(body)
                else:
                    self._send(200, json.dumps(srv.completion(body)).encode(),
                               "application/json")

            def _send(self, status: int, data: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                words = srv.answer.split(" ")
                try:
                    for i, w in enumerate(words[: body["max_tokens"]]):
                        piece = w if i == 0 else " " + w
                        event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                        self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                        self.wfile.flush()
                        time.sleep(srv.delay)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        words = body["prompt"].split()
        values: list[float | None] = [None] + [word_logprob(w) for w in words[1:]]
        values.append(-0.1)               # the one generated token
        logprobs = {"tokens": words + ["x"], "token_logprobs": values,
                    "text_offset": list(range(len(values))), "top_logprobs": None}
        return {"choices": [{"text": body["prompt"] + " x", "index": 0,
                             "logprobs": logprobs if self.logprobs else None}],
                "usage": {"prompt_tokens": len(words), "completion_tokens": 1}}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def texts(self) -> str:
        """Everything the server was sent, as one string (for "never received X")."""
        return json.dumps([b for _, b in self.bodies], ensure_ascii=False)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
