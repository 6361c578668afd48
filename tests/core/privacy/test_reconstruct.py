"""The reconstruction attack, scored against a fake local model that answers what the
test says (checked against the LanguageModel protocol)."""

from __future__ import annotations

import inspect
import threading
from typing import Callable

import pytest

from preflight.core.ports import LanguageModel
from preflight.core.privacy.reconstruct import (
    ReconstructionAttack, ReconstructTask, alterations, attack_window, score,
)
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.tasks import Task
from preflight.core.types import Category, Change, DxReport, SanitizedText, SanitizeReport, Span

TEXT = ("Maria Keller called 0412 345 678 from 14 George Street. The nurse said Maria "
        "would come back on Monday.")
D = Category.DIRECT_IDENTIFIER


def _span(value: str, typ: str) -> Span:
    start = TEXT.index(value)
    return Span(start, start + len(value), typ, D, 0.9, "test", "test")


# The detector "missed" the second Maria: the context gives her away.
SPANS = [_span("Maria Keller", "PERSON"), _span("0412 345 678", "PHONE_NUMBER"),
         _span("14 George Street", "STREET_ADDRESS")]


class FakeSLM:
    """Answers a fixed text; records the task it was given."""

    def __init__(self, answer: str) -> None:
        self.answer, self.tasks = answer, []

    def run(self, task: Task, text: str, on_token: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> str:
        self.tasks.append((task, text))
        if on_token is not None:
            on_token(self.answer[:5])
        return self.answer

    def perplexity(self, text: str) -> float:
        return 10.0


def test_fake_matches_the_protocol():
    assert isinstance(FakeSLM(""), LanguageModel)
    for name in ("run", "perplexity"):
        assert list(inspect.signature(getattr(FakeSLM, name)).parameters) == \
            list(inspect.signature(getattr(LanguageModel, name)).parameters)


def _placeholders() -> SanitizedText:
    return PolicyMechanism(PRESETS["placeholder"]).sanitize(TEXT, SPANS, SanitizeParams(seed=1))


def test_a_perfect_reconstruction_recovers_every_value_and_word():
    out = _placeholders()
    slm = FakeSLM(TEXT)
    progress: list[float] = []
    report = ReconstructionAttack(slm).run(TEXT, out, SPANS,
                                           progress=lambda f, _t: progress.append(f))
    assert report.values_recovered == len(report.values) == 3
    assert report.words_restored == report.words_changed > 0
    assert report.restored_share == 1.0 and progress[-1] == 1.0
    task, seen = slm.tasks[0]
    assert isinstance(task, ReconstructTask) and seen == out.text
    assert "<PERSON_1>" in task.instruction() and "Reconstruct" in task.instruction()


def test_copying_the_payload_recovers_nothing_but_a_missed_mention():
    out = _placeholders()
    report = ReconstructionAttack(FakeSLM(out.text)).run(TEXT, out, SPANS)
    assert report.values_recovered == 0 and report.words_restored == 0
    # the payload still writes "Maria" (the missed mention): the full name is partial
    [name] = [v for v in report.values if v.type == "PERSON"]
    assert name.match == "partial"
    assert report.by_kind()["name"] == {"total": 1, "recovered": 0, "partial": 1}


def test_normalized_matches_for_numbers_and_case():
    out = _placeholders()
    guess = "maria keller called 0412345678 from 14 George St. The nurse said Maria would come."
    report = score(TEXT, out, SPANS, guess)
    matches = {v.type: v.match for v in report.values}
    assert matches == {"PERSON": "normalized", "PHONE_NUMBER": "normalized",
                       "STREET_ADDRESS": None}
    assert report.by_kind()["number"]["recovered"] == 1


def test_d_x_changes_are_the_ground_truth_of_a_d_x_payload():
    a, b = TEXT.index("Keller"), TEXT.index("nurse")
    changes = (Change(a, a + 6, a, a + 6, "TOKEN", "Keller", "Miller"),
               Change(b, b + 5, b, b + 5, "TOKEN", "nurse", "coach"))
    payload = TEXT.replace("Keller", "Miller").replace("nurse", "coach")
    out = SanitizedText(payload, "dx-all", changes, SanitizeReport(dx=DxReport(50.0)))
    assert alterations(out.changes) == ("dx",)
    report = score(TEXT, out, SPANS, payload.replace("coach", "nurse"))
    assert [v.value for v in report.values] == ["Maria Keller"]   # the d_X-changed span
    assert report.words_changed == 2 and report.words_restored == 1


def test_nothing_changed_means_no_model_call():
    slm = FakeSLM("unused")
    report = ReconstructionAttack(slm).run(TEXT, SanitizedText(TEXT, "keep"), SPANS)
    assert slm.tasks == [] and report.values == () and report.notes


def test_only_the_window_is_attacked_and_scored():
    long_text = TEXT + " " + " ".join(["More text follows here."] * 100) + " Ask 9 Hill Road."
    start = long_text.index("9 Hill Road")
    late = Span(start, start + 11, "STREET_ADDRESS", D, 0.9, "test", "test")
    out = PolicyMechanism(PRESETS["placeholder"]).sanitize(long_text, [*SPANS, late],
                                                           SanitizeParams(seed=1))
    slm = FakeSLM(long_text)
    report = ReconstructionAttack(slm, max_words=40).run(long_text, out, [*SPANS, late])
    window = attack_window(out.text, 40)
    assert slm.tasks[0][1] == out.text[:window] and window < len(out.text)
    assert report.attacked_words < report.payload_words
    assert "9 Hill Road" not in [v.value for v in report.values]   # after the window
    assert len(report.values) == 3


@pytest.mark.parametrize("replacement,kind", [("<PERSON_1>", "placeholder"),
                                              ("Carol Diaz", "stand-in"), ("****", "masked")])
def test_alterations_name_what_the_payload_shows(replacement, kind):
    assert alterations([Change(0, 1, 0, 5, "PERSON", "Maria", replacement)]) == (kind,)
