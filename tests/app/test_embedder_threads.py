"""torch's thread count beside the in-process llama.cpp follows how llama.cpp was built:
sharing libgomp (an OpenMP build) it must stay on one thread, or every later SLM call
runs 1.5-1.9x slower; beside setup.sh's build (ggml's own thread pool) it keeps a thread
per core, and the embeddings run ~1.7x faster."""

from __future__ import annotations

import pytest

import preflight.runtime.llama_open as llama_open
from preflight.app.services import Services
from preflight.core.config import Settings
from preflight.runtime.embedder import SHARED_PROCESS_TORCH_THREADS


@pytest.mark.parametrize("openmp, threads", [(True, SHARED_PROCESS_TORCH_THREADS),
                                              (False, None)])
def test_the_embedder_gets_the_threads_the_llama_build_allows(monkeypatch, openmp, threads):
    monkeypatch.setattr(llama_open, "built_with_openmp", lambda: openmp)
    embedder = Services(Settings()).embedder()
    assert embedder._torch_threads == threads
    assert embedder._batch_size == 1     # windows of unequal length are never padded


def test_setup_builds_llama_cpp_without_openmp():
    """setup.sh passes -DGGML_OPENMP=OFF; a build with OpenMP would put torch back on one
    thread (slower embeddings) — this catches an install that lost the flag."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    assert b"CPU" in info                    # the report the check reads is there ...
    assert llama_open.built_with_openmp() is False, info.decode(errors="replace")
