"""Units and their cache: an edit re-analyzes only the unit it touched, and the result
equals a full pass."""

from __future__ import annotations

import random

import pytest

from preflight.core.pii.paragraphs import (
    UNIT_CHARS, ParagraphCache, detection_units, paragraph_units,
)

DOC = [
    "From: Jane Roe <jane.roe@example.com>\nSubject: the Lisbon trip",
    "Hi all,\n\nPlease wire the deposit to IBAN GB82 WEST 1234 5698 7654 32 by Friday.",
    "Jane met John Smith of Acme Corp in Lisbon; call him on +44 20 7946 0958.",
    "Regards,\nJane Roe",
]


def test_paragraph_units_split_at_blank_lines():
    text = "one\n\n  \n two\nstill two\n\n\nthree  "
    assert [text[a:b].strip() for a, b in paragraph_units(text)] == [
        "one", "two\nstill two", "three"]
    assert paragraph_units("\n\n  \n") == []


def _paragraphs(n: int, lengths=(3, 12, 40, 90) * 3 + (400,), seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = ("the", "claim", "was", "filed", "on", "time", "by", "our", "office", "north")
    return [" ".join(rng.choice(words) for _ in range(rng.choice(lengths))) + f" ({i})."
            for i in range(n)]


def test_units_join_short_paragraphs_and_keep_long_ones_alone():
    paras = _paragraphs(300)
    text = "\n\n".join(paras)
    units = detection_units(text)
    # the units tile the paragraphs, in order, each cut at a paragraph's edges
    assert [p for a, b in units for p in text[a:b].split("\n\n")] == paras
    assert len(units) < len(paras) / 2
    for a, b in units:
        inside = paragraph_units(text[a:b])
        if len(inside) > 1:      # joined: short paragraphs, closed once it reached the cap
            assert all(y - x < UNIT_CHARS for x, y in inside)
            assert inside[-2][1] < UNIT_CHARS
    long = [p for p in paras if len(p) >= UNIT_CHARS]
    assert long and all(p in [text[a:b] for a, b in units] for p in long)


def test_an_edit_moves_only_the_units_next_to_it():
    paras = _paragraphs(300, lengths=(3, 12, 40, 90))
    before = {"\n\n".join(paras)[a:b] for a, b in detection_units("\n\n".join(paras))}
    moved = []
    for k in range(0, 300, 7):
        longer = paras[k] + " The office in the north wing filed the claim on time, as our claim."
        edited = paras[:k] + [longer] + paras[k + 1:]
        text = "\n\n".join(edited)
        moved.append(sum(text[a:b] not in before for a, b in detection_units(text)))
    assert max(moved) <= 3 and sum(moved) / len(moved) < 1.6


def test_cache_reuses_and_bounds():
    calls: list[str] = []

    def analyze(p):
        calls.append(p)
        return []

    cache = ParagraphCache(size=2)
    for p in ("a", "a", "b", "c", "a"):
        cache.results(p, (), True, analyze)
    assert calls == ["a", "b", "c", "a"]      # "a" was evicted by "b" and "c"
    cache.results("c", (), False, analyze)     # a full pass never reads the cache
    assert calls[-1] == "c"


class _Spy:
    """The real Presidio analyzer, recording the texts it is asked to analyze."""

    def __init__(self, analyzer) -> None:
        self._analyzer = analyzer
        self.texts: list[str] = []

    def analyze(self, text, **kwargs):
        self.texts.append(text)
        return self._analyzer.analyze(text=text, **kwargs)


@pytest.mark.slow
def test_edit_reanalyzes_only_that_paragraph(real_detector):
    from preflight.core.pii.detector import PiiDetector

    spy = _Spy(real_detector._engine())
    det = PiiDetector(real_detector.settings, analyzer=spy)
    text = "\n\n".join(DOC)
    first = det.detect_incremental(text)
    assert spy.texts == [text[a:b] for a, b in detection_units(text)]
    assert len(spy.texts) < len(paragraph_units(text))

    spy.texts.clear()
    edited_para = DOC[2].replace("John Smith", "Maria Gonzalez")
    edited = "\n\n".join([DOC[0], DOC[1], edited_para, DOC[3]])
    incremental = det.detect_incremental(edited)
    # only the unit holding the edited paragraph is read again
    assert spy.texts == [u for a, b in detection_units(edited)
                         if edited_para in (u := edited[a:b])]
    full = PiiDetector(real_detector.settings, analyzer=real_detector._engine()).detect(edited)
    assert incremental == full
    values = {edited[s.start:s.end] for s in incremental}
    assert "Maria Gonzalez" in values and "John Smith" not in values
    assert first != incremental

    # names found in one paragraph still reach the others (propagation over the whole)
    spy.texts.clear()
    again = edited + "\n\nMaria Gonzalez will bring the contract."
    spans = det.detect_incremental(again)
    old_units = {edited[a:b] for a, b in detection_units(edited)}
    assert spy.texts == [u for a, b in detection_units(again)
                         if (u := again[a:b]) not in old_units]
    assert spy.texts and spy.texts[-1].endswith("Maria Gonzalez will bring the contract.")
    assert spans == PiiDetector(real_detector.settings,
                                analyzer=real_detector._engine()).detect(again)


@pytest.mark.slow
def test_full_pass_reanalyzes_everything(real_detector):
    from preflight.core.pii.detector import PiiDetector

    spy = _Spy(real_detector._engine())
    det = PiiDetector(real_detector.settings, analyzer=spy)
    text = "\n\n".join(DOC)
    det.detect_incremental(text)
    spy.texts.clear()
    det.detect(text)
    assert len(spy.texts) == len(detection_units(text))
