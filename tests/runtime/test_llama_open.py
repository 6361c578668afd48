"""Concurrent model loads must not lose the process's stdout/stderr (llama-cpp-python
redirects file descriptors 1 and 2 while it loads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _models import require_model

pytestmark = pytest.mark.slow


def test_parallel_loads_keep_stdout_and_stderr():
    path = require_model("slm")
    script = textwrap.dedent(f"""
        import sys, threading
        from preflight.runtime.llama_open import open_llama
        def load():
            for _ in range(3):
                open_llama({str(path)!r}, vocab_only=True, quiet_stderr=True)
        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        print("stdout survived", flush=True)
        print("stderr survived", file=sys.stderr, flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "stdout survived" in proc.stdout
    assert "stderr survived" in proc.stderr
