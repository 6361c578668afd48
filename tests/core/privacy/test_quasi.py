"""Quasi-identifiers left in the payload, and the warning when several remain together."""

from __future__ import annotations

from preflight.app.presentation import quasi_warning
from preflight.core.privacy.quasi import output_offset, quasi_identifiers_left, together
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, Change, DxReport, SanitizedText, SanitizeReport, Span

TEXT = ("Maria Keller, a 26-year-old nurse at ANZ Bank in Sydney, wrote on 12 March 2023. "
        "Maria said the branch manager was helpful on Friday.")
Q, D = Category.QUASI_IDENTIFIER, Category.DIRECT_IDENTIFIER


def _span(value: str, typ: str, cat: Category, nth: int = 0) -> Span:
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(value, start + 1)
    return Span(start, start + len(value), typ, cat, 0.9, "test", "test")


SPANS = sorted([
    _span("Maria Keller", "PERSON", D), _span("26-year-old", "DATE_TIME", Q),
    _span("ANZ Bank", "ORGANIZATION", Q), _span("Sydney", "LOCATION", Q),
    _span("12 March 2023", "DATE_TIME", Q), _span("Maria", "PERSON", D, 1),
    _span("Friday", "DATE_TIME", Q),
], key=lambda s: s.start)


def _sanitize(policy: str) -> SanitizedText:
    return PolicyMechanism(PRESETS[policy]).sanitize(TEXT, SPANS, SanitizeParams(seed=1))


def test_identifiers_policy_leaves_place_employer_and_titles():
    out = _sanitize("identifiers")
    left = quasi_identifiers_left(TEXT, out, SPANS)
    assert [(q.kind, q.value) for q in left] == [
        ("job title", "nurse"), ("organization", "ANZ Bank"), ("place", "Sydney"),
        ("job title", "branch manager")]
    for q in left:                                  # offsets point into the payload
        assert out.text[q.start:q.end] == q.value
    # a job, an employer and a city: broad kinds only, listed without the warning
    assert quasi_warning(left) is None
    # with her date of birth left too, they may point to her
    kept = SanitizedText(TEXT, "keep-all")
    warning = quasi_warning(quasi_identifiers_left(TEXT, kept, SPANS))
    assert warning.startswith("6 quasi-identifiers remain: 26-year-old, nurse, ANZ Bank")
    assert "together they may point to one person" in warning


def test_placeholders_leave_only_the_job_titles():
    out = _sanitize("placeholder")
    left = quasi_identifiers_left(TEXT, out, SPANS)
    assert {q.kind for q in left} == {"job title"}
    assert not together(left) and quasi_warning(left) is None


def test_relative_dates_are_not_quasi_identifiers():
    out = SanitizedText(TEXT, "keep-all")
    kinds = {(q.kind, q.value) for q in quasi_identifiers_left(TEXT, out, SPANS)}
    assert ("date", "12 March 2023") in kinds and ("age", "26-year-old") in kinds
    assert not any(v == "Friday" for _k, v in kinds)


def test_a_change_of_letter_case_still_leaves_the_value():
    start = TEXT.index("Bank")
    early = Change(0, 7, 0, 5, "TOKEN", "Maria", "Rosalie")     # shifts what follows by 2
    text = "Rosalie" + TEXT[5:start] + "bank" + TEXT[start + 4:]
    cased = Change(start + 2, start + 6, start, start + 4, "TOKEN", "Bank", "bank")
    out = SanitizedText(text, "dx-all", (early, cased), SanitizeReport(dx=DxReport(60.0)))
    left = {q.value for q in quasi_identifiers_left(TEXT, out, SPANS)}
    assert {"ANZ bank", "Sydney"} <= left
    assert output_offset(out, TEXT.index("Sydney")) == text.index("Sydney")
    noised = Change(start, start + 4, start, start + 4, "TOKEN", "Bank", "Fund")
    out2 = SanitizedText(TEXT[:start] + "Fund" + TEXT[start + 4:], "dx-all", (noised,))
    assert not any("ANZ" in q.value for q in quasi_identifiers_left(TEXT, out2, SPANS))
