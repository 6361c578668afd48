"""Qt-free helpers behind the window: offsets, span bookkeeping, privacy indicators."""

from __future__ import annotations

import pytest

from preflight.app.presentation import (
    Utf16Map,
    change_at,
    effective_spans,
    log_grid,
    privacy_indicators,
    shift_spans,
    surviving_share,
    span_at,
    span_key,
    utility_number,
)
from preflight.core.types import apply_replacements, Category, DxReport, SanitizedText, SanitizeReport, Span


def _span(s, e, t="PERSON"):
    return Span(s, e, t, Category.DIRECT_IDENTIFIER, 0.9, "r", "why")


@pytest.mark.parametrize("text", ["plain ascii", "café crème", "hi 😀 Jane 👋🏽 Doe", "😀😀x"])
def test_utf16_map_round_trips_and_matches_qt_lengths(text):
    m = Utf16Map(text)
    for cp in range(len(text) + 1):
        u16 = m.to_qt(cp)
        assert u16 == len(text[:cp].encode("utf-16-le")) // 2
        assert m.to_py(u16) == cp


def test_shift_spans_moves_spans_after_edit_and_drops_touched():
    spans = [_span(0, 4), _span(10, 14), _span(20, 24)]
    # insert 3 chars at 6: first stays, others move by 3
    out = shift_spans(spans, 6, 0, 3)
    assert [(s.start, s.end) for s in out] == [(0, 4), (13, 17), (23, 27)]
    # delete inside the second span: it is dropped until re-detection
    out = shift_spans(spans, 11, 2, 0)
    assert [(s.start, s.end) for s in out] == [(0, 4), (18, 22)]


def test_effective_spans_excludes_by_value_not_offset():
    text = "Jane met Jane and Bob"
    spans = [_span(0, 4), _span(9, 13), _span(18, 21)]
    excluded = {span_key(spans[0], text)}
    assert [text[s.start:s.end] for s in effective_spans(spans, text, excluded)] == ["Bob"]


def test_span_at_and_change_at():
    spans = [_span(2, 5), _span(8, 9)]
    assert span_at(spans, 2) is spans[0] and span_at(spans, 4) is spans[0]
    assert span_at(spans, 5) is None and span_at(spans, 8) is spans[1]
    out, changes = apply_replacements("Jane Doe is here", [(0, 8, "<P_1>", "PERSON")])
    san = SanitizedText(out, "placeholder", changes)
    assert change_at(san, 0).original == "Jane Doe"
    assert change_at(san, 4).original == "Jane Doe"
    assert change_at(san, 6) is None


def test_privacy_indicators_counts_items_left_verbatim():
    text = "Jane Doe wrote to Bob Ray about Acme."
    spans = [_span(0, 8), _span(18, 25)]
    out, changes = apply_replacements(text, [(0, 8, "<PERSON_1>", "PERSON")])
    ind = privacy_indicators(text, SanitizedText(out, "placeholder", changes), spans)
    assert ind.pii_total == 2 and ind.pii_left == 1        # Bob Ray is still there
    assert 0 < ind.changed_share < 1
    assert "No formal guarantee" in ind.guarantee


def test_privacy_indicators_uses_dx_token_counts_and_guarantee():
    text = "Jane Doe wrote."
    spans = [_span(0, 8)]
    # d_X changed both tokens → the name is gone
    out, changes = apply_replacements(text, [(0, 4, "Anna", "TOKEN"), (5, 8, "Moe", "TOKEN")])
    san = SanitizedText(out, "dx", changes, SanitizeReport(
        guarantee="covers every token", dx=DxReport(10.0, tokens_changed=2, tokens_total=4)))
    ind = privacy_indicators(text, san, spans)
    assert ind.changed_share == 0.5 and ind.guarantee == "covers every token"
    assert ind.pii_left == 0
    # d_X drew "Jane" back and changed "Doe": 4 of the name's 7 letters are still written
    out1, ch1 = apply_replacements(text, [(0, 4, "Jane", "TOKEN"), (5, 8, "Moe", "TOKEN")])
    assert privacy_indicators(text, SanitizedText(out1, "dx", ch1), spans).pii_left == 1
    out2, ch2 = apply_replacements(text, [(0, 4, "Jane", "TOKEN"), (5, 8, "Doe", "TOKEN")])
    ind2 = privacy_indicators(text, SanitizedText(out2, "dx", ch2), spans)
    assert ind2.pii_left == 1                               # same value came back


def test_a_value_d_x_barely_changed_still_leaves():
    """One noised token of a 16-digit card, or a case change, does not protect it."""
    text = "Card 4111 1111 1111 1111 and jane.doe@example.com here."
    card, mail = _span(5, 24), _span(29, 49)
    out, ch = apply_replacements(text, [(10, 14, "1211", "TOKEN"),       # one group
                                        (29, 33, "Anna", "TOKEN"),       # the user name
                                        (38, 45, "Example", "TOKEN")])   # case only
    san = SanitizedText(out, "dx", ch)
    assert surviving_share(text, card, ch) == pytest.approx(12 / 16)
    assert surviving_share(text, mail, ch) == pytest.approx(13 / 17)
    assert privacy_indicators(text, san, [card, mail]).pii_left == 2
    out2, ch2 = apply_replacements(text, [(5, 9, "7302", "TOKEN"), (10, 14, "0934", "TOKEN"),
                                          (15, 19, "8821", "TOKEN")])
    assert privacy_indicators(text, SanitizedText(out2, "dx", ch2), [card]).pii_left == 0


def test_log_grid_is_geometric():
    g = log_grid(1, 100, 3)
    assert g == pytest.approx([1, 10, 100])


def test_spans_the_policy_keeps_are_not_counted_as_left() -> None:
    from preflight.app.presentation import privacy_indicators
    from preflight.core.types import Category, SanitizedText, Span

    text = "Jane works at Acme."
    spans = [Span(0, 4, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", ""),
             Span(14, 18, "ORGANIZATION", Category.QUASI_IDENTIFIER, 0.9, "t", "")]
    out = SanitizedText("<PERSON_1> works at Acme.", "identifiers", (),
                        SanitizeReport(kept_spans=((14, 18),)))
    ind = privacy_indicators(text, out, spans)
    assert (ind.pii_left, ind.pii_kept, ind.pii_total) == (0, 1, 2)


# --- privacy figures in words -------------------------------------------------------------
def test_attack_sentence_gives_the_attack_and_the_unchanged_share() -> None:
    from preflight.app.presentation import NO_DX_SENTENCE, attack_sentence

    dx = {"success": 0.4412, "identity": 0.331, "success_pii": None}
    assert attack_sentence(dx) == ("An attacker who knows the method recovers about 44% of "
                                   "the noised words (33% came through unchanged).")
    assert "; 20% of personal-data words)" in attack_sentence(
        {**dx, "success_pii": 0.2})
    assert attack_sentence(None) == NO_DX_SENTENCE


def test_quasi_sentence_lists_a_few_and_warns_when_together() -> None:
    from preflight.app.presentation import quasi_sentence

    items = [{"kind": k, "value": v} for k, v in
             [("job title", "nurse"), ("organization", "ANZ Bank"), ("place", "Sydney"),
              ("date", "2023"), ("place", "Perth")]]
    text = quasi_sentence({"quasi_identifiers": items, "quasi_warning": "5 remain"})
    assert text == ("5 quasi-identifier(s) left as written: nurse, ANZ Bank, Sydney, 2023 "
                    "and 1 more. Together they may point to one person.")
    assert "Together" not in quasi_sentence({"quasi_identifiers": items[:1],
                                             "quasi_warning": None})
    assert quasi_sentence({"quasi_identifiers": []}).startswith("No quasi-identifier")


def test_privacy_summary_takes_the_plans_ledger() -> None:
    from preflight.app.presentation import privacy_summary

    facts = {"quasi_identifiers": [{"value": "Sydney"}],
             "epsilon_ledger": {"text": "ε spent on this document: nothing yet"}}
    recon = {"values_total": 2, "values_recovered": 1,
             "values": [{"value": "Jane Doe", "type": "PERSON", "recovered": True}]}
    lines = privacy_summary(facts, None, recon, ledger_text="ε spent: 40 over 2")
    assert lines == ["No d_X noise: protected values are replaced on this machine; the rest "
                     "of the text is sent as written. The local model re-identified 1 of 2 "
                     "protected value(s): Jane Doe (PERSON).",
                     "1 quasi-identifier(s) left as written; ε spent: 40 over 2."]
    assert privacy_summary(facts, None)[1].endswith("ε spent on this document: nothing yet.")


def test_ledger_sentence_is_one_short_line() -> None:
    from preflight.app.presentation import ledger_sentence

    first = {"prior_sends": 0, "spent": 0.0, "this_send": 94.5526, "total": 94.5526,
             "limit": None}
    assert ledger_sentence(first) == ("ε spent on this document: 94.6 with this send, the "
                                      "first.")
    again = {"prior_sends": 2, "spent": 40.0, "this_send": 20.0, "total": 60.0,
             "limit": 100.0}
    assert ledger_sentence(again) == ("ε spent on this document: 40 over 2 earlier send(s) "
                                      "+ 20 now = 60 (limit 100).")


def test_a_prediction_on_the_curve_moves_only_the_instant_value():
    from preflight.app.prediction import Prediction
    from preflight.core.utility.assess import Assessment

    curve = [(10.0, 0.2), (40.0, 0.6), (160.0, 0.7)]
    fast = Prediction(Assessment({}, 0.3), rmse=0.1)
    placed = fast.on_curve(curve, 80.0)
    assert placed.value == pytest.approx(0.65)         # halfway between 40 and 160 (log)
    assert placed.low == pytest.approx(0.55) and placed.high == pytest.approx(0.75)
    assert fast.value == 0.3                           # the raw one is unchanged
    refined = Prediction(Assessment({}, 0.3, 0.25), rmse=0.1)
    assert refined.on_curve(curve, 80.0).value == 0.25  # a measurement: never moved
    assert fast.on_curve([], 80.0).value == 0.3


def test_the_explanation_of_a_placed_prediction_says_the_curve_s_number():
    from preflight.app.prediction import Prediction
    from preflight.core.utility.assess import Assessment
    from preflight.core.utility.predictor import Estimate

    est = Estimate(0.3, "fast", low=0.2, high=0.4, level=0.8, unsanitized=0.6)
    fast = Prediction(Assessment({}, 0.3, estimate_fast=est))
    placed = fast.on_curve([(10.0, 0.2), (40.0, 0.6), (160.0, 0.7)], 80.0)
    assert placed.explained.value == pytest.approx(0.65) == placed.value
    assert placed.explained.unsanitized == 0.6           # the rest of the estimate kept
    assert fast.explained is est


@pytest.mark.parametrize("value,minimum,shown", [
    (0.70, 0.62, "0.70"), (0.59, 0.62, "0.59"), (0.62, 0.62, "0.62"),
    (0.6191, 0.62, "0.619"), (0.61999, 0.62, "0.6199"), (0.6249, 0.62, "0.62"),
    (0.6204, 0.6201, "0.6204"),
])
def test_utility_number_never_rounds_across_the_minimum(value, minimum, shown):
    assert utility_number(value, minimum) == shown
    assert (float(shown) >= minimum) == (value >= minimum)
