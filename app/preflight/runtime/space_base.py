"""What every token space shares: the candidate-vocabulary filter, token pieces, byte
units and the on-disk cache of derived arrays (see :mod:`preflight.runtime.token_space`)."""

from __future__ import annotations

import hashlib
import io
import logging
import re
from typing import Callable, Sequence

import numpy as np

from preflight.core import paths
from preflight.core.errors import InputError
from preflight.core.fsutil import atomic_write_bytes, open_regular
from preflight.core.ports import Tokenization

log = logging.getLogger(__name__)

#: Characters allowed in an output piece besides ``str.isprintable()`` ones.
_ALLOWED_WHITESPACE = frozenset("\t\n\r")
#: Bump when the cached arrays' layout or the vocabulary filter changes.
CACHE_VERSION = 3  # 3: pieces longer than 32 bytes are read whole (were empty)

VOCABULARY_FILTER_RULE = (
    "keep a token only if it is not a control/special/unknown/unused token, its bytes "
    "decode as complete UTF-8 (no partial byte tokens), it is not empty, and every "
    "character is printable or one of tab, newline, carriage return (no U+FFFD)"
)


def is_printable_piece(piece: bytes) -> tuple[bool, str]:
    """(keep, reason) for one token's bytes under :data:`VOCABULARY_FILTER_RULE`."""
    try:
        s = piece.decode("utf-8")
    except UnicodeDecodeError:
        return False, "partial_utf8"
    if not s:
        return False, "empty"
    if "\ufffd" in s or not all(c.isprintable() or c in _ALLOWED_WHITESPACE for c in s):
        return False, "non_printable"
    return True, "kept"


def units_from_byte_pieces(text: str, pieces: Sequence[bytes]) -> tuple[np.ndarray, ...]:
    """Group byte-level tokens into character-aligned units.

    Returns (unit_of, unit_start, unit_end). Raises InputError if the pieces do not
    spell the text exactly (a tokenizer that normalizes would break the offsets).
    """
    raw = text.encode("utf-8")
    if b"".join(pieces) != raw:
        raise InputError(
            "The d_X tokenizer did not reproduce the text exactly, so offsets cannot be kept.",
            "Use a different embedding space for d_X or remove unusual control characters.",
        )
    # byte offset -> char offset, defined only on character boundaries
    char_at = np.full(len(raw) + 1, -1, dtype=np.int64)
    pos = 0
    for ci, ch in enumerate(text):
        char_at[pos] = ci
        pos += len(ch.encode("utf-8"))
    char_at[pos] = len(text)
    T = len(pieces)
    unit_of = np.empty(T, dtype=np.int64)
    starts: list[int] = []
    ends: list[int] = []
    b = 0
    open_unit = False
    for t, p in enumerate(pieces):
        if not open_unit:
            starts.append(int(char_at[b]))
            open_unit = True
        unit_of[t] = len(starts) - 1
        b += len(p)
        if char_at[b] >= 0:      # token ends on a character boundary: close the unit
            ends.append(int(char_at[b]))
            open_unit = False
    if open_unit:  # cannot happen for valid UTF-8 input; keep offsets sane anyway
        ends.append(len(text))
    return unit_of, np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)


class ArrayCache:
    """npz/json files under cache_dir()/dx/<key>/ (rebuildable, written atomically)."""

    def __init__(self, key: str) -> None:
        self.dir = paths.cache_dir() / "dx" / key

    def load(self, name: str) -> dict[str, np.ndarray] | None:
        f = self.dir / f"{name}.v{CACHE_VERSION}.npz"
        if not f.exists():
            return None
        try:
            with open_regular(f, "rb") as fh, np.load(fh, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:  # corrupt cache: rebuild
            log.warning("ignoring unreadable cache %s: %s", f.name, exc)
            return None

    def save(self, name: str, **arrays: np.ndarray) -> None:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        atomic_write_bytes(self.dir / f"{name}.v{CACHE_VERSION}.npz", buf.getvalue())


class BaseSpace:
    """Shared machinery: candidate filter, pieces, cache."""

    name: str = ""
    key: str = ""
    _matrix: np.ndarray
    _candidates: np.ndarray
    _pieces: list[bytes]
    _filter_counts: dict[str, int]

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix

    @property
    def candidate_ids(self) -> np.ndarray:
        return self._candidates

    @property
    def vocab_size(self) -> int:
        return int(self._matrix.shape[0])

    @property
    def dim(self) -> int:
        return int(self._matrix.shape[1])

    def piece(self, token_id: int) -> bytes:
        return self._pieces[int(token_id)]

    def filter_info(self) -> dict:
        return {
            "rule": VOCABULARY_FILTER_RULE,
            "kept": int(len(self._candidates)),
            "total": self.vocab_size,
            "dropped": {k: v for k, v in self._filter_counts.items() if k != "kept"},
        }

    def _build_filter(self, special: Sequence[bool]) -> None:
        counts = {"kept": 0, "special": 0, "partial_utf8": 0, "empty": 0, "non_printable": 0}
        keep = []
        for tid, p in enumerate(self._pieces):
            if special[tid]:
                counts["special"] += 1
                continue
            ok, why = is_printable_piece(p)
            counts[why] += 1
            if ok:
                keep.append(tid)
        self._candidates = np.asarray(keep, dtype=np.int64)
        self._filter_counts = counts


class ArraySpace(BaseSpace):
    """An in-memory space over given vectors (tests, experiments): token ``i`` is the
    word ``words[i]``; text is split on whitespace."""

    def __init__(self, matrix: np.ndarray, words: Sequence[str], name: str = "array space"):
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if len(words) != self._matrix.shape[0]:
            raise ValueError("one word per row")
        self._words = list(words)
        self._index = {w: i for i, w in enumerate(self._words)}
        self._pieces = [w.encode("utf-8") for w in self._words]
        self.name = name
        self.key = hashlib.sha256(self._matrix.tobytes() + "\0".join(words).encode()).hexdigest()
        self._build_filter([False] * len(self._words))

    def tokenize(self, text: str) -> Tokenization:
        return word_tokenization(text, _NON_SPACE_RE, self._index.get)


_NON_SPACE_RE = re.compile(r"\S+")


def word_tokenization(text: str, pattern: re.Pattern[str],
                      lookup: Callable[[str], int | None]) -> Tokenization:
    """Word-level tokens: each match of ``pattern`` is one unit; matches ``lookup`` does
    not know are left out (unchanged) and counted as out of vocabulary."""
    ids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    oov = 0
    for m in pattern.finditer(text):
        tid = lookup(m.group(0))
        if tid is None:
            oov += 1
            continue
        ids.append(tid)
        starts.append(m.start())
        ends.append(m.end())
    n = len(ids)
    return Tokenization(
        np.asarray(ids, np.int64), np.arange(n, dtype=np.int64),
        np.asarray(starts, np.int64), np.asarray(ends, np.int64),
        out_of_vocabulary=oov,
    )
