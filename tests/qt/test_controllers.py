"""DocumentController / AnswerController with the fake backend (no window)."""

from __future__ import annotations

import threading

import pytest
from fakes import SAMPLE

from preflight.core.tasks import Task
from preflight.core.utility.recommend import Recommendation
from preflight.qt.answers import AnswerController
from preflight.qt.controllers import DocumentController
from preflight.qt.qt_workers import wait_all


@pytest.fixture
def doc(qtbot, fake_backend):
    d = DocumentController(fake_backend)
    d.start()
    qtbot.waitUntil(lambda: bool(d.epsilon_range is not None), timeout=3000)
    yield d
    d.cancel_all()
    wait_all(3000)


def test_typing_burst_detects_once_off_the_gui_thread(qtbot, doc, fake_backend):
    text = ""
    for ch in SAMPLE[:40]:
        text += ch
        doc.set_text(text)
    qtbot.waitUntil(lambda: bool(doc.detections_done >= 1), timeout=3000)
    qtbot.wait(100)
    assert fake_backend.detect_calls == [text]          # debounced: one run for the burst
    assert threading.main_thread().name not in fake_backend.detect_threads
    assert [text[s.start:s.end] for s in doc.spans] == ["Jane Doe", "Max Power"]


def test_stale_detection_is_dropped(qtbot, doc, fake_backend):
    fake_backend.delay = 0.3
    doc.set_text("Jane Doe wrote.")
    doc._run_detection()                                 # start a slow run now
    doc.set_text("now only Ann Lee.")                     # text changes while it runs
    qtbot.waitUntil(lambda: bool(doc.detections_done >= 1), timeout=5000)
    qtbot.wait(400)
    assert [doc.text[s.start:s.end] for s in doc.spans] == ["Ann Lee"]


def test_slider_updates_preview_and_coalesces(qtbot, doc, fake_backend):
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.result is not None and doc.prepared is not None), timeout=3000)
    first = doc.result.sanitized.text
    prepared = doc.prepared
    n_before = len(prepared.calls)
    for eps in [1.0 + i * 0.5 for i in range(40)]:       # a drag: 40 steps at once
        doc.set_epsilon(eps)
    qtbot.waitUntil(lambda: bool(doc.result.epsilon == pytest.approx(20.5)), timeout=3000)
    assert doc.prepared is prepared                      # no re-preparation for ε moves
    assert len(prepared.calls) - n_before < 40           # bursts coalesce
    doc.set_epsilon(1.0)
    qtbot.waitUntil(lambda: bool(doc.result.epsilon == pytest.approx(1.0)), timeout=3000)
    assert doc.result.sanitized.text != first or doc.result.epsilon != 1.0


def test_excluding_a_span_keeps_it_in_scope_pii(qtbot, doc):
    doc.set_policy("dx-pii")
    qtbot.waitUntil(lambda: bool(doc.policy.name == "dx-pii"), timeout=3000)
    doc.set_epsilon(1.0)
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.detections_done and doc.result is not None
                    and doc.prepared is not None and len(doc.prepared.spans) == 3),
                    timeout=3000)
    jane = doc.spans[0]
    doc.toggle_span(jane)
    qtbot.waitUntil(lambda: bool(doc.result and all(
        s.start != jane.start for s in doc.prepared.spans)), timeout=3000)
    assert doc.result.sanitized.text.startswith("Jane Doe")
    doc.toggle_span(jane)                                 # include again
    qtbot.waitUntil(lambda: bool(len(doc.prepared.spans) == 3), timeout=3000)


def test_operator_policy_and_deny_list(qtbot, doc, fake_backend):
    doc.set_policy("placeholder")
    doc.set_text(SAMPLE + " the codename falcon is secret.")
    qtbot.waitUntil(lambda: bool(doc.result and "<PERSON_1>" in doc.result.sanitized.text),
                    timeout=3000)
    assert "falcon" in doc.result.sanitized.text
    doc.add_to_deny_list("Falcon")
    assert fake_backend.settings.detection.deny_list == ["Falcon"] and fake_backend.saved
    qtbot.waitUntil(lambda: bool(doc.result and "falcon" not in doc.result.sanitized.text), timeout=3000)
    assert doc.result.vault  # placeholders keep their vault for restoring the answer


def test_predictions_curve_and_find_best(qtbot, doc, fake_backend):
    fake_backend.settings.policy.min_utility = 0.6
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.prediction is not None and doc.prediction.refined),
                    timeout=5000)
    qtbot.waitUntil(lambda: bool(len(doc.curve) == 12), timeout=3000)
    eps = [e for e, _ in doc.curve]
    assert eps[0] == pytest.approx(1.0) and eps[-1] == pytest.approx(100.0)
    doc.find_best_epsilon()
    qtbot.waitUntil(lambda: bool(doc.recommendation is not None), timeout=3000)
    assert doc.recommendation.decision == "send"
    assert doc.epsilon == pytest.approx(doc.recommendation.epsilon)


def _refined_at(doc, epsilon) -> bool:
    return bool(doc.result is not None and doc.result.epsilon == pytest.approx(epsilon)
                and doc.prediction is not None and doc.prediction.refined)


def test_the_chosen_epsilon_shows_the_searchs_refined_prediction_at_once(qtbot, doc,
                                                                         fake_backend):
    """After "Find best ε" the window refines the chosen text at once (the assessor
    remembers what the search measured), not after the slider's pause, and an instant
    prediction that finishes later does not replace it: the pane never says "below your
    minimum" beside a status that says the ε meets it."""
    fake_backend.settings.policy.min_utility = 0.6
    doc._refine_timer.setInterval(60_000)       # only the immediate path can refine now
    doc.set_epsilon(1.0)                        # far below any ε that meets 0.6
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.result is not None and doc.prepared is not None),
                    timeout=3000)
    doc.find_best_epsilon()
    qtbot.waitUntil(lambda: bool(doc.recommendation is not None), timeout=3000)
    rec = doc.recommendation
    assert rec.decision == "send" and rec.sanitized is not None and rec.epsilon > 1.0
    qtbot.waitUntil(lambda: _refined_at(doc, rec.epsilon), timeout=3000)
    assert doc.result.sanitized.text == rec.sanitized.text
    qtbot.wait(300)                              # the instant prediction (60 ms) came too
    assert _refined_at(doc, rec.epsilon)
    assert doc.prediction.value == pytest.approx(rec.predicted_utility)


def test_a_choice_at_the_current_epsilon_is_refined_at_once_too(qtbot, doc, fake_backend):
    """The search may choose the ε the slider already shows: no new preview comes, and
    the refined prediction must not wait for the slider's pause either."""
    doc._refine_timer.setInterval(60_000)
    doc.set_epsilon(30.0)
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.result is not None and doc.prediction is not None),
                    timeout=3000)
    assert not doc.prediction.refined
    here = doc.result.sanitized
    doc._on_recommendation(Recommendation("send", 30.0, 0.7, 0.7, 0.6, None, sanitized=here),
                           doc.prepared)
    qtbot.waitUntil(lambda: _refined_at(doc, 30.0), timeout=3000)


def test_resample_changes_noise(qtbot, doc):
    doc.set_epsilon(5.0)
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.result is not None and doc.prepared is not None), timeout=3000)
    seed = doc.prepared.seed
    doc.resample()
    qtbot.waitUntil(lambda: bool(doc.prepared.seed != seed), timeout=3000)


def test_answer_controller_streams_and_stops(qtbot, doc, fake_backend):
    answers = AnswerController(fake_backend, doc)
    doc.set_text(SAMPLE)
    qtbot.waitUntil(lambda: bool(doc.result is not None), timeout=3000)
    fake_backend.delay = 0.05
    chunks, finished = [], []
    answers.sig_chunk.connect(lambda r, raw: chunks.append(r))
    answers.sig_finished.connect(finished.append)
    answers.keep_local()
    qtbot.waitUntil(lambda: bool(len(chunks) >= 2), timeout=3000)
    answers.stop()
    qtbot.waitUntil(lambda: bool(finished), timeout=3000)
    assert finished == [None] and fake_backend.stop_seen.is_set()
    assert 2 <= len(chunks) < 6


def test_task_change_reaches_refined_prediction(qtbot, doc):
    doc.set_text(SAMPLE)
    doc.set_task(Task("question", question="Who met whom?"))
    assert doc.task.kind == "question"


def test_seed_is_a_64_bit_secret(qtbot, fake_backend):
    """The d_X/pseudonym seed comes from secrets.randbits(64): 20 draws below 2**31 would
    happen with probability 2**-660 (the old seed was 31 bits)."""
    seeds = {DocumentController(fake_backend).seed for _ in range(20)}
    assert len(seeds) == 20 and all(0 <= s < 2**64 for s in seeds)
    assert max(seeds) >= 2**31
