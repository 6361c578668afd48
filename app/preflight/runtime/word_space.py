"""A d_X space over word vectors in GloVe text format (word-level tokens)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np

from preflight.core.errors import InputError, ModelUnavailableError
from preflight.core.ports import Tokenization
from preflight.runtime.hashing import VerifiedHashCache
from preflight.runtime.space_base import BaseSpace, word_tokenization

_WORD_RE = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]", re.UNICODE)


class WordVectorSpace(BaseSpace):
    """Word vectors in GloVe text format (``word v1 v2 ... vn`` per line).

    Tokens are words and punctuation marks, matched case-insensitively (GloVe is
    lower-cased). Words missing from the file cannot be embedded and stay unchanged;
    :meth:`tokenize` leaves them out and counts them in
    ``Tokenization.out_of_vocabulary`` (the mechanism reports them).
    """

    def __init__(self, path: Path | str, *, lowercase: bool = True,
                 hash_cache: VerifiedHashCache | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelUnavailableError(
                f"The word-vector file for d_X does not exist: {self.path}.",
                "Point to a GloVe-format text file.",
            )
        self.lowercase = lowercase
        self.key = (hash_cache or VerifiedHashCache()).sha256(self.path)
        self.name = f"{self.path.name} (word vectors)"
        words: list[str] = []
        rows: list[np.ndarray] = []
        with open(self.path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.rstrip("\n").split(" ")
                if len(parts) < 3:
                    continue
                try:
                    rows.append(np.asarray(parts[1:], dtype=np.float32))
                except ValueError:
                    raise InputError(
                        f"{self.path.name}: line {lineno} is not 'word v1 v2 ...'.",
                        "Use a GloVe-format text file.",
                    ) from None
                words.append(parts[0])
        if not rows or len({r.shape[0] for r in rows}) != 1:
            raise InputError(
                f"{self.path.name} holds no vectors or vectors of different sizes.",
                "Use a GloVe-format text file with one vector per line.",
            )
        self._matrix = np.ascontiguousarray(np.stack(rows), dtype=np.float32)
        self._words = words
        self._index = {}
        for i, w in enumerate(words):
            self._index.setdefault(w, i)
        self._pieces = [w.encode("utf-8") for w in words]
        self._build_filter([False] * len(words))

    def tokenize(self, text: str) -> Tokenization:
        return word_tokenization(text, _WORD_RE, self._lookup)

    def _lookup(self, word: str) -> int | None:
        w = unicodedata.normalize("NFC", word)
        return self._index.get(w.lower() if self.lowercase else w)
