"""Document fingerprints for the resend check (the per-document ledger).

"Same document" (the ledger) is recognised three ways, strongest first:

- ``exact``: SHA-256 of the text as read;
- ``normalized``: SHA-256 of the canonical view detection uses (invisible characters
  removed, look-alike letters mapped to Latin, see :mod:`preflight.core.pii.canonical`)
  after NFKC, case folding and collapsing all whitespace (catches re-saved, re-wrapped,
  CRLF/LF or homoglyph-swapped copies);
- ``near``: estimated Jaccard similarity ≥ 0.6 of word 3-gram shingles (MinHash with 64
  hash functions), catching an edited copy of the same text. Documents under 8 words use
  the first two only, because shingles of tiny texts are meaningless.

Sending any of these again is flagged: averaging several differently sanitized copies of
one text cancels the noise that protects it.
"""

from __future__ import annotations

import hashlib
import re
import struct
import unicodedata
from dataclasses import dataclass
from typing import Iterable

from preflight.core.pii.canonical import canonicalize

NEAR_DUPLICATE_THRESHOLD = 0.6
SHINGLE_WORDS = 3
MINHASH_PERMUTATIONS = 64
MIN_WORDS_FOR_SHINGLES = 8
_MERSENNE = (1 << 61) - 1

_WORD = re.compile(r"\w+", re.UNICODE)


def normalize(text: str) -> str:
    """The text as the resend check compares it: the detector's canonical view (so a copy
    with a few letters swapped for look-alikes or zero-width characters inserted is the
    same document), NFKC, case-folded, whitespace collapsed."""
    canonical = canonicalize(text).text
    return " ".join(unicodedata.normalize("NFKC", canonical).casefold().split())


@dataclass(frozen=True)
class Fingerprint:
    sha256: str
    norm_sha256: str
    minhash: tuple[int, ...]          # empty for documents too short to shingle

    @classmethod
    def of(cls, text: str) -> "Fingerprint":
        norm = normalize(text)
        return cls(
            hashlib.sha256(text.encode("utf-8")).hexdigest(),
            hashlib.sha256(norm.encode("utf-8")).hexdigest(),
            minhash(norm),
        )

    def similarity(self, other_minhash: Iterable[int]) -> float:
        other = tuple(other_minhash)
        if not self.minhash or len(other) != len(self.minhash):
            return 0.0
        return sum(a == b for a, b in zip(self.minhash, other)) / len(other)


def _permutations() -> list[tuple[int, int]]:
    # Fixed, reproducible coefficients: fingerprints must compare across versions.
    seed = hashlib.sha256(b"preflight-minhash-v1").digest()
    out = []
    for i in range(MINHASH_PERMUTATIONS):
        block = hashlib.sha256(seed + struct.pack(">I", i)).digest()
        a = int.from_bytes(block[:8], "big") % (_MERSENNE - 1) + 1
        b = int.from_bytes(block[8:16], "big") % _MERSENNE
        out.append((a, b))
    return out


_PERMS = _permutations()


def minhash(normalized_text: str) -> tuple[int, ...]:
    words = _WORD.findall(normalized_text)
    if len(words) < MIN_WORDS_FOR_SHINGLES:
        return ()
    shingles = {
        int.from_bytes(
            hashlib.blake2b(" ".join(words[i:i + SHINGLE_WORDS]).encode("utf-8"),
                            digest_size=8).digest(), "big")
        for i in range(len(words) - SHINGLE_WORDS + 1)
    }
    return tuple(min((a * h + b) % _MERSENNE for h in shingles) for a, b in _PERMS)
