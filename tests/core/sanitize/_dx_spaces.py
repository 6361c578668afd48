"""Small token spaces for d_X tests (fakes of the real GGUF space)."""

from __future__ import annotations

import numpy as np

from preflight.runtime.token_space import (
    ArraySpace,
    Tokenization,
    BaseSpace,
    units_from_byte_pieces,
)


def random_space(V: int = 200, dim: int = 8, seed: int = 0, *, integer: bool = False,
                 duplicates: int = 0) -> ArraySpace:
    """``V`` random vectors named w0..w{V-1}. ``integer`` puts them on a small integer
    grid (many exactly tied distances); ``duplicates`` copies some rows exactly."""
    rng = np.random.default_rng(seed)
    if integer:
        M = rng.integers(-2, 3, size=(V, dim)).astype(np.float32)
    else:
        M = rng.standard_normal((V, dim)).astype(np.float32)
    for i in range(duplicates):
        M[V - 1 - i] = M[i]
    return ArraySpace(M, [f"w{i}" for i in range(V)], name=f"random {V}x{dim}")


class ByteSpace(BaseSpace):
    """A byte-level BPE-like space: all 256 byte tokens plus some multi-byte pieces,
    greedy longest-match tokenization (so emoji and accents split into byte tokens)."""

    WORDS = ["the", " the", " a", " of", "ing", " and", "é", " é", "\r\n", "\n", " ",
             "ca", "fé", " caf", "👍", "Hello", " world", "—", "na", "ïve"]

    def __init__(self, dim: int = 6, seed: int = 0) -> None:
        self._pieces = [bytes([b]) for b in range(256)] + [w.encode() for w in self.WORDS]
        rng = np.random.default_rng(seed)
        self._matrix = rng.standard_normal((len(self._pieces), dim)).astype(np.float32)
        self.name = "byte space"
        self.key = "bytespace%d" % seed
        self._by_len = sorted(range(len(self._pieces)), key=lambda i: -len(self._pieces[i]))
        self._build_filter([False] * len(self._pieces))

    def tokenize(self, text: str) -> Tokenization:
        raw = text.encode()
        ids, pieces, i = [], [], 0
        while i < len(raw):
            for t in self._by_len:
                p = self._pieces[t]
                if raw.startswith(p, i):
                    ids.append(t)
                    pieces.append(p)
                    i += len(p)
                    break
        unit_of, us, ue = units_from_byte_pieces(text, pieces)
        return Tokenization(np.asarray(ids, np.int64), unit_of, us, ue)


class SpacedWordSpace(BaseSpace):
    """``V`` random vectors: token ``i`` is ``"w<i>"`` (a continuation) for even ``i`` and
    ``" w<i>"`` (a word start) for odd ``i``, plus whitespace tokens; text is tokenized
    into those pieces exactly (a small stand-in for a GPT-2 style vocabulary)."""

    WHITESPACE = [" ", "\n", "  "]

    def __init__(self, V: int = 200, dim: int = 8, seed: int = 0) -> None:
        words = [f"w{i}" if i % 2 == 0 else f" w{i}" for i in range(V)] + self.WHITESPACE
        self._pieces = [w.encode() for w in words]
        self._index = {w: i for i, w in enumerate(words)}
        rng = np.random.default_rng(seed)
        self._matrix = rng.standard_normal((len(words), dim)).astype(np.float32)
        self.name = f"spaced words {V}x{dim}"
        self.key = f"spaced{V}x{dim}s{seed}"
        self._build_filter([False] * len(words))

    def tokenize(self, text: str) -> Tokenization:
        import re

        # odd words carry their space; a double space before one is " " + " w<odd>"
        pieces = re.findall(r" w\d*[13579](?!\d)|w\d*[02468](?!\d)"
                            r"|  (?!w\d*[13579](?!\d))| |\n", text)
        ids = [self._index[p] for p in pieces]
        unit_of, us, ue = units_from_byte_pieces(text, [p.encode() for p in pieces])
        return Tokenization(np.asarray(ids, np.int64), unit_of, us, ue)
