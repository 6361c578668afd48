"""The controllers without the window, over the real application layer (fake ports)."""

from __future__ import annotations

import threading

import pytest
from conftest import SAMPLE

from preflight.app import refinement
from preflight.app.refinement import ALONG_EPSILON_WHY
from preflight.core.config import load_settings
from preflight.core.tasks import Task
from preflight.core.utility.recommend import Recommendation
from preflight.qt.controllers import build_controllers
from preflight.qt.qt_workers import wait_all


@pytest.fixture
def ctl(qtbot, door):
    """The six controllers, wired, started, with the ε range loaded."""
    c = build_controllers(door)
    c.start()
    qtbot.waitUntil(lambda: bool(c.policies.epsilon_range is not None), timeout=5000)
    yield c
    c.cancel_all()
    wait_all(3000)
    door.shutdown()


def _ready(qtbot, ctl, text=SAMPLE):
    ctl.doc.set_text(text)
    qtbot.waitUntil(lambda: bool(ctl.payload.result is not None
                                 and ctl.payload.prepared is not None), timeout=5000)


def test_typing_burst_detects_once_off_the_gui_thread(qtbot, ctl, rig):
    text = ""
    for ch in SAMPLE[:40]:
        text += ch
        ctl.doc.set_text(text)
    qtbot.waitUntil(lambda: bool(ctl.doc.detections_done >= 1), timeout=3000)
    qtbot.wait(100)
    assert rig.detector.calls == [text]                 # debounced: one run for the burst
    assert threading.main_thread().name not in rig.detector.threads
    assert [text[s.start:s.end] for s in ctl.doc.spans] == ["Jane Doe", "Max Power"]


def test_stale_detection_is_dropped(qtbot, ctl, rig):
    rig.detector.delay = 0.3
    ctl.doc.set_text("Jane Doe wrote.")
    ctl.doc.redetect()                                    # start a slow run now
    ctl.doc.set_text("now only Ann Lee.")                 # text changes while it runs
    qtbot.waitUntil(lambda: bool(ctl.doc.detections_done >= 1), timeout=5000)
    qtbot.wait(400)
    assert [ctl.doc.text[s.start:s.end] for s in ctl.doc.spans] == ["Ann Lee"]


def test_slider_updates_preview_and_coalesces(qtbot, ctl):
    _ready(qtbot, ctl)
    pay = ctl.payload
    first, prepared, done_before = pay.result.sanitized.text, pay.prepared, pay.previews_done
    for eps in [1.0 + i * 0.5 for i in range(40)]:       # a drag: 40 steps at once
        pay.set_epsilon(eps)
    qtbot.waitUntil(lambda: bool(pay.result.epsilon == pytest.approx(20.5)), timeout=3000)
    assert pay.prepared is prepared                      # no re-preparation for ε moves
    assert pay.previews_done - done_before < 40          # bursts coalesce
    pay.set_epsilon(1.0)                                 # below the range: all words noised
    qtbot.waitUntil(lambda: bool(pay.result.epsilon == pytest.approx(1.0)), timeout=3000)
    assert pay.result.sanitized.text != first


def test_excluding_a_span_keeps_it_out_of_the_pii_scope(qtbot, ctl):
    ctl.policies.set_policy("dx-pii")
    qtbot.waitUntil(lambda: bool(ctl.policies.policy.name == "dx-pii"), timeout=3000)
    ctl.payload.set_epsilon(1.0)                          # every detected word is noised
    _ready(qtbot, ctl)
    qtbot.waitUntil(lambda: len(ctl.payload.prepared.spans) == 3, timeout=3000)
    assert not ctl.payload.result.sanitized.text.startswith("Jane Doe")
    jane = ctl.doc.spans[0]
    ctl.doc.toggle_span(jane)
    qtbot.waitUntil(lambda: bool(ctl.payload.result and all(
        s.start != jane.start for s in ctl.payload.prepared.spans)), timeout=3000)
    assert ctl.payload.result.sanitized.text.startswith("Jane Doe")
    ctl.doc.toggle_span(jane)                             # include again
    qtbot.waitUntil(lambda: bool(ctl.payload.result
                                 and len(ctl.payload.prepared.spans) == 3), timeout=3000)
    assert not ctl.payload.result.sanitized.text.startswith("Jane Doe")


def test_operator_policy_and_deny_list(qtbot, ctl):
    ctl.policies.set_policy("placeholder")
    ctl.doc.set_text(SAMPLE + " the codename falcon is secret.")
    qtbot.waitUntil(lambda: bool(ctl.payload.result
                                 and "<PERSON_1>" in ctl.payload.result.sanitized.text),
                    timeout=3000)
    assert "falcon" in ctl.payload.result.sanitized.text
    ctl.doc.add_to_deny_list("Falcon")
    qtbot.waitUntil(lambda: bool(ctl.payload.result
                                 and "falcon" not in ctl.payload.result.sanitized.text),
                    timeout=30000)          # the first add loads Presidio
    assert ctl.payload.result.vault   # placeholders keep their vault to restore the answer
    assert [e.kind for e in load_settings().detection.deny_entries] == ["term"]   # saved


def test_predictions_curve_and_find_best(qtbot, ctl, door):
    door.settings.policy.min_utility = 0.6
    _ready(qtbot, ctl)
    u = ctl.utility
    # a d_X setting: the instant value on the curve, and why (app.refinement)
    qtbot.waitUntil(lambda: bool(u.prediction is not None
                                 and u.prediction.note == ALONG_EPSILON_WHY), timeout=5000)
    assert not u.prediction.refined
    qtbot.waitUntil(lambda: bool(len(u.curve) == 12), timeout=3000)
    lo, hi = ctl.policies.epsilon_range
    eps = [e for e, _ in u.curve]
    assert eps[0] == pytest.approx(lo) and eps[-1] == pytest.approx(hi)
    u.find_best_epsilon()
    qtbot.waitUntil(lambda: bool(u.recommendation is not None), timeout=5000)
    assert u.recommendation.decision == "send"
    assert ctl.payload.epsilon == pytest.approx(u.recommendation.epsilon)


def _refined_at(ctl, epsilon) -> bool:
    res, pred = ctl.payload.result, ctl.utility.prediction
    return bool(res is not None and res.epsilon == pytest.approx(epsilon)
                and pred is not None and pred.refined)


@pytest.fixture
def refined_shown(monkeypatch):
    """A bundle whose verdicts show the refined value for every setting: the window's
    refined-prediction mechanics (the shipped rules keep d_X settings instant)."""
    monkeypatch.setattr(refinement, "verdict", lambda metrics, kind: (True, ""))


def test_the_chosen_epsilon_shows_the_searchs_number_at_once(qtbot, ctl, door):
    """After "Find best ε" the number beside the slider at the chosen ε is the one the
    search decided on (both read the same curve), never "below your minimum" beside a
    status that says the ε meets it."""
    door.settings.policy.min_utility = 0.6
    u = ctl.utility
    ctl.payload.set_epsilon(1.0)                # far below any ε that meets 0.6
    _ready(qtbot, ctl)
    qtbot.waitUntil(lambda: bool(len(u.curve) == 12), timeout=5000)
    u.find_best_epsilon()
    qtbot.waitUntil(lambda: bool(u.recommendation is not None), timeout=5000)
    rec = u.recommendation
    assert rec.decision == "send" and rec.sanitized is not None and rec.epsilon > 1.0
    assert rec.refined is False and rec.slm_calls == 0
    qtbot.waitUntil(lambda: bool(
        ctl.payload.result is not None and ctl.payload.result.epsilon == pytest.approx(
            rec.epsilon) and u.prediction is not None and u.prediction.placed is not None
        and u.prediction.value == pytest.approx(rec.predicted_utility, abs=1e-6)),
        timeout=5000)
    assert ctl.payload.result.sanitized.text == rec.sanitized.text
    assert u.prediction.value >= 0.6


def test_a_choice_at_the_current_epsilon_is_refined_at_once_too(qtbot, ctl, refined_shown):
    """The search may choose the ε the slider already shows: no new preview comes, and
    the refined prediction must not wait for the slider's pause either."""
    u = ctl.utility
    u._refine_timer.setInterval(60_000)
    ctl.payload.set_epsilon(30.0)
    _ready(qtbot, ctl)
    qtbot.waitUntil(lambda: bool(u.prediction is not None), timeout=3000)
    assert not u.prediction.refined
    here = ctl.payload.result.sanitized
    u._on_recommendation(Recommendation("send", 30.0, 0.7, 0.7, 0.6, None, sanitized=here),
                         ctl.payload.prepared)
    qtbot.waitUntil(lambda: _refined_at(ctl, 30.0), timeout=3000)


def test_resample_changes_noise(qtbot, ctl):
    ctl.payload.set_epsilon(5.0)
    _ready(qtbot, ctl)
    seed = ctl.payload.prepared.seed
    ctl.payload.resample()
    qtbot.waitUntil(lambda: bool(ctl.payload.prepared.seed != seed
                                 and ctl.payload.fresh_result is not None), timeout=3000)
    assert ctl.payload.prepared.seed == ctl.payload.seed


def test_answer_controller_streams_and_stops(qtbot, ctl, rig):
    _ready(qtbot, ctl)
    rig.slm.delay = 0.05
    answers = ctl.answers
    chunks, finished = [], []
    answers.sig_chunk.connect(lambda r, raw: chunks.append(r))
    answers.sig_finished.connect(finished.append)
    answers.keep_local()
    qtbot.waitUntil(lambda: bool(len(chunks) >= 2), timeout=3000)
    answers.stop()
    qtbot.waitUntil(lambda: bool(finished), timeout=3000)
    assert finished == [None] and rig.slm.stop_seen.is_set()
    assert 2 <= len(chunks) < len(rig.slm.local_text.split())


def test_task_change_reaches_the_refined_prediction(qtbot, ctl, rig, refined_shown):
    _ready(qtbot, ctl)
    ctl.utility.set_task(Task("question", question="Who met whom?"))
    assert ctl.utility.task.kind == "question"
    qtbot.waitUntil(lambda: bool(ctl.utility.prediction is not None
                                 and ctl.utility.prediction.refined), timeout=5000)
    assert "question" in rig.slm.calls                 # the local model answered the question


def test_seed_is_a_64_bit_secret(qtbot, door):
    """The d_X/pseudonym seed comes from secrets.randbits(64): 20 draws below 2**31 would
    happen with probability 2**-660 (the old seed was 31 bits)."""
    seeds = {build_controllers(door).payload.seed for _ in range(20)}
    assert len(seeds) == 20 and all(0 <= s < 2**64 for s in seeds)
    assert max(seeds) >= 2**31


# --- each controller alone -------------------------------------------------------------------
def test_the_document_controller_alone_says_when_a_preview_may_run(qtbot, door):
    """No policy, no preview: the document controller alone detects, voids what was
    derived from the old text, and says when a preview may be computed."""
    from preflight.qt.document_ops import DocumentController

    doc = DocumentController(door)
    voids, ready = [], []
    doc.sig_void.connect(voids.append)
    doc.sig_ready.connect(lambda: ready.append(doc.text))
    doc.set_text(SAMPLE)
    assert voids == [None] and doc.gate() == "Loading the PII detector…"
    doc.start()
    qtbot.waitUntil(lambda: bool(ready), timeout=5000)
    assert ready == [SAMPLE] and doc.gate() is None
    assert [SAMPLE[s.start:s.end] for s in doc.spans] == ["Jane Doe", "Max Power",
                                                          "jane.doe@example.com"]
    doc.toggle_span(doc.spans[0])
    assert voids[-1] == "Updating the sanitized text…" and len(ready) == 2
    assert doc.key()[1] == 1                              # the exclusions changed
    doc.cancel_all()
    wait_all(3000)
    door.shutdown()


def test_the_policy_controller_alone_loads_applies_and_modifies(qtbot, door):
    from preflight.core.sanitize.policy import Action
    from preflight.qt.document_ops import DocumentController
    from preflight.qt.policy_ops import PolicyController

    policies = PolicyController(door, DocumentController(door))
    applied, ranges = [], []
    policies.sig_policy.connect(applied.append)
    policies.sig_epsilon_range.connect(lambda lo, hi: ranges.append((lo, hi)))
    policies.load()
    qtbot.waitUntil(lambda: bool(ranges), timeout=5000)   # the settings' d_X policy
    assert applied[-1].name == "dx-all" and ranges == [door.epsilon_range()]
    gen = policies.generation
    policies.set_policy("placeholder")
    qtbot.waitUntil(lambda: bool(applied[-1].name == "placeholder"), timeout=3000)
    assert policies.generation > gen and not policies.uses_dx
    policies.set_type_action("PERSON", Action.MASK)
    assert policies.modified and policies.policy.title.endswith("(modified)")
    assert policies.policy.by_type["PERSON"] is Action.MASK
    wait_all(3000)
    door.shutdown()
