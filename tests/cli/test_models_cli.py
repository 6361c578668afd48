"""`preflight models status|use|install|download` through the real argument parser."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from preflight.cli import main as cli
from preflight.core.config import load_settings

BLOB = b"GGUF" + bytes(range(256)) * 400


@pytest.fixture
def empty_models(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


def test_status_json_and_exit_code(capsys, empty_models):
    assert cli.main(["models", "status", "--json"]) == 1   # required models missing
    rows = json.loads(capsys.readouterr().out)
    assert {r["role"]: r["state"] for r in rows} == {
        "slm": "missing", "dx_space": "missing", "similarity": "missing", "ner": "missing",
        "cloud_standin": "missing", "cloud_qwen15": "missing", "slm_qwen05": "missing"}
    optional = {r["role"]: r["optional"] for r in rows}
    assert optional["cloud_standin"] is True and optional["slm_qwen05"] is False


def test_status_table_says_how_to_fix(capsys, empty_models):
    cli.main(["models", "status"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["ROLE", "STATE", "MODEL"]
    assert "preflight models install --role slm" in out
    assert "--role cloud_standin" not in out                  # optional: no nagging


def test_use_and_reset(capsys, empty_models, tmp_path):
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"x")
    assert cli.main(["models", "use", "slm", str(mine)]) == 0
    assert load_settings().model_paths["slm"] == str(mine.resolve())
    cli.main(["models", "status", "--json"])
    capsys.readouterr()
    assert cli.main(["models", "use", "slm", "--reset"]) == 0
    assert "pinned default" in capsys.readouterr().out
    assert load_settings().model_paths == {}


@pytest.mark.parametrize("argv, needle", [
    (["models", "use", "slm"], "PATH or --reset"),
    (["models", "use", "nope", "--reset"], "Known roles"),
    (["models", "use", "slm", "/definitely/not/here.gguf"], "does not exist"),
    (["models", "install", "--role", "nope"], "Unknown model role"),
    (["models", "download", "not a repo", "f.gguf", "--role", "slm"], "repository id"),
])
def test_bad_input_is_one_line_not_a_traceback(capsys, empty_models, argv, needle):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert err.startswith("preflight: error:")


def test_download_from_a_local_hub(capsys, empty_models, monkeypatch):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(BLOB)))
            self.end_headers()
            self.wfile.write(BLOB)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("PREFLIGHT_HF_ENDPOINT", f"http://127.0.0.1:{httpd.server_address[1]}")
        code = cli.main(["models", "download", "org/tiny", "tiny.gguf", "--role", "slm",
                         "--sha256", hashlib.sha256(BLOB).hexdigest()])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
    assert code == 0
    from preflight.core import paths

    dest = paths.data_dir() / "models" / "org--tiny" / "tiny.gguf"  # never the install folder
    assert not (empty_models / "user").exists()
    assert dest.read_bytes() == BLOB
    assert load_settings().model_paths["slm"] == str(dest.resolve())
    assert "slm now uses" in capsys.readouterr().out
