"""The answer check: facts an answer states that the document does not hold."""

from __future__ import annotations

import pytest

from preflight.core.types import Category, Span
from preflight.core.utility.answer_check import check_answer, faithful_utility

MEMO = """Hi Priya,
Following our review, your salary will rise by 4% to $52,400, effective 1 April 2025.
We met on 18 March with Tom Becker in Leeds to discuss it. You have three days of leave
left this year.
Best regards, Tom"""


def names(text: str) -> list[Span]:
    """A stand-in detector: the capitalized names and places this test writes."""
    out = []
    for value, kind in (("Priya", "PERSON"), ("Tom Becker", "PERSON"), ("Leeds", "LOCATION"),
                        ("Anna Novak", "PERSON"), ("Manchester", "LOCATION")):
        i = text.find(value)
        if i >= 0:
            out.append(Span(i, i + len(value), kind, Category.DIRECT_IDENTIFIER, 0.9, "t", ""))
    return sorted(out, key=lambda s: s.start)


def unsupported(answer: str, **kw) -> list[str]:
    return [f.text for f in check_answer(MEMO, answer, detect=names, **kw).unsupported]


def test_a_faithful_summary_flags_nothing():
    answer = ("Priya's salary rises by 4% to $52,400 from 1 April 2025. She met Tom Becker "
              "in Leeds on 18 March and has three days of leave left.")
    check = check_answer(MEMO, answer, detect=names)
    assert not check.flagged, check.summary()
    assert check.supported_count >= 7
    assert faithful_utility(0.8, check) == pytest.approx(0.8)


@pytest.mark.parametrize("answer, flagged", [
    ("The raise starts in January 2025.", ["January 2025"]),              # invented date
    ("They met on February 20 to discuss the raise.", ["February 20"]),
    ("They met on 20 March.", ["20 March"]),                              # wrong day
    ("Her salary rises to $55,000.", ["$55,000"]),                        # wrong amount
    ("Her salary rises by 5%.", ["5%"]),
    ("She has five days of leave left.", ["five"]),                       # number word
    ("She met Anna Novak in Manchester.", ["Anna Novak", "Manchester"]),  # name, place
    ("The raise applies from 1 April 2026.", ["1 April 2026"]),           # wrong year
])
def test_invented_facts_are_flagged(answer, flagged):
    assert unsupported(answer) == flagged


@pytest.mark.parametrize("answer", [
    "Priya's salary will fall by 4%.",          # an opposite word in place of "rise"
    "Priya's salary will not rise by 4%.",      # a negation the document does not have
    "Following the review, her salary will be cut by 4%.",
])
def test_sentences_that_turn_the_document_around_are_flagged(answer):
    check = check_answer(MEMO, answer, detect=names)
    assert [f.kind for f in check.unsupported] == ["contradiction"]
    assert "salary will rise" in check.unsupported[0].detail
    assert "opposite" in check.summary()


def test_numbers_match_by_value_and_dates_by_their_parts():
    doc = "The invoice of 12 June 2024 came to EUR 1,250.00; it was paid on 2024-07-03."
    assert not check_answer(doc, "The 1250 euro invoice dated June 12, 2024 was paid on "
                                 "3 July.").flagged
    assert not check_answer(doc, "It was paid in July 2024.").flagged
    assert [f.text for f in check_answer(doc, "It was paid in August.").unsupported] == \
        ["August"]


def test_may_the_verb_is_no_date_and_list_numbers_are_no_facts():
    doc = "Send the form by Friday."
    check = check_answer(doc, "1. You may send the form.\n2. Do it by Friday.")
    assert not check.flagged, [f.text for f in check.facts]


def test_a_fact_the_noise_brought_in_is_marked_as_such():
    doc = "The committee approved the budget of $40,000 in March."
    payload = "The committee approved the budget of $90,000 in March."   # a d_X token swap
    check = check_answer(doc, "The budget of $90,000 was approved.", payload=payload)
    [fact] = check.unsupported
    assert fact.text == "$90,000" and fact.from_noise


def test_every_unsupported_statement_costs():
    faithful = check_answer(MEMO, "Her salary rises by 4% to $52,400.", detect=names)
    one_wrong = check_answer(MEMO, "Her salary rises by 4% to $55,000.", detect=names)
    all_wrong = check_answer(MEMO, "Her salary rises by 5% to $55,000.", detect=names)
    scores = [faithful_utility(0.8, c) for c in (faithful, one_wrong, all_wrong)]
    assert scores[0] > scores[1] > scores[2] > 0
    assert faithful_utility(0.8, check_answer(MEMO, "A raise.")) == pytest.approx(0.8)


def test_the_summary_reads_like_the_window_shows_it():
    check = check_answer(MEMO, "The raise starts in January 2025 and brings $400 more.",
                         detect=names)
    assert check.summary() == "not in your document: January 2025, $400"
    assert check.to_json()["unsupported"] == 2
