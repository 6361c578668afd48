"""The "Keep local" study: loops, invented names and the table it prints."""

from __future__ import annotations

import re

from preflight.core.types import Category, Span
from preflight_eval import local_answer_study as study


class _NamesDetector:
    """Marks capitalized word pairs as PERSON, as the real detector's spans look."""

    def detect(self, text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "PERSON", Category.DIRECT_IDENTIFIER, 0.85, "fake",
                     "capitalized pair")
                for m in re.finditer(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", text)]


def test_a_sentence_written_twice_is_a_loop_short_ones_are_not() -> None:
    loop = "The model tracks agreement in long sentences. It is good.\n" * 2
    assert study.repeats(loop)
    assert not study.repeats("Yes. Yes. The paper studies agreement in recurrent networks.")


def test_a_name_counts_as_invented_only_when_no_word_of_it_is_in_the_document() -> None:
    doc = "Jane Doe met Max Power in Berlin. Thanks, Tom Baker"
    answer = "Tom Baker\nJennifer Smith"
    assert study.invented_names(_NamesDetector(), doc, answer) == ["Jennifer Smith"]
    assert study.invented_names(_NamesDetector(), doc, "Jane Power wrote it.") == []


def _row(role: str, doc: str, e: float, **kw: object) -> dict[str, object]:
    row = {"role": role, "model": role.upper(), "loop_guard": True, "doc_id": doc,
           "local_e": e, "cloud_e": 0.8,
           "invented_names": [], "answer": "A short answer.", "finish_reason": "stop", "words": 40,
           "seconds": 5.0}
    row.update(kw)
    return row


def test_the_report_compares_roles_on_the_documents_both_answered() -> None:
    rows = [_row("slm", "a", 0.5, invented_names=["X Y"]),
            _row("slm", "b", 0.7, answer="One two three four five six. " * 2),
            _row("slm", "c", 0.9),                       # only one role: left out
            _row("qwen", "a", 0.7, finish_reason="repeat"),
            _row("qwen", "b", 0.8, finish_reason="length")]
    text = study.report(rows, 0.62)
    assert "2 held-out test documents" in text
    slm = next(line for line in text.splitlines() if line.startswith("local: SLM"))
    qwen = next(line for line in text.splitlines() if line.startswith("local: QWEN"))
    assert slm.split()[2:9] == ["0.600", "0.600", "50%", "1/2", "1/2", "0/2", "0/2"]
    assert qwen.split()[2:9] == ["0.750", "0.750", "100%", "0/2", "0/2", "1/2", "1/2"]
