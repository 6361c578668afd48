"""Token embedding spaces for d_X-privacy.

A :class:`TokenSpace` gives the d_X mechanism three things: a tokenizer that maps text to
token ids with exact character offsets, the embedding matrix φ (one row per token id),
and the *candidate vocabulary* — the token ids the mechanism may output (printable
pieces only). The one that ships, :class:`GGUFTokenSpace`, reads an SLM's token embedding
matrix from its GGUF file (``token_embd.weight``, dequantized with ``gguf``) and tokenizes
with llama.cpp; :class:`ArraySpace` wraps a matrix and a tokenizer given in memory.

Derived arrays (float32 matrix, candidate ids, pieces) are cached under
``cache_dir()/dx/<sha256 of the source file>`` so later loads skip dequantization.
Every ``tokenize`` is a pure function of its text (no per-call state on the space), so
one space serves any number of threads.

This module is the one import for callers; the spaces live in their own modules.
"""

from __future__ import annotations

from preflight.core.ports import Tokenization, TokenSpace
from preflight.runtime.gguf_space import GGUFTokenSpace, gguf_token_space
from preflight.runtime.hashing import cached_file_sha256
from preflight.runtime.space_base import (
    VOCABULARY_FILTER_RULE,
    ArraySpace,
    BaseSpace,
    is_printable_piece,
    units_from_byte_pieces,
)

__all__ = [
    "VOCABULARY_FILTER_RULE", "ArraySpace", "BaseSpace", "GGUFTokenSpace",
    "TokenSpace", "Tokenization", "cached_file_sha256", "gguf_token_space",
    "is_printable_piece", "units_from_byte_pieces",
]
