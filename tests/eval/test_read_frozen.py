"""The frozen test set's one reading (preflight_eval.read_frozen), rehearsed on inputs that
are not the frozen set: the features phase on synthetic cloud rows with fake models, the
report's numbers by hand on a tiny example, and the guard that stops a second reading."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core" / "send"))
sys.path.insert(0, str(ROOT / "core" / "utility"))

from _fakes import FakeDetector  # noqa: E402
from _utility_fakes import FakeEmbedder, FakeSLM  # noqa: E402

from preflight.core.sanitize.restoring import restore  # noqa: E402
from preflight.core.utility.predictor import Estimate  # noqa: E402
from preflight_eval import frozen_report as fr  # noqa: E402
from preflight_eval import read_frozen  # noqa: E402
from preflight_eval.utility_data.corpus import DATA_DIR, Document, Question  # noqa: E402
from preflight_eval.utility_data.rows import feature_files  # noqa: E402
from preflight_eval.utility_data.settings import (  # noqa: E402
    DocumentContext, OperatorKind, Setting,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows  # noqa: E402

TEXT = ("Alice Martin wrote to Bob Stone about the budget of the Lyon office. The plan "
        "moves the support team before the end of the year, and Bob Stone agreed.")
QUESTION = Question("Who wrote to Bob Stone?", "Alice Martin", "test")
ORIGINAL_ANSWERS = {"summarize": "Alice Martin wrote about the budget.",
                    "question": "Alice Martin did."}
DOC = Document("judgment:001", "judgment", "echr", TEXT, questions=(QUESTION,))


class QuestionSLM(FakeSLM):
    """Records the question of every question request; answers it with the first words."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[str] = []

    def run(self, task, text, on_token=None, cancel=None):  # noqa: ANN001, ANN201
        if task.kind == "question":
            self.questions.append(task.question)
        return super().run(task, text, on_token, cancel)


def _cloud_rows(path: Path, kinds: dict) -> dict:
    """A cloud rows file as ``generate --frozen`` writes it: per task the unsanitized send
    (without the text: the documents' file has it) and one placeholder send."""
    ctx = DocumentContext(DOC.doc_id, TEXT, FakeDetector().detect(TEXT), 1)
    writer = ShardWriter(path)
    made = {}
    for task in ("summarize", "question"):
        extra = {"question": QUESTION.question, "reference": QUESTION.reference} \
            if task == "question" else {}
        orig = Setting("original", "none", task=task)
        writer.append({"doc_id": DOC.doc_id, "doc_kind": "judgment", "subkind": "echr",
                       "split": "frozen", "key": orig.key, "setting": orig.to_json(),
                       "answer": ORIGINAL_ANSWERS[task], "payload": TEXT,
                       "finish_reason": "stop", **extra})
        s = Setting("placeholder", "placeholder", None, 7, task=task)
        sanitized, _vault = kinds["placeholder"].sanitize(ctx, s)
        row = {"doc_id": DOC.doc_id, "doc_kind": "judgment", "subkind": "echr",
               "split": "frozen", "key": s.key, "setting": s.to_json(),
               "payload": sanitized.text, "finish_reason": "stop",
               "answer": "Alice Martin wrote in 1999 about the budget." if task == "question"
               else "Someone wrote about the budget.", **extra}
        writer.append(row)
        made[task] = row
    return made


def _features(tmp_path: Path, slm: FakeSLM, emb: FakeEmbedder, time_limit: float = 60.0):
    kinds = {"placeholder": OperatorKind("placeholder", 1.0)}
    rows_path = tmp_path / "cloud.jsonl.gz"
    if not rows_path.exists():
        _cloud_rows(rows_path, kinds)
    out = tmp_path / "features-frozen-x-y.jsonl.gz"
    job = read_frozen.feature_pass(
        rows_path, out, {DOC.doc_id: DOC},
        read_frozen.assessors(slm, emb, fr_predictor(), 48), FakeDetector(), 48,
        time_limit, kinds=kinds, seed=1)
    job.run()
    return job, rows_path, out


def fr_predictor():
    from _utility_fakes import LinearPredictor

    return LinearPredictor()


def test_features_phase_texts_from_documents_questions_restored_d_and_faithful_target(
        tmp_path: Path) -> None:
    slm, emb = QuestionSLM(), FakeEmbedder()
    job, rows_path, out = _features(tmp_path, slm, emb)
    rows = {r["setting"]["task"]: r for r in read_rows(out)}
    assert set(rows) == {"summarize", "question"}          # originals are not feature rows
    # the question row was measured under the question request (original and sanitized)
    assert slm.questions and set(slm.questions) == {QUESTION.question}
    assert sum(kind == "question" for kind, _t in slm.calls) == 2
    q = rows["question"]
    assert q["slm_answer_tokens"] == 48 and q["subkind"] == "echr"
    # D reads the local answer restored by the vault: placeholders gone, values back
    ctx = DocumentContext(DOC.doc_id, TEXT, FakeDetector().detect(TEXT), 1)
    _san, vault = OperatorKind("placeholder", 1.0).sanitize(
        ctx, Setting("placeholder", "placeholder", None, 7))
    restored = restore(q["slm_answer"], vault, exact_forms=False, secrets=False,
                       in_links=False)
    assert restored != q["slm_answer"] and q["d_restored"] is True
    assert q["features"]["sim_slm_sanitized"] == pytest.approx(emb.similarity(TEXT, restored),
                                                             abs=1e-5)
    # the target is the product's score: the cosine discounted by the invented year
    stored = {r["setting"]["task"]: r for r in read_rows(rows_path) if r["setting"]["kind"]
              != "original"}
    assert q["target_cosine"] == pytest.approx(emb.similarity(TEXT, stored["question"]["answer"]))
    assert q["unsupported_facts"] >= 1 and q["target"] < q["target_cosine"]
    s = rows["summarize"]
    assert s["unsupported_facts"] == 0 and s["target"] == pytest.approx(s["target_cosine"])
    # each task's own unsanitized send is its row's target_original
    for task, row in rows.items():
        assert row["target_original_cosine"] == pytest.approx(
            emb.similarity(TEXT, ORIGINAL_ANSWERS[task]))
    # a rerun resumes: nothing left to do
    again, _, _ = _features(tmp_path, QuestionSLM(), emb)
    assert again.n_new == 0 and len(read_rows(out)) == 2


def test_features_phase_stops_at_its_time_limit_and_resumes(tmp_path: Path) -> None:
    job, _rows, out = _features(tmp_path, QuestionSLM(), FakeEmbedder(), time_limit=0.0)
    assert job.n_new == 0 and not read_rows(out)
    job, _rows, out = _features(tmp_path, QuestionSLM(), FakeEmbedder())
    assert job.n_new == 2 and read_rows(out)


def test_the_frozen_features_file_is_in_no_report_training_or_study(tmp_path: Path) -> None:
    for name in ("features-cloud_qwen15-slm.jsonl.gz",
                 "features-frozen-cloud_qwen15-slm_qwen05.jsonl.gz"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for _c, _s, p in feature_files(tmp_path)] == [
        "features-cloud_qwen15-slm.jsonl.gz"]
    assert read_frozen.FEATURES.name.startswith("features-frozen-")


# -- the report, by hand ------------------------------------------------------------------
def _row(doc: str, kind: str, task: str, target: float, eps: float | None = None) -> dict:
    return {"group": doc, "key": f"{kind}|{task}|{eps}", "kind": kind, "task": task,
            "variant": "plain", "target": target, "epsilon_setting": eps,
            "document_kind": "judgment" if doc in "AB" else "manpage",
            "epsilon": eps if eps is not None else float("nan"),
            "method_dx": float(kind == "dx"), "method_placeholder": float(kind == "placeholder")}


TINY = [_row("A", "placeholder", "summarize", 0.80), _row("A", "dx", "summarize", 0.30, 1.0),
        _row("B", "placeholder", "summarize", 0.62), _row("B", "dx", "summarize", 0.50, 1.0),
        _row("C", "placeholder", "summarize", 0.70), _row("C", "placeholder", "question", 0.20),
        _row("D", "placeholder", "question", 0.45)]


class OffsetPredictor:
    """Full = realized + ``full``; instant = realized + 0.2 on placeholder rows, exact on
    d_X; the bundle's verdict shows the refined value for placeholders."""

    metrics = {"refinement": {"placeholder": {"show": "refined"}}}

    def __init__(self, full: float = 0.05) -> None:
        self.full = full

    def estimate(self, r, *, refined=True, corrected=False, explain=True):  # noqa: ANN001, ANN201
        if refined:
            return Estimate(r["target"] + self.full, "full")
        return Estimate(r["target"] + (0.2 if r["kind"] == "placeholder" else 0.0), "fast")


def _train() -> list[dict]:
    """Training rows whose realized utility is always 0.5: the ε-only model predicts 0.5."""
    return [dict(_row(f"t{i}", kind, "summarize", 0.5, 1.0 + i if kind == "dx" else None),
                 split="train") for i in range(12) for kind in ("dx", "placeholder")]


def test_the_per_setting_mean_leaves_the_document_out_and_keeps_to_its_task() -> None:
    got = fr.leave_document_out_mean(TINY)
    # A placeholder: B and C's summaries (0.62, 0.70), never A's own 0.80 nor a question;
    # the d_X rows: the other document's d_X row of the same ε bin
    assert got == pytest.approx([0.66, 0.50, 0.75, 0.30, 0.71, 0.45, 0.20])


def test_the_reading_by_hand() -> None:
    result = fr.reading(TINY, OffsetPredictor(), _train())
    a = result["all"]
    assert a["rows"] == 7
    assert a[fr.FULL]["failed_pct"] == 0.0
    assert a[fr.INSTANT]["failed_pct"] == pytest.approx(100 * 5 / 7, abs=0.05)
    assert a[fr.SHOWN]["failed_pct"] == 0.0            # refined for placeholders, instant d_X
    # ε-only at 0.5: off by more than 0.1 on 0.80, 0.30, 0.62, 0.70, 0.20
    assert a[fr.BASELINE]["failed_pct"] == pytest.approx(100 * 5 / 7, abs=0.05)
    # leave-document-out: off on every row but C's summary (0.71 against 0.70)
    assert a[fr.SETTING_MEAN]["failed_pct"] == pytest.approx(100 * 6 / 7, abs=0.05)
    assert a[fr.FULL]["rmse"] == pytest.approx(0.05, abs=1e-6)
    assert result["by_task"]["question"]["rows"] == 2
    assert result["by_task"]["question"][fr.SETTING_MEAN]["failed_pct"] == 100.0
    assert result["by_document_kind"]["manpage"]["rows"] == 3
    assert result["by_setting_kind"]["dx"][fr.INSTANT]["failed_pct"] == 0.0
    acc = fr.acceptance(result)
    assert acc["met"] is True
    assert acc["refined_not_worse_by_kind"] == {"dx": True, "placeholder": True}
    worse = fr.acceptance(fr.reading(TINY, OffsetPredictor(full=0.15), _train()))
    assert worse["met"] is False
    assert [c["met"] for c in worse["checks"].values()] == [False, False, False]
    assert worse["refined_not_worse_by_kind"]["dx"] is False
    text = fr.format_report(dict(result, acceptance=acc))
    assert "| manpage | 3 |" in text and "Acceptance (issue 47): MET" in text


# -- the guard, through the command -------------------------------------------------------
def _small_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """Six feature rows of the committed features file from split-v1's TEST documents
    (never the frozen set) and the cloud rows' keys they come from."""
    from preflight_eval.utility_data.corpus import split_of

    src = read_rows(DATA_DIR / "features-cloud_qwen15-slm_qwen05.jsonl.gz")
    picked = [r for r in src if split_of(r["doc_id"]) == "test"
              and not r["setting"].get("corrected")][:6]
    feats = tmp_path / "features-frozen-rehearsal-slm_qwen05.jsonl.gz"
    writer = ShardWriter(feats)
    for r in picked:
        writer.append(r)
    cloud = tmp_path / "cloud.jsonl.gz"
    writer = ShardWriter(cloud)
    for r in picked:
        writer.append({"doc_id": r["doc_id"], "key": r["key"], "setting": r["setting"],
                       "answer": "x", "finish_reason": "stop"})
    return feats, cloud


@pytest.mark.skipif(not (DATA_DIR / "features-cloud_qwen15-slm_qwen05.jsonl.gz").exists(),
                    reason="the committed features file")
def test_the_report_runs_once_and_records_its_reading(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    feats, cloud = _small_inputs(tmp_path)
    marker = tmp_path / "frozen-read.json"
    args = ["--report", "--input", str(cloud), "--out", str(feats), "--marker", str(marker),
            "--json", str(tmp_path / "r.json")]
    assert read_frozen.main(args) == 0
    out = capsys.readouterr().out
    assert "Acceptance (issue 47)" in out
    read = json.loads(marker.read_text())
    assert len(read["readings"]) == 1 and len(read["readings"][0]["bundle"]["sha256"]) == 64
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["rows"] == 6 and len(result["predictions"]) == 6
    assert result["training_rows"] > 1000           # the shipped bundle's train + calibration
    # the shipped bundle's own predictions of these rows
    from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

    pred = UtilityPredictor.load(shipped_bundle_path("slm_qwen05"), prefer_user=False)
    first = fr.frozen_rows(feats)[0]
    assert result["predictions"][0][fr.FULL] == pytest.approx(
        pred.estimate(first, refined=True, explain=False).value, abs=1e-4)
    assert result["predictions"][0][fr.INSTANT] == pytest.approx(
        pred.estimate(first, refined=False, explain=False).value, abs=1e-4)
    # a second reading is refused, and recorded only when asked for
    assert read_frozen.main(args) == 3
    assert "read already" in capsys.readouterr().err
    assert len(json.loads(marker.read_text())["readings"]) == 1
    assert read_frozen.main([*args, "--again"]) == 0
    assert len(json.loads(marker.read_text())["readings"]) == 2


def test_the_report_refuses_incomplete_features(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    feats, cloud = _small_inputs(tmp_path)
    extra = {"doc_id": "other", "key": "placeholder|placeholder|-|1|0",
             "setting": {"kind": "placeholder"}, "answer": "x", "finish_reason": "stop"}
    ShardWriter(cloud).append(extra)
    marker = tmp_path / "frozen-read.json"
    args = ["--report", "--input", str(cloud), "--out", str(feats), "--marker", str(marker)]
    assert read_frozen.main(args) == 2
    assert "1 of 7 answered rows have no features" in capsys.readouterr().err
    assert not marker.exists()                          # nothing was read


def test_answered_keys_leave_originals_and_errors_out(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.gz"
    w = ShardWriter(path)
    w.append({"doc_id": "d", "key": "o", "setting": {"kind": "original"}, "answer": "a",
              "finish_reason": "stop"})
    w.append({"doc_id": "d", "key": "e", "setting": {"kind": "placeholder"}, "error": "x"})
    w.append({"doc_id": "d", "key": "p", "setting": {"kind": "placeholder"}, "answer": "a",
              "finish_reason": "stop"})
    assert read_frozen.answered_keys(path) == {("d", "p")}


def test_shards_split_the_documents() -> None:
    assert read_frozen.shard_of("1/2") == (1, 2)
    with pytest.raises(ValueError):
        read_frozen.shard_of("2/2")


def _report(kinds: dict[str, float], questions: float | None) -> dict:
    def shown(pct: float) -> dict:
        return {"shown": {"failed_pct": pct}}

    return {"documents": 7, "rows": 40, "all": shown(61.6),
            "by_document_kind": {k: shown(v) for k, v in kinds.items()},
            "by_task": {} if questions is None else {"question": shown(questions)},
            "reading_of": {"read_at": "2026-12-03T09:59:48+00:00"}}


def test_the_scope_gets_the_readings_misses_and_keeps_the_rest(tmp_path: Path) -> None:
    from preflight.core.utility.scope import MeasuredScope, UnseenReading

    scope_file, report = tmp_path / "scope.json", tmp_path / "report.json"
    MeasuredScope(95, 424, "summaries", meta={"documents": 476}).save(scope_file)
    report.write_text(json.dumps(_report({"judgment": 69.0, "manpage": 44.6, "readme": 60.0},
                                         77.1)), encoding="utf-8")
    assert read_frozen.main(["--scope", "--json", str(report),
                             "--scope-file", str(scope_file)]) == 0
    back = MeasuredScope.load(scope_file)
    assert back is not None and (back.shortest, back.longest) == (95, 424)
    assert back.meta["documents"] == 476
    assert UnseenReading.from_json(back.meta["unseen"]) == UnseenReading(
        "court judgments, manual pages and READMEs", 7, 40, 0.616, 0.771)
    # one kind, no question sends
    assert read_frozen.unseen_entry(_report({"readme": 50.0}, None))["kinds"] == "READMEs"
    assert read_frozen.unseen_entry(_report({"readme": 50.0}, None))["missed_questions"] is None
    # no report: refused, the file untouched
    before = scope_file.read_text(encoding="utf-8")
    assert read_frozen.main(["--scope", "--json", str(tmp_path / "none.json"),
                             "--scope-file", str(scope_file)]) == 2
    assert scope_file.read_text(encoding="utf-8") == before


def test_the_shipped_scope_says_the_committed_reading() -> None:
    """resources/utility/scope.json's ``unseen`` entry is the committed report's (stale
    after another reading without ``--scope`` → fails)."""
    from preflight.core.utility.scope import MeasuredScope

    report = DATA_DIR / "frozen-report.json"
    if not report.exists():
        pytest.fail("data/utility/frozen-report.json is missing: the frozen set was read")
    scope = MeasuredScope.load()
    assert scope is not None
    want = read_frozen.unseen_entry(json.loads(report.read_text(encoding="utf-8")))
    assert scope.meta.get("unseen") == want
