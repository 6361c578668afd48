"""The real all-mpnet-base-v2 (installed by `preflight models install`; missing → fails in CI)."""

from __future__ import annotations

import numpy as np
import pytest
from _models import require_model

from preflight.runtime.embedder import SentenceEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def emb():
    e = SentenceEmbedder(require_model("similarity"))
    e.load()
    return e


def test_paraphrase_scores_higher_than_unrelated_and_noise(emb):
    a = "The council approved a new library next to the station."
    para = "A new library beside the train station was approved by the city council."
    other = "Quarterly revenue of the chip maker fell by nine percent."
    noise = "qz vlorp brimble ##x zzk quonk"
    s_para, s_other, s_noise = (emb.similarity(a, b) for b in (para, other, noise))
    assert s_para > 0.7
    assert s_para > s_other + 0.3
    assert s_noise < 0.3


def test_long_document_uses_every_window(emb):
    first = "The council approved a new public library next to the central station. " * 30
    second = "Quarterly revenue of the chip maker fell by nine percent this year. " * 30
    doc = first + second
    assert len(emb.windows(doc)) >= 2
    assert all(n <= 384 for _, n in emb.windows(doc))
    v_doc, v_first, v_second = emb.embed([doc, first, second])
    # truncation would make the document look like its first half only (≈ v_first)
    assert np.dot(v_doc, v_second) > np.dot(v_first, v_second) + 0.2
    assert np.dot(v_doc, v_first) > np.dot(v_first, v_second) + 0.2


def test_torch_threads_are_set_when_the_model_loads():
    """The composition root gives torch one thread beside a llama.cpp built with OpenMP
    (see shared_process_torch_threads); the setting must reach torch before its first team.
    Run in a child process: torch's thread count is process-wide."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from preflight.runtime.embedder import SentenceEmbedder\n"
        "before = torch.get_num_threads()\n"
        "e = SentenceEmbedder(sys.argv[1], torch_threads=1)\n"
        "e.similarity('one short text', 'another short text')\n"
        "print(before, torch.get_num_threads())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(require_model("similarity"))],
                         capture_output=True, text=True, timeout=300, check=True)
    before, after = (int(x) for x in out.stdout.split()[-2:])
    assert after == 1
    assert before >= 1


def test_loading_draws_no_progress_bar_on_stderr(tmp_path):
    # A CLI's stderr carries messages, not transformers' "Loading weights" bar. In a child
    # process: the module fixture above has loaded the model in this one already.
    import os
    import subprocess
    import sys

    code = ("from preflight.runtime.embedder import SentenceEmbedder; import sys; "
            "e = SentenceEmbedder(sys.argv[1]); e.load(); print(len(e.embed(['x'])[0]))")
    res = subprocess.run([sys.executable, "-c", code, str(require_model("similarity"))],
                         capture_output=True, text=True, timeout=300, env=os.environ.copy(),
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "768"
    assert "Loading weights" not in res.stderr and "it/s]" not in res.stderr, res.stderr[-500:]
