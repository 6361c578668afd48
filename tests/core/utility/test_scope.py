"""The utility prediction's measured scope (core.utility.scope): a document inside the
training documents' length range and a plain summary are inside; a shorter or longer
document, a question, the user's own instruction or a follow-up are outside; the shipped
file is the training documents' own range."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from preflight.core.tasks import SUMMARIZE, Task, Turn
from preflight.core.utility.features import word_count
from preflight.core.utility.scope import FORMAT, MeasuredScope

ON = "summaries of papers"
SCOPE = MeasuredScope(10, 20, ON)


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize("n, inside", [(9, False), (10, True), (15, True), (20, True),
                                       (21, False)])
def test_a_summary_is_inside_exactly_within_the_measured_length(n, inside) -> None:
    v = SCOPE.verdict(_words(n), SUMMARIZE)
    assert v is not None and v.words == n and v.inside is inside
    assert v.length_inside is inside and v.task_measured
    assert (v.shortest, v.longest, v.measured_on) == (10, 20, ON)


@pytest.mark.parametrize("task", [
    Task("question", question="Who signed it?"),
    Task("summarize", note="for the board, in five bullets"),
    Task("summarize", history=(Turn("summarize", "", "", "An earlier answer."),)),
    Task("correct"),
])
def test_a_task_never_measured_is_outside_whatever_the_length(task) -> None:
    v = SCOPE.verdict(_words(15), task)
    assert v is not None and v.length_inside and not v.task_measured and not v.inside


def test_nothing_is_said_of_an_empty_text() -> None:
    assert SCOPE.verdict("  \n", SUMMARIZE) is None


def test_the_file_round_trips_and_a_broken_one_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "scope.json"
    MeasuredScope(95, 424, ON, meta={"documents": 476}).save(path)
    back = MeasuredScope.load(path)
    assert back == MeasuredScope(95, 424, ON, ("summarize",), {"documents": 476})
    for broken in ("{", "[]", json.dumps({"format": FORMAT - 1, "shortest": 1,
                                          "longest": 2, "measured_on": ON}),
                   json.dumps({"format": FORMAT, "shortest": 30, "longest": 20,
                               "measured_on": ON}),
                   json.dumps({"format": FORMAT, "shortest": "many", "longest": 20,
                               "measured_on": ON})):
        path.write_text(broken, encoding="utf-8")
        assert MeasuredScope.load(path) is None, broken
    assert MeasuredScope.load(tmp_path / "missing.json") is None


def test_the_shipped_scope_is_the_training_documents_length_range() -> None:
    """resources/utility/scope.json against the documents the shipped regressor was
    trained and calibrated on (their unsanitized sends): stale after a retrain → fails."""
    scope = MeasuredScope.load()
    assert scope is not None, "resources/utility/scope.json is missing"
    root = Path(__file__).resolve().parents[3] / "data" / "utility"
    splits = json.loads((root / "split-v1.json").read_text())["splits"]
    trained = set(splits["train"]) | set(splits["calibration"])
    words = {}
    with gzip.open(root / "cloud_qwen15.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["doc_id"] in trained and r["setting"]["kind"] == "original" and r.get("text"):
                words.setdefault(r["doc_id"], word_count(r["text"]))
    assert len(words) >= 400
    assert (scope.shortest, scope.longest) == (min(words.values()), max(words.values()))
    assert scope.tasks == ("summarize",)


def test_the_unseen_reading_is_read_from_the_file_and_a_broken_one_is_not(
        tmp_path: Path) -> None:
    from preflight.core.utility.scope import UnseenReading

    good = {"kinds": "manual pages", "documents": 5, "sends": 60, "missed": 0.5,
            "missed_questions": 0.75}
    path = tmp_path / "scope.json"
    MeasuredScope(10, 20, ON, meta={"unseen": good}).save(path)
    scope = MeasuredScope.load(path)
    assert scope is not None
    v = scope.verdict(_words(15), Task("question", question="Who?"))
    assert v is not None and v.task_kind == "question"
    assert v.unseen == UnseenReading("manual pages", 5, 60, 0.5, 0.75)
    assert v.to_json()["unseen"]["missed"] == 0.5
    for broken in ({**good, "missed": 1.5}, {**good, "sends": 0}, {**good, "kinds": ""},
                   {k: v for k, v in good.items() if k != "documents"},
                   {**good, "missed_questions": "many"}, "62 %", None):
        MeasuredScope(10, 20, ON, meta={"unseen": broken}).save(path)
        scope = MeasuredScope.load(path)
        assert scope is not None and scope.verdict(_words(15)).unseen is None, broken
