"""Policies: per-type actions, presets, files, and the hybrid with d_X on the rest."""

from __future__ import annotations

import pytest
from _change_checks import assert_change_invariants, span
from _dx_spaces import ByteSpace
from hypothesis import given, settings
from hypothesis import strategies as st

from preflight.core.errors import ConfigError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight.core.sanitize.policy import (
    PRESETS, RELATIVE_DATE, Action, DxScope, at_least, effective_type, find_policy,
    load_policy_file, policy_from_mapping, preset_for_method,
)
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.sanitize.vault import restore
from preflight.core.types import Category, Span

DOC = ("On Friday Jane Doe from Acme Corporation in Sydney wrote to jane@acme.com; "
       "she is a 44-year-old Australian born on 12 March 1980. Key sk-live-9f8e7d6c5b4a.")


def spans_of(text: str) -> list:
    return sorted([
        span(text, "Friday", "DATE_TIME"),
        span(text, "Jane Doe", "PERSON"),
        span(text, "Acme Corporation", "ORGANIZATION"),
        span(text, "Sydney", "LOCATION"),
        span(text, "jane@acme.com", "EMAIL_ADDRESS"),
        span(text, "44-year-old", "DATE_TIME"),
        span(text, "Australian", "NRP"),
        span(text, "12 March 1980", "DATE_OF_BIRTH"),
        span(text, "sk-live-9f8e7d6c5b4a", "API_KEY"),
    ], key=lambda s: s.start)


def dx_mech() -> DxMechanism:
    return DxMechanism(ByteSpace(seed=1), rank_constant=0.05, epsilon_range=(0.3, 30.0))


@pytest.mark.parametrize("value,expected", [
    ("Friday", RELATIVE_DATE), ("this week", RELATIVE_DATE), ("today", RELATIVE_DATE),
    ("12 March 2024", "DATE_TIME"), ("2024-03-12", "DATE_TIME"), ("March 3rd", "DATE_TIME"),
    ("March 3, 1959", "DATE_TIME"), ("3/12/80", "DATE_TIME"),
    ("1959", "PARTIAL_DATE"), ("March 1980", "PARTIAL_DATE"), ("the 1950s", "PARTIAL_DATE"),
    ("26-year-old", "AGE"), ("aged 71", "AGE"),
])
def test_dates_split_into_relative_full_and_age(value, expected):
    assert effective_type(span(value, value, "DATE_TIME"), value) == expected


def test_default_policy_protects_identifiers_and_keeps_context():
    out = PolicyMechanism(PRESETS["identifiers"]).sanitize(DOC, spans_of(DOC), SanitizeParams())
    assert_change_invariants(DOC, out)
    for gone in ("Jane Doe", "jane@acme.com", "sk-live-9f8e7d6c5b4a", "12 March 1980",
                 "44-year-old"):
        assert gone not in out.text
    for kept in ("Friday", "Acme Corporation", "Sydney", "Australian"):
        assert kept in out.text
    assert "1980s" in out.text and "40–49-year-old" in out.text     # generalized, not erased
    assert out.method == "identifiers" and out.report.policy.name == "identifiers"
    kept = {DOC[a:b] for a, b in out.report.kept_spans}
    assert kept == {"Friday", "Acme Corporation", "Sydney", "Australian"}
    assert out.report.actions == {"keep": 4, "placeholder": 3, "generalize": 2}
    assert "3 protected" not in out.report.guarantee           # 5 spans are replaced
    assert "5 protected span(s)" in out.report.guarantee


def test_everything_replaces_every_span_and_restores():
    mech = PolicyMechanism(PRESETS["everything"])
    out = mech.sanitize(DOC, spans_of(DOC), SanitizeParams())
    for s in spans_of(DOC):
        assert DOC[s.start:s.end] not in out.text
    assert out.report.kept_spans == ()
    assert mech.reversible
    assert restore(out.text, mech.vault) == DOC.replace("sk-live-9f8e7d6c5b4a", "<API_KEY_1>")
    mech.vault.bind(out.text)          # the exact restore of this very output: secrets too
    assert restore(out.text, mech.vault) == DOC


def test_mixed_reversible_actions_share_one_vault():
    policy = PRESETS["identifiers"].with_actions({"PERSON": Action.PSEUDONYM})
    mech = PolicyMechanism(policy)
    out = mech.sanitize(DOC, spans_of(DOC), SanitizeParams(seed=5))
    kinds = {e.kind for e in mech.vault.entries}
    assert kinds == {"placeholder", "surrogate"}
    assert "Jane Doe" not in out.text and restore(out.text, mech.vault).count("Jane Doe") == 1


def test_hybrid_protects_spans_and_perturbs_only_the_rest():
    mech = PolicyMechanism(PRESETS["identifiers-dx"], dx=dx_mech())
    spans = spans_of(DOC)
    out = mech.sanitize(DOC, spans, SanitizeParams(seed=7, epsilon=0.3))
    assert_change_invariants(DOC, out)
    protected = [s for s in spans if DOC[s.start:s.end] not in
                 {"Friday", "Acme Corporation", "Sydney", "Australian"}]
    token_changes = [c for c in out.changes if c.type == "TOKEN"]
    assert token_changes, "ε = 0.3 changes most tokens outside the spans"
    for c in token_changes:       # no d_X change touches a protected span
        assert not any(c.source_start < s.end and s.start < c.source_end for s in protected)
    for s in protected:
        assert DOC[s.start:s.end] not in out.text
    g = out.report.guarantee
    assert "5 protected span(s)" in g and "Every other token is ε-d_X private" in g


def test_hybrid_slider_equals_one_shot_at_every_epsilon():
    mech = PolicyMechanism(PRESETS["identifiers-dx"], dx=dx_mech())
    spans = spans_of(DOC)
    prepared = mech.prepare(DOC, spans, SanitizeParams(seed=11))
    for eps in (0.3, 1.0, 4.0, 30.0):
        one = PolicyMechanism(PRESETS["identifiers-dx"], dx=dx_mech()).sanitize(
            DOC, spans, SanitizeParams(seed=11, epsilon=eps))
        assert prepared.at(eps).text == one.text


def test_dx_all_policy_is_plain_dx_and_keeps_nothing_on_purpose():
    dx = dx_mech()
    out = PolicyMechanism(PRESETS["dx-all"], dx=dx).sanitize(
        DOC, spans_of(DOC), SanitizeParams(seed=3, epsilon=1.0))
    raw = dx.sanitize(DOC, [], SanitizeParams(seed=3, epsilon=1.0, scope="all"))
    assert out.text == raw.text and out.report.kept_spans == ()
    assert out.method == "dx-all"


def test_d_x_policy_without_space_is_a_clear_error():
    with pytest.raises(ConfigError, match="needs the token embedding space"):
        PolicyMechanism(PRESETS["identifiers-dx"]).sanitize(DOC, spans_of(DOC),
                                                            SanitizeParams(epsilon=1))


@given(st.sampled_from(list(PRESETS)), st.integers(0, 2**31))
@settings(max_examples=40, deadline=None)
def test_every_preset_keeps_the_change_map_exact(name, seed):
    policy = PRESETS[name]
    mech = PolicyMechanism(policy, dx=dx_mech())
    out = mech.sanitize(DOC, spans_of(DOC), SanitizeParams(seed=seed, epsilon=2.0))
    assert_change_invariants(DOC, out)
    if policy.dx is DxScope.NONE:
        kept = {(a, b) for a, b in out.report.kept_spans}
        for s in spans_of(DOC):   # a span is either kept verbatim or gone
            assert ((s.start, s.end) in kept) == (policy.action_for(s, DOC[s.start:s.end])
                                                  is Action.KEEP)


def test_strictness_order():
    assert at_least(Action.PLACEHOLDER, Action.GENERALIZE)
    assert at_least(Action.REDACT, Action.PLACEHOLDER)
    assert not at_least(Action.KEEP, Action.GENERALIZE)
    assert not at_least(Action.GENERALIZE, Action.MASK)


def test_methods_map_to_presets():
    assert preset_for_method("dx") == "dx-all"
    assert preset_for_method("dx", "pii") == "dx-pii"
    assert preset_for_method("mask") == "mask"
    with pytest.raises(ConfigError, match="Unknown sanitization method"):
        preset_for_method("shred")


def test_policy_file_round_trips_and_loads_by_path(tmp_path):
    policy = PRESETS["identifiers"].with_actions({"ORGANIZATION": Action.PLACEHOLDER})
    path = tmp_path / "strict.toml"
    path.write_text(policy.to_toml().replace('name = "identifiers"', 'name = "strict"'))
    loaded = find_policy(str(path))
    assert loaded.name == "strict" and loaded.source == str(path)
    assert loaded.by_type["ORGANIZATION"] is Action.PLACEHOLDER
    org = span(DOC, "Acme Corporation", "ORGANIZATION")
    assert loaded.action_for(org, "Acme Corporation") is Action.PLACEHOLDER
    assert PRESETS["identifiers"].action_for(org, "Acme Corporation") is Action.KEEP


@pytest.mark.parametrize("body,needle", [
    ('name = "x"\n[types]\nPERSON = "shred"\n', "'types.PERSON' must be one of"),
    ('name = "x"\n[categories]\nvip = "keep"\n', "'categories.vip' is not a category"),
    ('name = "x"\ndx = "sometimes"\n', "'dx' must be one of"),
    ('name = "x"\nepsilon = -1\n', "'epsilon' must be a positive number"),
    ('name = "x"\ncolour = "red"\n', "'colour' is not a policy key"),
    ('name = "x"\n[types]\nPERSON = \n', "not valid TOML"),
    ('name = "x"\nv = ' + "[" * 5000 + "]" * 5000 + "\n", "too deeply"),
])
def test_broken_policy_file_names_file_and_problem(tmp_path, body, needle):
    path = tmp_path / "p.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_policy_file(path)
    assert str(path) in err.value.message and needle in err.value.message


def test_toml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('name = "x"\n\n[types]\nPERSON = \n')
    with pytest.raises(ConfigError, match=r"line 4"):
        load_policy_file(path)


def test_unknown_policy_lists_the_presets():
    with pytest.raises(ConfigError) as err:
        find_policy("strictest")
    assert "identifiers" in err.value.hint and "everything" in err.value.hint


def test_saved_policy_cannot_shadow_a_preset():
    fake = policy_from_mapping({"name": "identifiers", "fallback": "keep"}, "settings")
    assert find_policy("identifiers", [fake]) is PRESETS["identifiers"]


def test_unknown_type_falls_back_by_category():
    policy = PRESETS["identifiers"]
    odd = Span(2, 12, "NEW_ID", Category.QUASI_IDENTIFIER, 1.0, "x", "y")
    assert policy.action_for(odd, "CUSTOMER-7") is Action.KEEP      # unknown: quasi-id
    direct = Span(2, 12, "NEW_ID", Category.DIRECT_IDENTIFIER, 1.0, "x", "y")
    assert policy.action_for(direct, "CUSTOMER-7") is Action.PLACEHOLDER


@st.composite
def _doc_with_names(draw):
    words = draw(st.lists(st.sampled_from(
        ["the", "café", "naïve", "end", "Hello", "world", "a", "of", "$2,404", "sk-proj",
         "—", "👍"]), min_size=1, max_size=20))
    seps = draw(st.lists(st.sampled_from([" ", "  ", "\n", ", ", "\u00a0", "-"]),
                         min_size=len(words), max_size=len(words)))
    text = "Ann Lee wrote: " + "".join(w + s for w, s in zip(words, seps)) + " to Ann Lee."
    return text


@given(_doc_with_names(), st.integers(0, 2**31), st.floats(0.05, 100.0))
@settings(max_examples=50, deadline=None)
def test_hybrid_d_x_part_never_glues_or_splits_words(text, seed, eps):
    from preflight.core.sanitize.dx_classes import boundary_pattern

    spans = [span(text, "Ann Lee", "PERSON", k) for k in (0, 1)]
    out = PolicyMechanism(PRESETS["identifiers-dx"], dx=dx_mech()).sanitize(
        text, spans, SanitizeParams(seed=seed, epsilon=eps))
    assert_change_invariants(text, out)
    assert "Ann Lee" not in out.text
    for c in out.changes:
        if c.type == "TOKEN":       # d_X's part: the same whitespace pattern, word for word
            assert boundary_pattern(c.original) == boundary_pattern(c.replacement)
    assert boundary_pattern(out.text.replace("<PERSON_1>", "x")) == \
        boundary_pattern(text.replace("Ann Lee", "x"))


def test_a_policy_s_epsilon_is_its_starting_point():
    policy = policy_from_mapping({"name": "mine", "dx": "rest", "epsilon": 2.0}, "test")
    out = PolicyMechanism(policy, dx=dx_mech()).sanitize(DOC, spans_of(DOC),
                                                         SanitizeParams(seed=4))
    assert out.epsilon == 2.0
    with pytest.raises(ConfigError, match="privacy level"):
        PolicyMechanism(PRESETS["identifiers-dx"], dx=dx_mech()).sanitize(
            DOC, spans_of(DOC), SanitizeParams(seed=4))
