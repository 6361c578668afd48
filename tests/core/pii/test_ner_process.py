"""The NER model read in a helper process (ner_process.py): on real judgments the spans
are exactly the one-process detector's, the helper really does the reading, and
whatever happens to it (killed half-way, a Cancel, a model it cannot load) the detection
is complete and the next one is right."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from preflight.core.errors import Cancelled

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judgments() -> list[str]:
    from preflight_eval.bench_detect import _default_tab

    lines = _default_tab().read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:10]]


@pytest.fixture(scope="module")
def parallel(ner_path):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path, ner_process=True)
    detector.load()
    assert detector.ner_helper is not None
    assert detector.ner_helper.wait_ready(180), "the helper did not load the model"
    return detector


def own_helper(detector, path: Path):
    """Give ``detector`` a helper of its own (the shared one stays intact)."""
    from preflight.core.pii.detector import _UNUSED_PIPES
    from preflight.core.pii.ner_process import NerProcess

    helper = NerProcess(path, _UNUSED_PIPES)
    helper.start()
    detector.ner_helper = helper
    return helper


def test_a_judgment_read_by_the_helper_has_the_one_process_spans(
        parallel, real_detector, judgments):
    before = parallel.ner_helper.answered
    for text in judgments[:4]:
        assert len(text) > 500          # PARALLEL_MIN_CHARS: long enough to go
        assert parallel.detect(text) == real_detector.detect(text)
    assert parallel.ner_helper.answered > before        # the helper did read them
    assert parallel.warnings == []


def test_a_short_text_is_read_here(parallel):
    before = parallel.ner_helper.answered
    text = "Mr Jan Kowalski lodged the application on 3 May 2004."
    assert "Jan Kowalski" in [text[s.start:s.end] for s in parallel.detect(text)]
    assert parallel.ner_helper.answered == before


def test_a_helper_killed_half_way_leaves_a_complete_detection(
        ner_path, real_detector, judgments, caplog):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path)
    detector.load()
    helper = own_helper(detector, ner_path)
    assert helper.wait_ready(180)
    engine = detector._engine().nlp_engine
    rebuild = engine.artifacts_with_entities
    killed = []

    def kill_after_first(*args, **kwargs):
        if not killed:
            helper._proc.kill()
            helper._proc.join(5)
            killed.append(True)
        return rebuild(*args, **kwargs)

    engine.artifacts_with_entities = kill_after_first
    try:
        with caplog.at_level("WARNING", logger="preflight.core.pii.ner_process"):
            assert detector.detect(judgments[0]) == real_detector.detect(judgments[0])
    finally:
        del engine.artifacts_with_entities
    assert killed and helper._failed
    assert "model runs in this process" in caplog.text
    assert detector.detect(judgments[1]) == real_detector.detect(judgments[1])


def test_after_a_cancel_half_way_the_next_text_gets_its_own_entities(
        ner_path, real_detector, judgments):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path)
    detector.load()
    helper = own_helper(detector, ner_path)
    assert helper.wait_ready(180)
    stop = threading.Event()
    steps = []

    def progress(share, words):
        steps.append(share)
        if len(steps) == 2:             # one of four units in: the helper is reading ahead
            stop.set()

    with pytest.raises(Cancelled):
        detector.detect(judgments[2], progress=progress, cancel=stop)
    answered = helper.answered
    # the stopped text's late answers must not be read as this one's
    assert detector.detect(judgments[3]) == real_detector.detect(judgments[3])
    assert helper.answered > answered and not helper._failed
    helper.close()


def test_a_helper_that_cannot_load_its_model_is_never_asked(
        tmp_path, ner_path, real_detector, judgments):
    from preflight.core.pii.detector import PiiDetector

    detector = PiiDetector(nlp_model_path=ner_path)
    detector.load()
    helper = own_helper(detector, tmp_path / "no-model")
    assert not helper.wait_ready(180)
    assert helper._failed
    assert detector.detect(judgments[0]) == real_detector.detect(judgments[0])
    assert helper.answered == 0


def test_answers_left_by_a_text_stopped_half_way_are_not_the_next_texts(ner_path, judgments):
    from preflight.core.pii.detector import _UNUSED_PIPES, _batches
    from preflight.core.pii.lean_nlp import load_pipeline
    from preflight.core.pii.ner_process import NerProcess

    nlp = load_pipeline(ner_path, _UNUSED_PIPES)
    helper = NerProcess(ner_path, _UNUSED_PIPES)
    helper.start()
    assert helper.wait_ready(180)
    first, second = ([list(b) for b in _batches(t.split("\n\n"), 300)] for t in judgments[:2])
    answers = helper.stream(first)
    answers.next()
    answers.close()                     # stopped after one answer; more were on the way
    answers = helper.stream(second)
    got = [answers.next() for _ in second]
    answers.close()
    helper.close()
    want = [[[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(b)]
            for b in second]
    assert got == want


def test_a_helper_ready_only_after_the_first_batch_reads_the_rest(
        parallel, real_detector, judgments):
    helper = parallel.ner_helper
    asked = []

    class LateHelper:
        """The shared helper, still "loading" when the pass starts."""

        answered = property(lambda self: helper.answered)

        def stream(self, batches):
            asked.append(len(batches))
            return None if len(asked) == 1 else helper.stream(batches)

    text = "\n\n".join(judgments[4:])        # distinct paragraphs, over 16,000 characters
    assert len(text) > 16_000
    parallel.ner_helper = LateHelper()
    try:
        before = helper.answered
        assert parallel.detect(text) == real_detector.detect(text)
    finally:
        parallel.ner_helper = helper
    assert len(asked) == 2 and helper.answered > before


def test_one_long_paragraph_is_read_by_the_helper_beside_the_recognizers(
        parallel, real_detector, judgments):
    # one window, one NER text: the recognizers that need no entities run here meanwhile
    text = " ".join(judgments[1].split())[:6_000]
    before = parallel.ner_helper.answered
    assert parallel.detect(text) == real_detector.detect(text)
    assert parallel.ner_helper.answered == before + 1


class _SlowAnswers:
    """Answers whose next answer arrives after ``late`` polls (the scheduling alone)."""

    def __init__(self, count: int, late: int) -> None:
        self.limit, self.read, self.late = count, 0, late
        self.stopped_before: list[int] = []

    def ready(self) -> bool:
        self.late -= 1
        return self.late < 0

    def stop_before(self, n: int) -> None:
        self.limit = min(self.limit, n)
        self.stopped_before.append(n)

    def next(self):
        self.read += 1
        return [[]]

    def close(self) -> None:
        pass


class _Engine:
    def __init__(self) -> None:
        self.read: list[list[str]] = []

    def process_batch(self, batch, language, batch_size=1):
        self.read.append(batch)
        return [(t, f"read here: {t}") for t in batch]


def test_while_the_helper_is_late_spare_work_comes_before_reading_a_batch_here():
    from preflight.core.pii.ner_process import Found, side_by_side

    batches = [["a"], ["b"], ["c"]]
    pieces = [1, 2]                         # two pieces of spare work, then none
    answers, engine = _SlowAnswers(3, late=3), _Engine()
    out = list(side_by_side(engine, batches, answers,
                            lambda: bool(pieces) and pieces.pop() > 0))
    # polls 1-2: spare work; poll 3: none left, batch "c" is read here; then answers
    assert pieces == []
    assert engine.read == [["c"]] and answers.stopped_before == [2]
    assert out == [Found([]), Found([]), "read here: c"]


def test_with_no_spare_work_a_late_helper_leaves_the_last_batches_to_this_process():
    from preflight.core.pii.ner_process import Found, side_by_side

    answers, engine = _SlowAnswers(3, late=2), _Engine()
    out = list(side_by_side(engine, [["a"], ["b"], ["c"]], answers))
    assert engine.read == [["c"], ["b"]]
    assert out == [Found([]), "read here: b", "read here: c"]
