"""The company assessor against a real ``llama_cpp.server`` on loopback serving the same
GGUF as the in-process assessor: the perplexities agree, answers agree, `preflight assess`
runs through it, and with the server stopped it falls back and says so."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from _models import require_model
from preflight.cli.main import main
from preflight.core.tasks import SUMMARIZE
from preflight.runtime.remote_slm import RemoteSLM, bos_text
from preflight.runtime.slm import LocalSLM
from preflight_eval.utility_common import local_cloud_server

pytestmark = pytest.mark.slow

DOC = ("The city council of Springfield voted on Tuesday to build a new public library "
       "next to the central station. The building will cost twelve million dollars and "
       "open in 2027. Mayor Jane Porter said the library would offer free computer classes, "
       "a children's wing and a rooftop garden. Opponents argued that the money should go "
       "to road repairs instead, but the measure passed by seven votes to two.")
TEXTS = [
    DOC,
    DOC.replace("Springfield", "<LOCATION_1>").replace("Jane Porter", "<PERSON_1>"),
    ("council gravel Springfield hydrant the voted ninety library quietly <PERSON_1> "
    "station dollars bright orbit twelve"),                       # d_X-like word salad
]
# Measured (this file's texts, and bench_company_assessor): the server scores the text
# after the model's BOS token, the in-process scorer without it, so the mean negative
# log-likelihoods (log perplexity) differ by 1.8 % on the fluent texts and 4.6 % on the
# word salad (perplexity 26.0 vs 24.6, 24.8 vs 23.3, 13,412 vs 21,183). Without the BOS
# prefix llama-cpp-python's echo is misaligned by one token: 19,890 vs 26 on DOC.
TOLERANCE = 0.08       # on log perplexity


def log_gap(theirs: float, mine: float) -> float:
    return abs(math.log(theirs) - math.log(mine)) / math.log(mine)


@pytest.fixture(scope="module")
def slm_path() -> Path:
    return require_model("slm")


def _server(slm_path: Path, log: Path):
    return local_cloud_server(slm_path, n_ctx=4096, n_threads=1, log_path=log,
                              start_timeout=120)


@pytest.fixture(scope="module")
def server(slm_path, tmp_path_factory):
    log = tmp_path_factory.mktemp("assessor-server") / "server.log"
    try:
        with _server(slm_path, log) as base:
            yield base + "/v1"
    except RuntimeError as exc:
        pytest.fail(f"{exc}: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def local(slm_path):
    model = LocalSLM(slm_path, n_threads=1)
    yield model
    model.close()


def test_perplexity_agrees_with_the_in_process_model(server, local, slm_path):
    remote = RemoteSLM(server, score_prefix=bos_text(slm_path))
    naive = RemoteSLM(server)
    ppl = []
    for text in TEXTS:
        mine, theirs = local.perplexity(text), remote.perplexity(text)
        assert log_gap(theirs, mine) <= TOLERANCE, (text[:30], mine, theirs)
        ppl.append(theirs)
    assert log_gap(naive.perplexity(DOC), local.perplexity(DOC)) > 1.0  # the prefix matters
    assert ppl[2] > 100 * ppl[0]        # the signal the feature relies on: salad ≫ text


def test_answers_come_from_the_same_model(server, local):
    remote = RemoteSLM(server)
    answer = remote.run(SUMMARIZE, DOC)
    assert "library" in answer.lower()
    assert answer == local.run(SUMMARIZE, DOC)      # same model, prompt and greedy decoding


@pytest.fixture(autouse=True)
def refined_shown(monkeypatch):
    """A bundle whose refinement is shown for the policy assessed (the shipped one shows
    the instant value everywhere, app.refinement): the company assessor is what runs it."""
    from preflight.app import refinement

    monkeypatch.setattr(refinement, "verdict", lambda metrics, kind: (True, ""))


def _assess(tmp_path, capsys, url: str, *extra: str) -> str:
    # only the company policy may mark an assessor internal (a loopback one may use http)
    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text(
        f'[assessor]\nurl = "{url}"\ninternal = true\n', encoding="utf-8")
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    assert main(["assess", str(doc), "--policy", "identifiers", *extra]) == 0
    return capsys.readouterr().out


def test_assess_runs_through_the_server(server, tmp_path, capsys):
    out = json.loads(_assess(tmp_path, capsys, server, "--json"))
    assert out["assessor"] == {"where": "company", "endpoint": server,
                               "owner": "company assessor", "fallback_reason": None,
                               "note": None}
    assert out["predicted_utility"] is not None


def test_a_stopped_server_falls_back_and_says_so(slm_path, tmp_path, capsys):
    with _server(slm_path, tmp_path / "server.log") as base:
        url = base + "/v1"
        assert RemoteSLM(url).run(SUMMARIZE, DOC)       # it was up
    out = _assess(tmp_path, capsys, url)                # and now it is stopped
    assert f"Assessment ran on this computer (company assessor at {url} unreachable)." \
        in out
    assert "predicted utility (with the local model)" in out
