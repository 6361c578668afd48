"""Presidio's context-word enhancer without its quadratic token search.

``LemmaContextAwareEnhancer`` finds the token of every result by walking the spaCy ``Doc``
from the start (building a ``Token`` object per step): results × tokens work, which made
a 1 MB document spend most of its time there. This subclass finds the same token — the
first whose end lies after the result's start — by bisecting token end offsets computed
once per analyzed text. Import only after :func:`~preflight.core.pii.presidio_loader.
import_presidio`.
"""

from __future__ import annotations

import bisect

from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer


class BisectContextEnhancer(LemmaContextAwareEnhancer):
    """Same results as Presidio's enhancer; token lookup in O(log n)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._ends_for: tuple[list[int], list[int]] | None = None

    def _find_index_of_match_token(self, word, start, tokens, tokens_indices):  # noqa: D102
        if self._ends_for is None or self._ends_for[0] is not tokens_indices:
            # the tokens' end offsets (non-decreasing), cached for this analyzed text; the
            # cache holds the offsets list itself, so its identity cannot be reused
            ends = [i + len(t) for i, t in zip(tokens_indices, tokens)]
            self._ends_for = (tokens_indices, ends)
        ends = self._ends_for[1]
        i = bisect.bisect_right(ends, start)
        if i >= len(ends):
            raise ValueError(f"Did not find word '{word}' in the list of tokens although it "
                             "is expected to be found")
        return i
