"""The repeat study sends a stored request again, byte for byte (checked by its sha256),
only for rows whose answer needed no restoring; it resumes without sending twice, never
sends a request it cannot rebuild, and its floor is the spread of E within a request."""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fakes import FakeDetector  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from test_utility_generate import DOCS, _generator, _kinds  # noqa: E402

from preflight_eval.utility_data import repeat  # noqa: E402
from preflight_eval.utility_data.generate import standin_provider  # noqa: E402
from preflight_eval.utility_data.shards import ShardWriter, read_rows  # noqa: E402


@pytest.fixture(autouse=True)
def _same_model_name(monkeypatch):
    # the test generator names its stand-in's model "standin-model" in the request (the
    # real one names the role): the repeat must rebuild the request the rows were sent with
    monkeypatch.setattr(repeat, "standin_provider",
                        lambda url, _role: standin_provider(url, "standin-model"))


def _args(data: Path, **kw) -> argparse.Namespace:
    return argparse.Namespace(**{"data": str(data), "cloud_role": "cloud_test", "rows": 10,
                                 "repeats": 2, "seed": 0, "time_limit": 60.0, **kw})


def test_the_stored_request_is_sent_again_and_resumes(tmp_path: Path) -> None:
    with CaptureServer() as srv:
        srv.default = Reply(deltas=["About ", "<PERSON_1>", "."])
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.run(DOCS)
        stored = read_rows(gen.path)
        sent_before = len(srv.requests)
        assert repeat._send_all(_args(tmp_path), srv.url, FakeDetector(), tmp_path) == 0
        again = srv.requests[sent_before:]
        # the unsanitized texts and the redactions; placeholders need their vault and the
        # corrected redaction's answer is not comparable (a repair ran first): left out
        chosen = {(r["doc_id"], r["key"]): r for r in stored
                  if r["setting"]["kind"] in ("original", "redact")}
        assert len(again) == 2 * len(chosen) == 8
        by_sha = {r["request_sha256"] for r in chosen.values()}
        assert {hashlib.sha256(req.body).hexdigest() for req in again} == by_sha
        answers = read_rows(tmp_path / "repeats-cloud_test.jsonl.gz")
        assert {(a["doc_id"], a["key"]) for a in answers} == set(chosen)
        assert all(a["same_request"] and a["answer"] == "About <PERSON_1>." for a in answers)
        assert sorted(a["repeat"] for a in answers) == [1, 1, 1, 1, 2, 2, 2, 2]
        # a rerun sends nothing; a third repeat asked for sends one more per row
        repeat._send_all(_args(tmp_path), srv.url, FakeDetector(), tmp_path)
        assert len(srv.requests) == sent_before + 8
        repeat._send_all(_args(tmp_path, repeats=3), srv.url, FakeDetector(), tmp_path)
        assert len(srv.requests) == sent_before + 12


def test_a_request_that_cannot_be_rebuilt_is_not_sent(tmp_path: Path) -> None:
    with CaptureServer() as srv:
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.run(DOCS[:1])
        rows = read_rows(gen.path)
        # the stored request's hash no longer matches the payload (a changed product
        # request): the study must not pass another request off as the same one
        target = next(r for r in rows if r["setting"]["kind"] == "redact")
        gen.path.unlink()
        writer = ShardWriter(gen.path)
        for r in rows:
            writer.append(dict(r, request_sha256="0" * 64) if r is target else r)
        sent_before = len(srv.requests)
        repeat._send_all(_args(tmp_path), srv.url, FakeDetector(), tmp_path)
        answers = read_rows(tmp_path / "repeats-cloud_test.jsonl.gz")
        refused = [a for a in answers if a["key"] == target["key"]]
        assert len(refused) == 1 and not refused[0]["same_request"]
        assert "answer" not in refused[0]
        assert len(srv.requests) == sent_before + 2       # the original's two repeats only


def test_the_floor_is_the_spread_within_a_request() -> None:
    # σ² pooled over the requests: ((0.1² + 0.1²) + 0) / 2 degrees of freedom = 0.01
    f = repeat.floor_report([[0.5, 0.7], [0.2, 0.2], [0.9]])
    assert f["requests"] == 2 and f["answers"] == 4
    assert f["sigma"] == pytest.approx(0.1)
    assert f["pairs_apart"] == 0.5 and f["floor_pairs"] == 0.5
    assert f["floor_normal"] == pytest.approx(math.erfc(1 / math.sqrt(2)), abs=1e-4)
    assert repeat.floor_report([[0.4]]) == {"requests": 0}


def test_the_report_reads_each_row_per_setting_and_per_kind_of_document() -> None:
    rows = [{"setting": {"kind": k}, "doc_kind": d}
            for k, d in [("dx", "email"), ("original", "aclsum"), ("dx", "business")]]
    groups = [g for r in rows for g in repeat.report_groups(r)]
    assert groups.count("all") == 3 and groups.count("dx") == 2
    assert repeat.table_order(set(groups)) == [
        "all", "dx", "original", "aclsum documents", "business documents", "email documents"]
