"""Overlap resolution: table-driven, including chains and identical spans."""

from __future__ import annotations

import itertools

import pytest

from preflight.core.pii.entities import category_of
from preflight.core.pii.overlaps import merge_same_type, resolve_overlaps
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Evidence, Span


def S(start, end, typ, score=0.85, rec="P"):
    evidence = NER_EVIDENCE if rec == NER else Evidence.RULE
    return Span(start, end, typ, category_of(typ), score, rec, "why", evidence)


NER = "SpacyRecognizer"

CASES = [
    # (name, input spans, expected (start, end, type) tuples)
    ("disjoint spans are kept", [S(0, 4, "PERSON"), S(6, 9, "EMAIL_ADDRESS")],
     [(0, 4, "PERSON"), (6, 9, "EMAIL_ADDRESS")]),
    ("touching spans are not an overlap", [S(0, 4, "PERSON"), S(4, 8, "PERSON")],
     [(0, 4, "PERSON"), (4, 8, "PERSON")]),
    ("same type overlapping: union", [S(0, 6, "PERSON"), S(4, 10, "PERSON")],
     [(0, 10, "PERSON")]),
    ("same type chain merges transitively",
     [S(0, 5, "STREET_ADDRESS"), S(4, 9, "STREET_ADDRESS"), S(8, 14, "STREET_ADDRESS")],
     [(0, 14, "STREET_ADDRESS")]),
    ("identical spans from two recognizers → one",
     [S(3, 9, "CREDIT_CARD", 1.0, "A"), S(3, 9, "CREDIT_CARD", 1.0, "B")],
     [(3, 9, "CREDIT_CARD")]),
    ("identical span, two types: higher category wins",
     [S(0, 10, "DATE_TIME", 0.85, "X"), S(0, 10, "CREDIT_CARD", 0.85, "Y")],
     [(0, 10, "CREDIT_CARD")]),
    ("secret beats direct identifier", [S(0, 20, "PERSON", 0.9), S(5, 25, "API_KEY", 0.6)],
     [(5, 25, "API_KEY")]),
    ("nested quasi inside direct: container wins",
     [S(0, 40, "STREET_ADDRESS", 0.95), S(20, 30, "LOCATION", 0.85, NER)],
     [(0, 40, "STREET_ADDRESS")]),
    ("same category: higher score wins",
     [S(0, 11, "US_SSN", 0.85), S(0, 11, "PHONE_NUMBER", 0.6)], [(0, 11, "US_SSN")]),
    ("same category and score: longer wins",
     [S(0, 5, "PERSON", 0.8), S(0, 9, "DENY_LIST", 0.8)], [(0, 9, "DENY_LIST")]),
    ("weak sensitive guess loses to a confident milder one",
     [S(0, 10, "PHONE_NUMBER", 0.4), S(0, 10, "DATE_OF_BIRTH", 0.9)], [(0, 10, "DATE_OF_BIRTH")]),
    ("pattern evidence beats the NER model's guess",
     [S(0, 8, "PERSON", 0.85, NER), S(0, 9, "ORGANIZATION", 0.75, "OrganizationCueRecognizer")],
     [(0, 9, "ORGANIZATION")]),
    ("chain of different types: greedy by rank",
     [S(0, 6, "PERSON", 0.85), S(5, 12, "DATE_TIME", 0.85), S(11, 20, "PHONE_NUMBER", 0.9)],
     [(0, 6, "PERSON"), (11, 20, "PHONE_NUMBER")]),
    ("middle winner drops both neighbours",
     [S(0, 6, "LOCATION", 0.85), S(5, 12, "IBAN_CODE", 1.0), S(11, 20, "NRP", 0.85)],
     [(5, 12, "IBAN_CODE")]),
]


@pytest.mark.parametrize("name,spans,expected", CASES, ids=[c[0] for c in CASES])
def test_resolution_table(name, spans, expected):
    got = resolve_overlaps(spans)
    assert [(s.start, s.end, s.type) for s in got] == expected


@pytest.mark.parametrize("name,spans,expected", CASES, ids=[c[0] for c in CASES])
def test_result_is_sorted_disjoint_and_order_independent(name, spans, expected):
    results = {tuple((s.start, s.end, s.type, s.recognizer) for s in resolve_overlaps(list(p)))
               for p in itertools.permutations(spans)}
    assert len(results) == 1, "resolution must not depend on input order"
    got = resolve_overlaps(spans)
    for a, b in zip(got, got[1:]):
        assert a.end <= b.start


def test_merge_keeps_best_member_metadata():
    merged = merge_same_type([S(0, 6, "PERSON", 0.7, "A"), S(4, 10, "PERSON", 0.9, "B")])
    assert len(merged) == 1
    assert (merged[0].start, merged[0].end, merged[0].score, merged[0].recognizer) == (0, 10, 0.9, "B")


def test_empty_input():
    assert resolve_overlaps([]) == []
