"""The data-set generator sends through the product's own send path (same request bytes
as ``ProviderClient.build_request``, answers restored like a real send) and resumes
after a kill without duplicating rows."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402

from preflight.core.send.providers import create_client  # noqa: E402
from preflight.core.tasks import SUMMARIZE, Task  # noqa: E402
from preflight_eval.utility_data.corpus import (  # noqa: E402
    E2E_RESERVED, Document, Question, held_out_documents, split_for,
)
from preflight_eval.utility_data.generate import (  # noqa: E402
    Generator, ProductSender, standin_provider, visiting_order,
)
from preflight_eval.utility_data.settings import OperatorKind, Setting  # noqa: E402
from preflight_eval.utility_data.shards import read_rows  # noqa: E402

DOCS = [
    Document("memo:0000", "business", "memo",
             "Alice Martin wrote to bob@example.com about the budget. Call +44 20 7946 0958 "
             "before Friday; the plan for Lyon is late."),
    Document("aclsum:X1", "aclsum", "paper",
             "We study summarization of scientific papers. Carol Diaz built the corpus and "
             "the results improve on earlier work by two points."),
]


class CorrectedRedact(OperatorKind):
    """A test kind whose setting asks for the correction step."""

    def sample(self, ctx):  # noqa: ANN001, ANN201
        return [Setting(self.name, "redact", None, 5, corrected=True)]


def _generator(out: Path, url: str, kinds: dict) -> Generator:
    args = argparse.Namespace(out=str(out), time_limit=60.0, max_docs=0, seed=1,
                              first_split=None, cloud_role="cloud_test",
                              corrector_name="upper-case test repair")
    detector = FakeDetector()
    sender = ProductSender(standin_provider(url, "standin-model"), detector,
                           out / "audit.sqlite3")
    return Generator(args, sender, detector, kinds, str.upper, {"role": "cloud_test"})


def _kinds() -> dict:
    return {"placeholder": OperatorKind("placeholder", 1.0),
            "redact": OperatorKind("redact", 1.0),
            "redact_fixed": CorrectedRedact("redact_fixed", 1.0)}


def test_request_is_the_products_and_answers_are_restored(tmp_path: Path) -> None:
    with CaptureServer() as srv:
        srv.default = Reply(deltas=["About ", "<PERSON_1>", "."])
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.run(DOCS)
        rows = read_rows(gen.path)
        assert len(rows) == len(DOCS) * 4 == len(srv.requests)   # original + 3 settings
        client = create_client(standin_provider(srv.url, "standin-model"))
        for row, req in zip(rows, srv.requests):
            expected = client.build_request(SUMMARIZE, row["payload"])
            assert req.body == expected.body            # byte for byte the product's request
            assert req.path == "/v1/chat/completions"
            assert row["request_sha256"] == hashlib.sha256(req.body).hexdigest()
            body = json.loads(req.body)
            assert body["max_tokens"] == SUMMARIZE.max_tokens and body["stream"] is True
    by_kind = {(r["doc_id"], r["setting"]["kind"]): r for r in rows}
    original = by_kind[("memo:0000", "original")]
    assert original["payload"] == original["text"] == DOCS[0].text
    ph = by_kind[("memo:0000", "placeholder")]
    assert "Alice Martin" not in ph["payload"] and "<PERSON_1>" in ph["payload"]
    assert ph["answer_raw"] == "About <PERSON_1>." and ph["answer"] == "About Alice Martin."
    assert by_kind[("memo:0000", "redact")]["answer"] == "About <PERSON_1>."   # no vault
    fixed = by_kind[("memo:0000", "redact_fixed")]
    assert fixed["payload"] == fixed["sanitized"].upper() != fixed["sanitized"]


def test_resume_after_a_kill_adds_only_the_missing_rows(tmp_path: Path) -> None:
    with CaptureServer() as srv:
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.run(DOCS)
        first = read_rows(gen.path)
        again = _generator(tmp_path, srv.url, _kinds())
        again.run(DOCS)
        assert again.n_new == 0 and len(srv.requests) == len(first)
        # a kill while the last row was being written leaves half a gzip member
        data = gen.path.read_bytes()
        members = _member_offsets(data)
        gen.path.write_bytes(data[: members[-1] + (len(data) - members[-1]) // 2])
        assert len(read_rows(gen.path)) == len(first) - 1
        resumed = _generator(tmp_path, srv.url, _kinds())
        assert resumed.writer.repaired_bytes > 0
        resumed.run(DOCS)
        assert resumed.n_new == 1
        rows = read_rows(gen.path)
        keys = [(r["doc_id"], r["key"]) for r in rows]
        assert len(keys) == len(set(keys)) == len(first)
        assert set(keys) == {(r["doc_id"], r["key"]) for r in first}


def _member_offsets(data: bytes) -> list[int]:
    """Start offset of every gzip member (each row is one)."""
    import zlib

    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        d = zlib.decompressobj(wbits=31)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return starts


def test_a_dropped_stream_is_not_recorded_and_is_sent_again(tmp_path: Path) -> None:
    """llama-cpp-python's server ends a streaming request with no text and no finish
    reason when another client's request arrives: such a send is not a data row."""
    with CaptureServer() as srv:
        srv.default = Reply(deltas=[], finish=False)
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.run(DOCS[:1])
        assert len(srv.requests) == 4 and gen.n_new == 0 and not read_rows(gen.path)
        srv.default = Reply(deltas=["About ", "it", "."])
        again = _generator(tmp_path, srv.url, _kinds())
        again.run(DOCS[:1])
        rows = read_rows(gen.path)
        assert again.n_new == 4 and all(r["answer"] == "About it." for r in rows)


def test_the_feature_pass_skips_a_dropped_stream() -> None:
    from preflight_eval.utility_data.features import interrupted

    assert interrupted({"answer": "", "finish_reason": None})
    assert not interrupted({"answer": "", "finish_reason": "stop"})   # an empty answer given
    assert not interrupted({"answer": "x", "finish_reason": None})
    assert not interrupted({"error": "d_X failed", "finish_reason": None})


def test_a_stop_or_a_failing_stand_in_ends_with_a_resumable_exit_code(tmp_path: Path) -> None:
    from preflight.core.errors import ProviderError
    from preflight_eval.utility_data.generate import against_standin

    def stopped(url: str) -> int:
        raise KeyboardInterrupt

    def failing(url: str) -> int:
        raise ProviderError("The provider did not answer.", "Try again.")

    seen: list[str] = []
    assert against_standin(tmp_path / "none.gguf", 1, tmp_path,
                           lambda url: seen.append(url) or 0, "http://127.0.0.1:9/v1") == 0
    assert seen == ["http://127.0.0.1:9/v1"]          # an existing server: none started
    assert against_standin(tmp_path / "none.gguf", 1, tmp_path, stopped, "http://x") == 130
    assert against_standin(tmp_path / "none.gguf", 1, tmp_path, failing, "http://x") == 1


def test_visiting_the_test_split_first_keeps_positions_and_the_end_to_end_documents() -> None:
    docs = [Document(f"{kind}:{i:04d}", kind, kind, "text") for i in range(80)
            for kind in ("memo", "aclsum", "email")]
    reserved = {d.doc_id for d in held_out_documents(docs, E2E_RESERVED)}
    assert len(reserved) == E2E_RESERVED

    plain = visiting_order(docs)
    assert [d.doc_id for _i, d in plain] == [d.doc_id for d in docs if d.doc_id not in reserved]
    assert all(docs[i] is d for i, d in plain)          # positions are generation order

    first = visiting_order(docs, "test")
    splits = [split_for(d.doc_id) for _i, d in first]
    n_test = splits.count("test")
    assert n_test > 0 and set(splits[:n_test]) == {"test"} and "test" not in splits[n_test:]
    assert sorted(first, key=lambda v: v[0]) == plain   # the same visits, reordered
    assert all(docs[i] is d for i, d in first)          # each keeps its own position
    assert not reserved & {d.doc_id for _i, d in first}


JUDGMENT = Document(
    "echr:T-0001", "judgment", "echr",
    "PROCEDURE\n\nThe case originated in an application against the Kingdom of Ruritania "
    "lodged by Alice Martin on 3 May 2004. She was represented by Bob Stone, a lawyer "
    "practising in Lyon.\n\nTHE FACTS\n\nThe applicant was dismissed after she wrote to "
    "the ministry at alice@example.org.",
    questions=(Question("Who represented the applicant?", "Bob Stone", "test"),))


def test_the_question_task_sends_the_products_question_request_and_is_recorded(
        tmp_path: Path) -> None:
    with CaptureServer() as srv:
        srv.default = Reply(deltas=["It was ", "<PERSON_2>", "."])
        gen = _generator(tmp_path, srv.url, {"placeholder": OperatorKind("placeholder", 1.0)})
        gen.args.frozen = True
        gen.path = tmp_path / "frozen-cloud_test.jsonl.gz"
        gen.writer = type(gen.writer)(gen.path)
        gen.run([JUDGMENT])
        rows = read_rows(tmp_path / "frozen-cloud_test.jsonl.gz")
        assert [(r["setting"]["kind"], r["setting"]["task"]) for r in rows] == [
            ("original", "summarize"), ("placeholder", "summarize"),
            ("original", "question"), ("placeholder", "question")]
        client = create_client(standin_provider(srv.url, "standin-model"))
        question = Task("question", question="Who represented the applicant?")
        for row, req in zip(rows, srv.requests):
            task = question if row["setting"]["task"] == "question" else SUMMARIZE
            assert req.body == client.build_request(task, row["payload"]).body
            assert row["split"] == "frozen"
    asked = [r for r in rows if r["setting"]["task"] == "question"]
    assert all(r["key"].endswith("|question") and r["question"] == question.question
               and r["reference"] == "Bob Stone" for r in asked)
    ph = next(r for r in asked if r["setting"]["kind"] == "placeholder")
    assert "Bob Stone" not in ph["payload"] and ph["answer"] == "It was Bob Stone."
    summaries = [r for r in rows if r["setting"]["task"] == "summarize"]
    assert all("question" not in r and not r["key"].endswith("question") for r in summaries)


def test_a_summary_keeps_the_key_its_rows_were_stored_under() -> None:
    """Rows written before the task dimension are found again (the generator resumes
    on keys): a summary's key has no task in it, and a stored setting still loads."""
    s = Setting("dx", "dx", 12.5, 7, corrected=True)
    assert s.key == "dx|dx|12.5|7|1"
    assert Setting("dx", "dx", 12.5, 7, True, task="question").key == "dx|dx|12.5|7|1|question"
    stored = {"kind": "dx", "method": "dx", "epsilon": 12.5, "seed": 7, "corrected": True}
    assert Setting(**stored) == s
