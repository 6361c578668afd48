"""Features: the fast tier needs only texts and the change list; NaN marks 'not known'."""

from __future__ import annotations

import math

from _utility_fakes import DOC, dx_like
from preflight.core.types import Category, SanitizedText, Span, apply_replacements
from preflight.core.utility.features import (
    ALL_FEATURES,
    FAST_FEATURES,
    document_form,
    fast_features,
    refined_features,
    vector,
)


def _span(text: str, value: str, typ: str = "PERSON") -> Span:
    start = text.index(value)
    return Span(start, start + len(value), typ, Category.DIRECT_IDENTIFIER, 0.9, "test", "t")


def test_dx_features_use_the_mechanism_token_counts_and_epsilon():
    san = dx_like(DOC, 40.0)
    typed = fast_features(DOC, san)
    assert typed.A == typed.epsilon == 40.0 and typed.method == "dx" and not typed.refined
    f = typed.as_dict()
    assert set(f) == set(FAST_FEATURES)
    assert f["epsilon"] == 40.0
    assert math.isclose(f["log_epsilon"], math.log(40.0))
    assert math.isclose(f["frac_tokens_changed"], san.report.dx.tokens_changed / san.report.dx.tokens_total)
    assert f["method_dx"] == 1.0 and f["method_placeholder"] == 0.0
    assert 0.0 < f["frac_chars_changed"] <= 1.0


def test_operator_gets_method_indicator_nan_epsilon_and_pii_counts():
    spans = [_span(DOC, "Alice Martin"), _span(DOC, "Bob Stone"), _span(DOC, "Paris", "LOCATION")]
    reps = [(s.start, s.end, f"<{s.type}_{i}>", s.type) for i, s in enumerate(spans[:2], 1)]
    out, changes = apply_replacements(DOC, reps)
    san = SanitizedText(out, "placeholder", changes)
    f = fast_features(DOC, san, spans).as_dict()
    assert math.isnan(f["epsilon"]) and math.isnan(f["log_epsilon"])
    assert f["method_placeholder"] == 1.0 and f["method_dx"] == 0.0
    assert f["pii_total"] == 3.0
    assert f["pii_left"] == 1.0                      # Paris was left in place
    assert math.isclose(f["frac_pii_left"], 1 / 3)
    # word share changed: 4 of the document's words fall in the two replaced names
    n_words = len(DOC.split())
    assert math.isclose(f["frac_tokens_changed"], 4 / n_words, rel_tol=0.05)


def test_unchanged_text_has_zero_change_and_unit_length_ratio():
    f = fast_features(DOC, SanitizedText(DOC, "redact", ())).as_dict()
    assert f["frac_tokens_changed"] == 0.0 and f["frac_chars_changed"] == 0.0
    assert f["length_ratio"] == 1.0
    assert math.isnan(f["frac_pii_left"])           # no PII: undefined, not 0 or 1


def test_document_form_tells_prose_from_a_form_of_header_lines():
    prose = ("We study how summaries of scientific abstracts change when names are replaced. "
             "Our method keeps the argument intact and measures what a reader loses.")
    form = ("From: Ann Lee <ann@example.com>\nTo: support\nSubject: Order 4411-22\n"
            "Date: 2025-03-02\n\nThe parcel (#4411-22, 3 x 12.50 EUR) arrived late.\n")
    letters_p, fields_p = document_form(prose)
    letters_f, fields_f = document_form(form)
    assert fields_p == 0.0 and math.isclose(fields_f, 4 / 5)   # 4 of 5 non-empty lines
    assert letters_p > 0.95 > letters_f > 0.5                  # digits and symbols count
    # what the fast features carry, the same for every sanitization of the document
    f = fast_features(form, SanitizedText("x", "redact", ())).as_dict()
    assert (f["letter_share"], f["field_line_share"]) == (letters_f, fields_f)


def test_document_form_of_empty_and_non_latin_text():
    assert all(math.isnan(v) for v in document_form(""))
    assert all(math.isnan(v) for v in document_form("  \n\t "))
    letters, fields = document_form("会議の議事録です。予算は承認されました。")
    assert letters > 0.8 and fields == 0.0                     # letters of any script


def test_refined_features_and_vector_order():
    r = refined_features(sim_sanitized=0.5, sim_slm_original=0.8, sim_slm_sanitized=0.6,
                         ppl_sanitized=math.e ** 3, ppl_original=math.e)
    assert math.isclose(r["slm_d_minus_c"], -0.2)
    assert math.isclose(r["log_ppl_sanitized"], 3.0) and math.isclose(r["log_ppl_ratio"], 2.0)
    v = vector({"epsilon": 2.0, "sim_sanitized": 0.5}, ALL_FEATURES)
    assert len(v) == len(ALL_FEATURES)
    assert v[ALL_FEATURES.index("epsilon")] == 2.0
    assert v[ALL_FEATURES.index("sim_sanitized")] == 0.5
    assert math.isnan(v[ALL_FEATURES.index("sim_slm_sanitized")])


def test_typed_features_refine_into_the_paper_names_and_flat_dict():
    f = fast_features(DOC, dx_like(DOC, 40.0)).with_refined(
        sim_sanitized=0.5, sim_slm_original=0.8, sim_slm_sanitized=0.6,
        ppl_sanitized=math.e ** 3, ppl_original=math.e)
    assert (f.A, f.B, f.C, f.D) == (40.0, 0.5, 0.8, 0.6) and f.refined
    flat = f.as_dict()
    assert set(flat) == set(ALL_FEATURES)
    assert math.isclose(flat["slm_d_minus_c"], -0.2) and math.isclose(flat["log_ppl_ratio"], 2.0)
    assert vector(f, ALL_FEATURES) == vector(flat, ALL_FEATURES)
