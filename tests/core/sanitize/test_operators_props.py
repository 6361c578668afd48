"""Properties every operator keeps, over generated documents with random spans
(adjacent spans, repeated values in other spellings, unicode, CRLF, token look-alikes)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _change_checks import assert_change_invariants, documents
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.operators import REDACTED, value_key

OPERATORS = ["redact", "delete", "mask", "placeholder", "pseudonym", "generalize"]


@pytest.mark.parametrize("method", OPERATORS)
@settings(max_examples=120, deadline=None)
@given(doc=documents(), seed=st.integers(0, 2**32))
def test_change_list_maps_output_to_source(method, doc, seed):
    text, spans = doc
    result = create_mechanism(method).sanitize(text, spans, SanitizeParams(seed=seed))
    assert_change_invariants(text, result)
    assert len(result.changes) == len(spans)
    for c, s in zip(result.changes, spans):
        # every change covers its span (delete may take one neighbouring space too)
        assert c.source_start <= s.start and s.end <= c.source_end
        assert (c.source_end - c.source_start) - (s.end - s.start) in (0, 1)


@settings(max_examples=150, deadline=None)
@given(doc=documents())
def test_redact_and_mask_replacements(doc):
    text, spans = doc
    redacted = create_mechanism("redact").sanitize(text, spans, SanitizeParams())
    assert all(c.replacement == REDACTED for c in redacted.changes)
    masked = create_mechanism("mask").sanitize(text, spans, SanitizeParams())
    assert len(masked.text) == len(text)
    for c in masked.changes:
        for a, b in zip(c.original, c.replacement):
            assert b == a if not a.isalnum() else b in ("*", a)
        if c.type != "CREDIT_CARD":
            assert not any(ch.isalnum() for ch in c.replacement)


@settings(max_examples=150, deadline=None)
@given(doc=documents())
def test_placeholder_same_value_same_token_and_distinct_values_distinct_tokens(doc):
    text, spans = doc
    result = create_mechanism("placeholder").sanitize(text, spans, SanitizeParams())
    token_of: dict[tuple[str, str], str] = {}
    for c in result.changes:
        assert re.fullmatch(r"<[A-Z][A-Z0-9_]*_[1-9][0-9]*>", c.replacement)
        key = (c.type, value_key(c.original, c.type))
        assert token_of.setdefault(key, c.replacement) == c.replacement
    assert len(set(token_of.values())) == len(token_of)


@settings(max_examples=100, deadline=None)
@given(doc=documents(), seed=st.integers(0, 2**32))
def test_pseudonyms_are_consistent_unique_and_new(doc, seed):
    text, spans = doc
    result = create_mechanism("pseudonym").sanitize(text, spans, SanitizeParams(seed=seed))
    sur_of: dict[tuple[str, str], str] = {}
    for c in result.changes:
        key = (c.type, value_key(c.original, c.type))
        assert sur_of.setdefault(key, c.replacement) == c.replacement
        assert c.replacement.casefold() not in text.casefold()
    assert len({s.casefold() for s in sur_of.values()}) == len(sur_of)
