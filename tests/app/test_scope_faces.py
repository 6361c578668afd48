"""Both faces say what the utility prediction was measured on, and mark a document or task
outside it (the shipped scope file: the training documents' length range, summaries only)
— the window's doorway and `preflight assess`, over the fakes (``rig``)."""

from __future__ import annotations

import contextlib
import io
import threading

import pytest
from cli_out import cli_json

from preflight.app.prediction import measured_on_text, scope_text
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.utility.scope import MeasuredScope, ScopeVerdict, UnseenReading

ON = "summaries of papers"
SENTENCE = ("Jane Doe met Max Power in Berlin on Friday to review the quarterly budget "
            "and the launch plan. ")


def _doc(words_wanted: int) -> str:
    per = len(SENTENCE.split())
    return SENTENCE * max(1, words_wanted // per)


@pytest.fixture(scope="module")
def shipped() -> MeasuredScope:
    scope = MeasuredScope.load()
    assert scope is not None, "resources/utility/scope.json is missing"
    return scope


def test_the_words_say_what_is_outside_and_what_was_measured() -> None:
    assert scope_text(None) == "" and measured_on_text(None) == ""
    assert scope_text(ScopeVerdict(50, 10, 90, ON)) == ""
    long = scope_text(ScopeVerdict(1200, 95, 424, ON))
    assert long.startswith("Outside what it was trained on") and "1,200 words" in long
    assert "95–424" in long and "summaries only" not in long
    question = scope_text(ScopeVerdict(200, 95, 424, ON, task_measured=False))
    assert "summaries only" in question and "words" not in question
    said = measured_on_text(ScopeVerdict(200, 95, 424, ON))
    assert ON in said and "95–424 words" in said and "were not measured" in said


def test_the_words_say_how_the_value_did_on_kinds_it_never_trained_on() -> None:
    seen = UnseenReading("court judgments and READMEs", 105, 1260, 0.616, 0.771)
    said = measured_on_text(ScopeVerdict(200, 95, 424, ON, unseen=seen))
    assert ON in said and "court judgments and READMEs" in said
    assert "62% of 1,260 sends" in said and "105 documents" in said
    assert "not measured" not in said
    long = scope_text(ScopeVerdict(1200, 95, 424, ON, unseen=seen))
    assert "62" in long and "77" not in long
    question = scope_text(ScopeVerdict(200, 95, 424, ON, False, "question", seen))
    assert "questions" in question and "77" in question and "62" not in question
    # an instruction of the user's own on a summary: the all-sends figure
    note = scope_text(ScopeVerdict(200, 95, 424, ON, False, "summarize", seen))
    assert "62" in note and "77" not in note
    no_questions = UnseenReading("READMEs", 3, 30, 0.5)
    assert "50" in scope_text(ScopeVerdict(200, 95, 424, ON, False, "question", no_questions))


def test_the_window_marks_a_long_document_and_a_question(rig, shipped) -> None:
    door = rig.doorway()
    middle = (shipped.shortest + shipped.longest) // 2
    for text, task, inside in ((_doc(middle), SUMMARIZE, True),
                               (_doc(3 * shipped.longest), SUMMARIZE, False),
                               (_doc(middle), Task("question", question="Who met?"), False)):
        spans = door.detect(text)
        sanitized, vault = door.sanitize(door.policy("placeholder"), text, spans, seed=7)
        fast = door.predict_fast(text, sanitized, spans, task)
        refined = door.predict_refined(text, sanitized, spans, task, threading.Event(), vault)
        for pred in (fast, refined):
            assert pred.scope is not None and pred.scope.inside is inside
            assert pred.scope.measured_on == shipped.measured_on


@pytest.mark.parametrize("inside", [True, False])
def test_assess_marks_a_document_outside(rig, shipped, tmp_path, inside) -> None:
    words = (shipped.shortest + shipped.longest) // 2 if inside else 3 * shipped.longest
    doc = tmp_path / "doc.txt"
    doc.write_text(_doc(words), encoding="utf-8")
    got = cli_json("assess", str(doc), "-m", "placeholder", "--seed", "7", "--json")
    assert got["scope"]["inside"] is inside
    assert got["scope"]["measured_words"] == [shipped.shortest, shipped.longest]
    # the frozen reading's figures, as the window says them
    assert got["scope"]["unseen"]["sends"] == shipped.meta["unseen"]["sends"]
    from preflight.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["assess", str(doc), "-m", "placeholder", "--seed", "7"]) == 0
    assert ("Outside what it was trained on" in out.getvalue()) is not inside
    assert shipped.measured_on in out.getvalue()      # what it was measured on, either way
