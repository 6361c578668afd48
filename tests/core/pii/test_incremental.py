"""Paragraph cache: an edit re-analyzes only the paragraph it touched, and the result
equals a full pass."""

from __future__ import annotations

import pytest

from preflight.core.pii.paragraphs import ParagraphCache, paragraph_units

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
    assert len(spy.texts) == len(paragraph_units(text))

    spy.texts.clear()
    edited_para = DOC[2].replace("John Smith", "Maria Gonzalez")
    edited = "\n\n".join([DOC[0], DOC[1], edited_para, DOC[3]])
    incremental = det.detect_incremental(edited)
    assert spy.texts == [edited_para]                 # NER ran on the edited paragraph only
    full = PiiDetector(real_detector.settings, analyzer=real_detector._engine()).detect(edited)
    assert incremental == full
    values = {edited[s.start:s.end] for s in incremental}
    assert "Maria Gonzalez" in values and "John Smith" not in values
    assert first != incremental

    # names found in one paragraph still reach the others (propagation over the whole)
    spy.texts.clear()
    again = edited + "\n\nMaria Gonzalez will bring the contract."
    spans = det.detect_incremental(again)
    assert spy.texts == ["Maria Gonzalez will bring the contract."]
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
    assert len(spy.texts) == len(paragraph_units(text))
