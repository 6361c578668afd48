"""The flow experiment's core loop on a fake provider that speaks the real protocol
(an OpenAI-style completions stream on 127.0.0.1): sends go through the product's send
path, the pairs the send path's learner receives are cached, a rerun resumes, and the
evaluation scores each checkpoint with a fresh per-provider learner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "utility"))

from _fakes import FakeDetector  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _utility_fakes import FakeEmbedder  # noqa: E402
from test_predictor import synthetic_rows  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.send.providers import create_client  # noqa: E402
from preflight.core.tasks import SUMMARIZE  # noqa: E402
from preflight.core.utility.flow import write_training_rows  # noqa: E402
from preflight.core.utility.predictor import (  # noqa: E402
    UtilityPredictor, cost_metrics, fit_bundle,
)
from preflight_eval.flow_experiment import (  # noqa: E402
    CapturingFlow, collect, evaluate, make_session, plan_items, read_cache,
)
from preflight_eval.utility_data.corpus import Document  # noqa: E402
from preflight_eval.utility_data.settings import OperatorKind  # noqa: E402

NAMES = ("Alice Martin", "Bob Stone", "Carol Diaz")
DOCS = [Document(f"memo:{i:04d}", "business", "memo",
                 f"{NAMES[i % 3]} wrote about the budget of project {i} in Lyon. "
                 f"The review of item {i} is late and {NAMES[(i + 1) % 3]} asked why.")
        for i in range(6)]
KINDS = {"placeholder": OperatorKind("placeholder", 1.0), "redact": OperatorKind("redact", 1.0)}


def _provider(url: str) -> ProviderSettings:
    return ProviderSettings(name="fake-gemma", base_url=url, model="gemma-test",
                            api_style="completions")


@pytest.fixture
def run(tmp_path):
    """(server, cache, collect_more(max_stream) -> sent)."""
    with CaptureServer() as srv:
        srv.default = Reply(style="completions", deltas=["A note ", "about ", "<PERSON_1>."])
        detector, embedder = FakeDetector(), FakeEmbedder()
        items = plan_items(DOCS, detector, KINDS, n_eval_docs=2, per_doc=2, seed=1)
        cache = tmp_path / "sends.jsonl"

        def more(max_stream: int) -> int:
            flow = CapturingFlow()
            session = make_session(_provider(srv.url), detector, embedder, flow, tmp_path,
                                   read_timeout=10)
            return collect(items, session, flow, KINDS, cache, max_stream=max_stream)

        yield srv, cache, more, items


def test_sends_go_through_the_send_path_and_the_cache_holds_what_it_learns(run):
    srv, cache, more, items = run
    assert [i.role for i, _ in items] == ["eval"] * 4 + ["stream"] * 8
    assert more(max_stream=5) == 9                     # every eval send, then 5 of the stream
    rows = read_cache(cache)
    assert len(rows) == len(srv.requests) == 9
    client = create_client(_provider(srv.url))
    by_id = {d.doc_id: d for d in DOCS}
    for row, req in zip(rows, srv.requests):
        assert req.path == "/v1/completions"
        payload = json.loads(req.body)["prompt"]
        # byte for byte the product's request for the payload it sent
        assert any(req.body == client.build_request(SUMMARIZE, t).body
                   for t in _payload_candidates(payload))
        doc = by_id[row["doc_id"]]
        # the realized utility is the FlowRecorder's: sim(original, restored answer)
        assert row["realized"] == pytest.approx(FakeEmbedder().similarity(doc.text,
                                                                          row["answer"]))
        assert row["meta"]["provider"] == "fake-gemma" and row["meta"]["model"] == "gemma-test"
        assert all(doc.text not in str(v) for v in row["meta"].values())
        assert row["features"]                          # fast features, as a real send
    placeholder = [r for r in rows if r["setting"]["kind"] == "placeholder"]
    assert placeholder and all(NAMES[0] in r["answer"] or NAMES[1] in r["answer"]
                               or NAMES[2] in r["answer"] for r in placeholder)  # restored


def test_a_rerun_resumes_without_repeating_a_send(run):
    srv, cache, more, _ = run
    more(max_stream=5)
    assert more(max_stream=5) == 0 and len(srv.requests) == 9
    assert more(max_stream=8) == 3 and len(srv.requests) == 12
    keys = [r["key"] for r in read_cache(cache)]
    assert len(keys) == len(set(keys)) == 12


def test_evaluate_scores_each_checkpoint_with_a_fresh_per_provider_learner(run, tmp_path):
    _, cache, more, _ = run
    more(max_stream=8)
    rows = read_cache(cache)
    shipped = synthetic_rows(n_docs=12)
    shipped_path = tmp_path / "shipped.csv"
    write_training_rows(shipped, shipped_path)
    prior = UtilityPredictor(fit_bundle(shipped))
    points = evaluate(rows, [0, 4, 8, 50], [1, 3], prior=prior, shipped_rows=shipped_path,
                      workdir=tmp_path)
    assert [(p["sends"], p["user_weight"]) for p in points] == [
        (0, None), (4, 1), (8, 1), (4, 3), (8, 3)]     # 50 > the stream: not scored
    evals = [r for r in rows if r["role"] == "eval"]
    assert all(p["n"] == len(evals) == 4 for p in points)
    prior_only = cost_metrics([r["realized"] for r in evals],
                              [prior.predict(r["features"]) for r in evals])
    assert points[0]["rmse"] == round(prior_only.rmse, 4)
    instant_only = cost_metrics([r["realized"] for r in evals],
                                [prior.predict_fast(r["features"]) for r in evals])
    assert points[0]["failed_instant_pct"] == round(instant_only.failed, 1)
    # the fake provider answers unlike the prior's rows: its own pairs must help
    assert points[-1]["rmse"] < points[0]["rmse"]
    assert not list(tmp_path.glob("tmp*"))             # each learner lived in a temp dir


def _payload_candidates(prompt: str) -> list[str]:
    """The sanitized text inside a completions prompt (``<text>\\n\\nTL;DR:``)."""
    return [prompt.rsplit("\n\nTL;DR:", 1)[0], prompt]


def test_a_broken_stream_skips_that_send_and_a_rerun_retries_it(run):
    srv, cache, more, _ = run
    srv.script(Reply(style="completions", deltas=["A ", "note ", "here."], truncate_after=1))
    assert more(max_stream=2) == 5                    # 4 eval + 2 stream, one broke
    assert len(srv.requests) == 6
    assert more(max_stream=2) == 1                    # the broken one, sent again
    assert len({r["key"] for r in read_cache(cache)}) == 6


def test_an_empty_cache_starts_from_the_committed_sends(tmp_path):
    import gzip

    from preflight_eval.flow_experiment import seed_cache

    rows = [{"key": "a", "role": "eval"}, {"key": "b", "role": "stream"}]
    committed = tmp_path / "flow-sends-x.jsonl.gz"
    committed.write_bytes(gzip.compress(
        "".join(json.dumps(r) + "\n" for r in rows).encode()))
    cache = tmp_path / "run" / "sends-x.jsonl"
    seed_cache(cache, committed)
    assert read_cache(cache) == rows
    # a cache that already holds sends (a run resuming) is never overwritten
    cache.write_text(json.dumps({"key": "c", "role": "eval"}) + "\n")
    seed_cache(cache, committed)
    assert [r["key"] for r in read_cache(cache)] == ["c"]
    # nothing committed: nothing to seed
    seed_cache(tmp_path / "other" / "sends.jsonl", tmp_path / "missing.jsonl.gz")
    assert not (tmp_path / "other").exists()
