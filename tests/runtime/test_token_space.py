"""Token spaces: character-aligned units, the vocabulary filter, GloVe files, caching."""

from __future__ import annotations

import numpy as np
import pytest

from preflight.core.errors import InputError, ModelUnavailableError
from preflight.runtime.token_space import (
    ArraySpace,
    WordVectorSpace,
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


def test_word_vector_file(tmp_path):
    f = tmp_path / "vecs.txt"
    f.write_text("the 0.1 0.2 0.3\ncat 1 0 0\nsat 0 1 0\n. 0 0 1\n", "utf-8")
    space = WordVectorSpace(f)
    assert space.matrix.shape == (4, 3) and space.matrix.dtype == np.float32
    tok = space.tokenize("The cat sat on the mat.")
    assert [space.piece(i).decode() for i in tok.ids] == ["the", "cat", "sat", "the", "."]
    assert tok.out_of_vocabulary == 2                      # "on", "mat"
    text = "The cat sat on the mat."
    assert [text[s:e] for s, e in zip(tok.unit_start, tok.unit_end)] == \
        ["The", "cat", "sat", "the", "."]
    assert space.filter_info()["kept"] == 4


def test_word_vector_file_errors(tmp_path):
    with pytest.raises(ModelUnavailableError):
        WordVectorSpace(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1 2 3\n", "utf-8")
    with pytest.raises(InputError):
        WordVectorSpace(bad)


def test_array_space_key_depends_on_content():
    a = ArraySpace(np.eye(3), ["a", "b", "c"])
    b = ArraySpace(np.eye(3) * 2, ["a", "b", "c"])
    assert a.key != b.key


def test_word_vector_tokenize_is_safe_across_threads(tmp_path):
    """The out-of-vocabulary count belongs to each call's result, not to the shared
    space: threads tokenizing different texts at once each get their own count."""
    from concurrent.futures import ThreadPoolExecutor

    f = tmp_path / "vecs.txt"
    f.write_text("the 0.1 0.2 0.3\ncat 1 0 0\nsat 0 1 0\n. 0 0 1\n", "utf-8")
    space = WordVectorSpace(f)
    texts = {n: "the cat " + " ".join(f"zz{i}" for i in range(n)) for n in range(12)}

    def count(n: int) -> tuple[int, int, int]:
        tok = space.tokenize(texts[n])
        return n, tok.out_of_vocabulary, len(tok.ids)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(count, [n for n in texts for _ in range(40)]))
    assert all(oov == n and kept == 2 for n, oov, kept in results)
    assert not hasattr(space, "out_of_vocabulary")
