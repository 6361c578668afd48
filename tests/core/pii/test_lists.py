"""Deny-list matching: whole words, case-insensitive, any whitespace inside terms."""

from __future__ import annotations

from preflight.core.pii.recognizers.lists import DenyListRecognizer, term_pattern

from pii_testutil import run


def test_whole_word_case_insensitive():
    rec = DenyListRecognizer(["Bluebird", "Project X"])
    text = "BLUEBIRD and bluebirds and project\nx and Bluebird."
    assert run(rec, text) == [("DENY_LIST", "BLUEBIRD"), ("DENY_LIST", "project\nx"),
                              ("DENY_LIST", "Bluebird")]


def test_regex_characters_are_literal():
    rec = DenyListRecognizer(["C++ team", "a.b"])
    assert run(rec, "the C++ team and axb and a.b") == [("DENY_LIST", "C++ team"),
                                                         ("DENY_LIST", "a.b")]


def test_empty_terms():
    assert term_pattern(["", "  "]) is None
    assert run(DenyListRecognizer([]), "anything") == []
