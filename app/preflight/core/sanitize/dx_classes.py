"""Word-boundary classes of d_X: a token is replaced only by a token of its own class.

**The class of a piece** is its *boundary pattern*: the text of the piece with every
whitespace character (``str.isspace``) written ``W``, every other character ``N``, and
runs collapsed. In a GPT-2 style byte-level vocabulary (SmolLM2, the default space)
three patterns occur:

- ``WN`` *word start*: whitespace, then text (``" from"``, ``" ,"``, ``"\\n\\nThe"``);
- ``N`` *continuation*: no whitespace at all (``"from"``, ``"$"``, ``","``, ``"2"``);
- ``W`` *whitespace*: only whitespace (``" "``, ``"\\n"``, ``"\\n\\n"``, ``"\\t"``).

Punctuation is text like any other (``","`` is a continuation, ``" ("`` a word start);
pure whitespace pieces are their own class, so a newline can become another whitespace
run but never text. Any other pattern a vocabulary has (``NW``, ``WNW`` ...) is a class
of its own. Because each token keeps its pattern, the concatenation keeps the text's
collapsed pattern: the output has whitespace exactly where the input has it between
words, so ``text.split()`` has as many words before and after, and no word is glued to
or split from its neighbour.

**The class of an input token** is the pattern of its piece when the piece is complete
UTF-8 text. A byte token that holds part of a character (an emoji or accent split by a
byte-level tokenizer) takes the pattern of the characters it touches (a character split
over two tokens counts in both); their replacements concatenate to the same pattern as
the characters they came from. A token whose pattern no candidate has is left unchanged
and counted as not covered.

Spaces whose pieces carry no whitespace (word-vector spaces, WordPiece) have the single
class ``N``: nothing changes for them. ``restricted=False`` (research setting) puts every
candidate into one class ``any``: the unrestricted mechanism, which glues and splits
words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from preflight.core.ports import Tokenization, TokenSpace

UNRESTRICTED = "any"
CLASS_NAMES = {"WN": "word start", "N": "continuation", "W": "whitespace",
               UNRESTRICTED: "any token (word boundaries not kept)"}


def boundary_pattern(s: str) -> str:
    """``s`` with whitespace → ``W``, other characters → ``N``, runs collapsed."""
    out: list[str] = []
    for ch in s:
        c = "W" if ch.isspace() else "N"
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


@dataclass(frozen=True)
class BoundaryClasses:
    """The candidate vocabulary of a space split by boundary pattern."""

    restricted: bool
    labels: tuple[str, ...]               # class labels (sorted)
    members: dict[str, np.ndarray]        # label -> sorted candidate ids of the class
    piece_class: np.ndarray               # (V,) class number of a complete piece, else -1
    piece_complete: np.ndarray            # (V,) the piece is complete UTF-8 text

    @classmethod
    def of_space(cls, space: TokenSpace, restricted: bool = True) -> "BoundaryClasses":
        V = int(space.matrix.shape[0])
        cand = np.asarray(space.candidate_ids, dtype=np.int64)
        patterns: list[str | None] = []
        for i in range(V):
            try:
                patterns.append(boundary_pattern(space.piece(i).decode("utf-8")))
            except UnicodeDecodeError:
                patterns.append(None)
        complete = np.asarray([p is not None for p in patterns], dtype=bool)
        if not restricted:
            piece_class = np.where(complete, 0, -1).astype(np.int64)
            return cls(False, (UNRESTRICTED,), {UNRESTRICTED: cand}, piece_class, complete)
        cand_pat = [patterns[i] for i in cand.tolist()]
        labels = tuple(sorted({p for p in cand_pat if p}))
        number = {lab: k for k, lab in enumerate(labels)}
        members = {lab: cand[[p == lab for p in cand_pat]] for lab in labels}
        piece_class = np.asarray([number.get(p, -1) if p is not None else -1
                                  for p in patterns], dtype=np.int64)
        return cls(True, labels, members, piece_class, complete)

    def token_classes(self, tok: Tokenization, text: str,
                      piece: Callable[[int], bytes]) -> np.ndarray:
        """Class number of every token of ``tok`` (-1: no candidate has its pattern)."""
        ids = tok.ids
        if not self.restricted:
            return np.zeros(len(ids), dtype=np.int64)
        out = self.piece_class[ids].copy()
        partial = np.flatnonzero(~self.piece_complete[ids])
        if len(partial) == 0:
            return out
        number = {lab: k for k, lab in enumerate(self.labels)}
        for u in np.unique(tok.unit_of[partial]).tolist():
            toks = np.flatnonzero(tok.unit_of == u)
            unit_text = text[int(tok.unit_start[u]):int(tok.unit_end[u])]
            pats = _touched_patterns(unit_text, [piece(int(ids[t])) for t in toks])
            for t, p in zip(toks.tolist(), pats):
                if not self.piece_complete[ids[t]]:
                    out[t] = number.get(p, -1)
        return out

    def describe(self) -> dict:
        return {
            "kept": self.restricted,
            "rule": ("a token is replaced only by a token with the same whitespace pattern "
                     "(word start, continuation, whitespace), so words are never glued or "
                     "split; the pattern is revealed" if self.restricted
                     else "not kept (research setting): any token may replace any token"),
            "classes": {CLASS_NAMES.get(lab, lab): int(len(self.members[lab]))
                        for lab in self.labels},
        }


def _touched_patterns(unit_text: str, pieces: list[bytes]) -> list[str]:
    """Pattern of the characters each byte piece touches (the pieces spell the unit);
    pieces that do not spell it exactly fall back to their own lossy decoding."""
    raw = unit_text.encode("utf-8")
    if b"".join(pieces) != raw:
        return [boundary_pattern(p.decode("utf-8", "replace")) for p in pieces]
    char_of_byte: list[int] = []
    for ci, ch in enumerate(unit_text):
        char_of_byte.extend([ci] * len(ch.encode("utf-8")))
    out = []
    b = 0
    for p in pieces:
        if not p:
            out.append("")
            continue
        first, last = char_of_byte[b], char_of_byte[b + len(p) - 1]
        out.append(boundary_pattern(unit_text[first:last + 1]))
        b += len(p)
    return out
