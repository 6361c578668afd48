"""What will leave, in words: plurals, the most severe kind first, the empty case, and
the three groups (left by the policy, kept by the policy, allowed by the user)."""

from __future__ import annotations

import re

from preflight.app.leave_summary import (
    NOTHING, by_kind, kind_words, summarize_leaving,
)
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, SanitizedText, SanitizeReport, Span

D, Q, S = Category.DIRECT_IDENTIFIER, Category.QUASI_IDENTIFIER, Category.SECRET
DOC = ("Alice Martin told Bob Stone and ALICE MARTIN that the password is hunter2xyz; "
       "write to bob@corp.example from Lyon.")


def _spans(text: str = DOC) -> list[Span]:
    found = []
    for rx, typ, cat in ((r"Alice Martin|ALICE MARTIN|Bob Stone", "PERSON", D),
                         (r"hunter2xyz", "SECRET", S), (r"bob@corp\.example", "EMAIL_ADDRESS", D),
                         (r"Lyon", "LOCATION", Q)):
        for m in re.finditer(rx, text):
            found.append(Span(m.start(), m.end(), typ, cat, 0.9, "test", "test"))
    return sorted(found, key=lambda s: s.start)


def _unchanged(text: str = DOC) -> SanitizedText:
    """A payload where nothing was replaced (d_X drew every token back)."""
    return SanitizedText(text, "dx-all", (), SanitizeReport(kept_spans=()))


def test_plurals_and_severity_order():
    assert kind_words("PERSON", 1) == "1 name"
    assert kind_words("EMAIL_ADDRESS", 2) == "2 e-mail addresses"
    assert kind_words("FOO_BAR", 2) == "2 foo bar values"
    summary = summarize_leaving(DOC, _unchanged(), _spans())
    # one item per distinct value: "Alice Martin" and "ALICE MARTIN" are one name
    assert summary.sentence.startswith(
        "1 password or key, 2 names, 1 e-mail address and 1 place will leave your computer.")
    assert summary.severity == "high"
    assert summary.leaking_types == ("SECRET", "PERSON", "EMAIL_ADDRESS", "LOCATION")


def test_larger_count_first_within_a_category():
    items = summarize_leaving(DOC, _unchanged(), [s for s in _spans()
                                                  if s.category is D]).leaving
    assert by_kind(items) == "2 names and 1 e-mail address"


def test_nothing_leaves_under_placeholders():
    spans = _spans()
    sanitized = PolicyMechanism(PRESETS["everything"]).sanitize(DOC, spans, SanitizeParams())
    summary = summarize_leaving(DOC, sanitized, spans)
    assert summary.sentence == NOTHING and summary.severity == "none"
    assert summary.leaking_types == ()


def test_kept_by_policy_and_allowed_by_user_are_said_apart():
    spans = _spans()
    sanitized = PolicyMechanism(PRESETS["identifiers"]).sanitize(DOC, spans, SanitizeParams())
    summary = summarize_leaving(DOC, sanitized, spans)
    assert summary.sentence == ("Nothing your policy protects will leave your computer. "
                                "Your policy keeps 1 place as written.")
    assert summary.severity == "none" and summary.leaking_types == ()
    # "Allow this time" on Bob Stone: the user let him through
    allowed = {("PERSON", "Bob Stone")}
    kept = [s for s in spans if (s.type, DOC[s.start:s.end]) not in allowed]
    sanitized = PolicyMechanism(PRESETS["identifiers"]).sanitize(DOC, kept, SanitizeParams())
    summary = summarize_leaving(DOC, sanitized, spans, allowed)
    assert "You let 1 name through this time." in summary.sentence
    assert summary.severity == "low" and summary.leaking_types == ()


def test_a_value_copied_back_by_a_change_still_leaves():
    from preflight.core.types import apply_replacements

    spans = [s for s in _spans() if s.type == "PERSON"]
    # d_X replaced "Bob Stone" by itself: covered by a change, yet still in the payload
    b = next(s for s in spans if DOC[s.start:s.end] == "Bob Stone")
    out, changes = apply_replacements(DOC, [(b.start, b.end, "Bob Stone", "TOKEN")])
    summary = summarize_leaving(DOC, SanitizedText(out, "dx", changes), [b])
    assert summary.sentence == "1 name will leave your computer."


def test_under_the_hybrid_a_kept_value_the_noise_let_through_leaves():
    spans = [s for s in _spans() if s.type == "LOCATION"]
    sanitized = SanitizedText(DOC, "identifiers-dx", (), SanitizeReport(
        kept_spans=tuple((s.start, s.end) for s in spans),
        policy=PRESETS["identifiers-dx"].summary()))
    summary = summarize_leaving(DOC, sanitized, spans)
    assert summary.sentence == "1 place will leave your computer."
    assert summary.leaking_types == ("LOCATION",) and summary.severity == "low"
