"""Shared checks and generators for sanitization tests (operators, vault, d_X)."""

from __future__ import annotations

from hypothesis import strategies as st

from preflight.core.types import Category, SanitizedText, Span


def assert_change_invariants(source: str, result: SanitizedText) -> None:
    """Every change maps its output range to its source range, and text outside the
    changes is copied verbatim (rebuilding the source from the output must work)."""
    out = result.text
    rebuilt: list[str] = []
    out_cursor = src_cursor = 0
    for c in result.changes:
        assert 0 <= c.start <= c.end <= len(out)
        assert 0 <= c.source_start <= c.source_end <= len(source)
        assert out[c.start:c.end] == c.replacement
        assert source[c.source_start:c.source_end] == c.original
        assert c.start >= out_cursor and c.source_start >= src_cursor, "changes overlap"
        # The gap before this change is identical in source and output.
        assert out[out_cursor:c.start] == source[src_cursor:c.source_start]
        rebuilt.append(out[out_cursor:c.start])
        rebuilt.append(c.original)
        out_cursor, src_cursor = c.end, c.source_end
    assert out[out_cursor:] == source[src_cursor:]
    rebuilt.append(out[out_cursor:])
    assert "".join(rebuilt) == source


def span(text: str, value: str, typ: str, occurrence: int = 0) -> Span:
    """The span of the ``occurrence``-th ``value`` in ``text``."""
    i = -1
    for _ in range(occurrence + 1):
        i = text.index(value, i + 1)
    return Span(i, i + len(value), typ, Category.DIRECT_IDENTIFIER, 0.9, "test", "test")


TYPES = ["PERSON", "EMAIL_ADDRESS", "CREDIT_CARD", "DATE_TIME", "API_KEY", "LOCATION",
         "IBAN_CODE", "PHONE_NUMBER", "AGE", "STREET_ADDRESS", "ORGANIZATION", "URL"]

# Values repeat (and repeat in other spellings) so same-value handling is exercised.
VALUES = ["Ann", "ann", "ANN", "Bob Lee", "bob  lee", "x", "12", "a@b.c", "Ünal Öz",
          "4111 1111 1111 1111", "4111-1111-1111-1111", "PERSON_1", "<PERSON_1>", "é😀",
          "line\r\nbreak", "2020-01-02", "Rome", "42", " ", "中文名"]

# Plain text includes things that look like tokens, to test collision avoidance.
PLAIN = st.one_of(
    st.text(alphabet=st.sampled_from(list("abcXYZ019 _-<>[]{}&;.,'\r\n\t") + [
        "é", "ß", "ſ", "\u212a", "中", "😀", "\u00a0"]), max_size=12),
    st.sampled_from(["PERSON_1", "person 1", "<PERSON_2>", "EMAIL_ADDRESS_1", "Rome",
                     "Ann", "&lt;", "PERSON", "_", "1"]),
)


@st.composite
def documents(draw, max_parts: int = 12):
    """(text, spans): text built from plain parts and PII values, spans on the values.
    Adjacent values give adjacent spans."""
    parts = draw(st.lists(
        st.one_of(PLAIN.map(lambda s: ("plain", s, "")),
                  st.tuples(st.just("pii"), st.sampled_from(VALUES), st.sampled_from(TYPES))),
        max_size=max_parts,
    ))
    text = ""
    spans: list[Span] = []
    for kind, value, typ in parts:
        if kind == "pii":
            spans.append(Span(len(text), len(text) + len(value), typ,
                              Category.DIRECT_IDENTIFIER, 0.9, "test", "test"))
        text += value
    return text, spans
