"""Hub downloads against a local HTTP server on 127.0.0.1 that honours Range requests and
can drop the connection half-way, ignore Range, or answer 404."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from preflight.core.config import load_settings
from preflight.core.errors import Cancelled, ConfigError, ModelUnavailableError, PreflightError
from preflight.runtime import models as M

PAYLOAD = os.urandom(1_500_000)
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()
FAST = {"timeout": (2.0, 5.0), "retry_wait": 0.0}


class Server:
    """Serves PAYLOAD under any path ending in ``model.gguf``; records each request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []   # (path, Range header)
        self.drop_first = 0        # how many responses to cut off half-way
        self.ignore_range = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                server.requests.append((self.path, rng))
                if not self.path.endswith("model.gguf"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                m = re.fullmatch(r"bytes=(\d+)-", rng or "")
                if m and not server.ignore_range:
                    start = int(m.group(1))
                    if start >= len(PAYLOAD):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(PAYLOAD)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
                else:
                    self.send_response(200)
                body = PAYLOAD[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if server.drop_first > 0:
                    server.drop_first -= 1
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server():
    srv = Server()
    yield srv
    srv.close()


def test_download_complete_with_progress(server, tmp_path):
    dest = tmp_path / "sub" / "model.gguf"
    seen = []
    got = M.download_file(f"{server.url}/x/model.gguf", dest, sha256=PAYLOAD_SHA,
                          progress=lambda f, m: seen.append(f), **FAST)
    assert got == dest and dest.read_bytes() == PAYLOAD
    assert not dest.with_name("model.gguf.part").exists()
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    # already there with the right hash: no request at all
    n = len(server.requests)
    M.download_file(f"{server.url}/x/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert len(server.requests) == n


def test_dropped_connection_resumes_with_range(server, tmp_path):
    server.drop_first = 2
    dest = tmp_path / "model.gguf"
    M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == PAYLOAD_SHA
    ranges = [r for _, r in server.requests]
    assert ranges[0] is None and len(ranges) == 3
    offsets = [int(re.fullmatch(r"bytes=(\d+)-", r).group(1)) for r in ranges[1:]]
    assert 0 < offsets[0] < offsets[1] < len(PAYLOAD)        # each retry picks up later


def test_existing_part_file_is_resumed_not_refetched(server, tmp_path):
    dest = tmp_path / "model.gguf"
    dest.with_name("model.gguf.part").write_bytes(PAYLOAD[:600_000])
    M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests == [("/model.gguf", "bytes=600000-")]


def test_complete_part_file_answered_416_is_accepted(server, tmp_path):
    dest = tmp_path / "model.gguf"
    dest.with_name("model.gguf.part").write_bytes(PAYLOAD)
    M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD


def test_server_without_range_support_restarts_cleanly(server, tmp_path):
    server.ignore_range = True
    dest = tmp_path / "model.gguf"
    dest.with_name("model.gguf.part").write_bytes(b"stale bytes from another file")
    M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD


def test_sha_mismatch_keeps_nothing(server, tmp_path):
    dest = tmp_path / "model.gguf"
    with pytest.raises(ModelUnavailableError) as err:
        M.download_file(f"{server.url}/model.gguf", dest, sha256="0" * 64, **FAST)
    assert "deleted" in err.value.message
    assert not dest.exists() and not dest.with_name("model.gguf.part").exists()


def test_cancel_mid_download(server, tmp_path):
    dest = tmp_path / "model.gguf"
    cancel = threading.Event()

    def progress(fraction, message):
        if fraction > 0.1:
            cancel.set()

    with pytest.raises(Cancelled):
        M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA,
                        progress=progress, cancel=cancel, **FAST)
    assert not dest.exists()
    part = dest.with_name("model.gguf.part")
    assert 0 < part.stat().st_size < len(PAYLOAD)              # kept for the next attempt
    M.download_file(f"{server.url}/model.gguf", dest, sha256=PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD


def test_not_found_and_unreachable(server, tmp_path):
    with pytest.raises(PreflightError, match="404"):
        M.download_file(f"{server.url}/nothing.bin", tmp_path / "n.bin", **FAST)
    with socket.socket() as s:                                    # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PreflightError) as err:
        M.download_file(f"http://127.0.0.1:{port}/model.gguf", tmp_path / "m.gguf",
                        max_failures=2, **FAST)
    assert "127.0.0.1" in err.value.message and "resumes" in err.value.hint


def test_hub_url_uses_the_endpoint_override(monkeypatch):
    monkeypatch.delenv("PREFLIGHT_HF_ENDPOINT", raising=False)
    assert M.hub_url("org/repo", "a b.gguf") == \
        "https://huggingface.co/org/repo/resolve/main/a%20b.gguf"
    monkeypatch.setenv("PREFLIGHT_HF_ENDPOINT", "http://127.0.0.1:9/")
    assert M.hub_url("org/repo", "sub/f.gguf", "v1.0") == \
        "http://127.0.0.1:9/org/repo/resolve/v1.0/sub/f.gguf"
    for bad in ("no-slash", "a/b/c", "../x", ""):
        with pytest.raises(ConfigError):
            M.hub_url(bad, "f.gguf")


def test_manager_download_points_the_role_at_the_file(server, tmp_path, monkeypatch):
    monkeypatch.setenv("PREFLIGHT_HF_ENDPOINT", server.url)
    manager = M.ModelManager(models_dir=tmp_path / "models")
    dest = manager.download("bartowski/Tiny-GGUF", "model.gguf", "slm", sha256=PAYLOAD_SHA)
    from preflight.core import paths

    assert dest == paths.data_dir() / "models/bartowski--Tiny-GGUF/model.gguf"
    assert server.requests[0][0] == "/bartowski/Tiny-GGUF/resolve/main/model.gguf"
    assert load_settings().model_paths["slm"] == str(dest.resolve())
    assert M.ModelManager(models_dir=tmp_path / "models").path("slm") == dest.resolve()
    with pytest.raises(ConfigError):
        manager.download("bartowski/Tiny-GGUF", "../../etc/passwd", "slm")
    with pytest.raises(ConfigError):
        manager.download("bartowski/Tiny-GGUF", "model.gguf", "no-such-role")
    assert len(server.requests) == 1
