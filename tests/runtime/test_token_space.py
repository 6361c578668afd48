"""Token spaces: character-aligned units, the vocabulary filter, content keys."""

from __future__ import annotations

import numpy as np
import pytest

from preflight.core.errors import InputError
from preflight.runtime.token_space import (
    ArraySpace,
    is_printable_piece,
    units_from_byte_pieces,
)


def test_units_group_tokens_that_split_a_character():
    text = "a😀b\r\né"
    raw = text.encode()
    # split the emoji (4 bytes) and é (2 bytes) across tokens
    pieces = [b"a", raw[1:3], raw[3:5], b"b", b"\r\n", raw[-2:-1], raw[-1:]]
    unit_of, us, ue = units_from_byte_pieces(text, pieces)
    units = [text[s:e] for s, e in zip(us, ue)]
    assert units == ["a", "😀", "b", "\r\n", "é"]
    assert unit_of.tolist() == [0, 1, 1, 2, 3, 4, 4]


def test_units_reject_a_tokenizer_that_changes_the_text():
    with pytest.raises(InputError):
        units_from_byte_pieces("abc", [b"a", b"c"])


@pytest.mark.parametrize("piece,keep,why", [
    (b"hello", True, "kept"),
    (b" \xc3\xa9", True, "kept"),
    (b"\r\n", True, "kept"),
    (b"\t", True, "kept"),
    (b"\xf0\x9f", False, "partial_utf8"),
    (b"", False, "empty"),
    (b"\x0c", False, "non_printable"),
    (b"\x00", False, "non_printable"),
    ("\ufffd".encode(), False, "non_printable"),
])
def test_vocabulary_filter_rule(piece, keep, why):
    assert is_printable_piece(piece) == (keep, why)


def test_array_space_key_depends_on_content():
    a = ArraySpace(np.eye(3), ["a", "b", "c"])
    b = ArraySpace(np.eye(3) * 2, ["a", "b", "c"])
    assert a.key != b.key
