"""Shared pieces of the utility-assessor scripts: the stand-in cloud LLM and row files.

The "cloud LLM" of the training set is any OpenAI-compatible completions endpoint. By
default we start llama-cpp-python's own server on 127.0.0.1 with Gemma 3 270M (a base
model, so it is prompted with ``Task.completion_prompt`` — "TL;DR:" — on
``/v1/completions``). The server lives only as long as the ``with`` block.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import requests

from preflight.core.tasks import Task


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def local_cloud_server(
    model_path: Path, *, n_ctx: int = 2048, n_threads: int | None = None,
    log_path: Path | None = None, start_timeout: float = 120.0,
) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on a free local port; yields its base URL."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
        "--n_threads", str(n_threads or os.cpu_count() or 1), "--verbose", "False",
    ]
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the local cloud server exited with code {proc.returncode}")
            try:
                if requests.get(base + "/v1/models", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the local cloud server did not start in time")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if out is not subprocess.DEVNULL:
            out.close()


class CompletionsClient:
    """Minimal OpenAI-compatible ``/v1/completions`` client (base models)."""

    def __init__(self, base_url: str, model: str = "local", timeout: float = 300.0,
                 api_key: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def run(self, task: Task, document: str) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": task.completion_prompt(document),
            "max_tokens": task.max_tokens,
            "temperature": 0.0,
            "repeat_penalty": 1.15,   # llama.cpp extension; other servers ignore it
            # A base model's TL;DR is its first line; what follows is rambling.
            "stop": ["\n"] if task.kind == "summarize" else ["\n\n", "<eos>"],
        }
        url = self.base_url + ("/completions" if self.base_url.endswith("/v1") else "/v1/completions")
        resp = requests.post(url, json=body, timeout=self.timeout, headers=self.headers)
        resp.raise_for_status()
        return str(resp.json()["choices"][0]["text"]).strip()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (killed mid-write) is skipped."""
    rows: list[dict[str, Any]] = []
    if not path.exists():
        return rows
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def training_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flatten builder rows to regressor rows: features + target + variant + group."""
    out = []
    for r in rows:
        flat = dict(r["features"])
        flat["target"] = float(r["target"])
        flat["variant"] = r.get("variant", "plain")
        flat["group"] = r["doc_id"]
        flat["method"] = r["method"]
        out.append(flat)
    return out
