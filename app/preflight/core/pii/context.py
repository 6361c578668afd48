"""Presidio's context-word enhancer without its quadratic token search and without its
deep copy of every result.

``LemmaContextAwareEnhancer`` finds the token of every result by walking the spaCy ``Doc``
from the start (building a ``Token`` object per step): results × tokens work, which made
a 1 MB document spend most of its time there. This subclass finds the same token — the
first whose end lies after the result's start — by bisecting token end offsets computed
once per analyzed text.

Presidio deep-copies the result list before raising scores (about a tenth of detection
time: every result carries an explanation object); the analyzer drops the raw list right
after, so this subclass lets it work on the results themselves. The copy is skipped only
inside this subclass's calls (a thread-local flag), other enhancers are untouched. Import
only after :func:`~preflight.core.pii.presidio_loader.
import_presidio`.
"""

from __future__ import annotations

import bisect
import copy
import threading

from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.context_aware_enhancers import (
    lemma_context_aware_enhancer as _presidio_enhancer,
)

_in_place = threading.local()


class _CopyUnlessInPlace:
    """Stands in for the ``copy`` module inside Presidio's enhancer module."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value, memo=None):
        if getattr(_in_place, "on", False) and isinstance(value, list):
            return list(value)
        return copy.deepcopy(value, memo)


if not isinstance(_presidio_enhancer.copy, _CopyUnlessInPlace):
    _presidio_enhancer.copy = _CopyUnlessInPlace()


class BisectContextEnhancer(LemmaContextAwareEnhancer):
    """Same results as Presidio's enhancer; token lookup in O(log n)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._ends_for: tuple[list[int], list[int]] | None = None

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers,
                              context=None):
        _in_place.on = True
        try:
            return super().enhance_using_context(text, raw_results, nlp_artifacts,
                                                 recognizers, context)
        finally:
            _in_place.on = False

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


def grouped_context_pass(engine_cls, rule_ties: bool = True):
    """An ``AnalyzerEngine`` subclass whose recognizer-level context pass groups the
    results by recognizer once (Presidio filters the whole result list twice per
    recognizer: recognizers × results work) and skips recognizers that do not override
    ``enhance_using_context``. Same results, same order — except, with ``rule_ties``,
    where a rule and the NER model found the same span (:func:`rule_evidence_wins`). Each
    result is marked with the evidence its recognizer declares (``EVIDENCE_KEY``: the
    one place a result meets the recognizer object that made it).

    The supported entities (asked by every ``analyze`` call without an entity list, each
    time from every recognizer) are kept until the registry's recognizers change."""
    from presidio_analyzer import EntityRecognizer, RecognizerResult

    from preflight.core.pii.entities import EVIDENCE_KEY
    from preflight.core.pii.recognizers.base import evidence_of

    key = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
    default = EntityRecognizer.enhance_using_context

    class GroupedContextAnalyzer(engine_cls):
        def get_supported_entities(self, language=None):  # noqa: D102 - Presidio's, kept
            # the recognizers themselves, compared by identity (a recognizer's types are
            # set when it is made; a new list is a new recognizer)
            key = (language, tuple(self.registry.recognizers))
            cached = self.__dict__.get("_preflight_entities")
            if cached is None or cached[0] != key:
                cached = (key, super().get_supported_entities(language=language))
                self.__dict__["_preflight_entities"] = cached
            return list(cached[1])

        def _enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers,
                                   context=None):
            by_id: dict[str, list] = {}
            for r in raw_results:
                by_id.setdefault(r.recognition_metadata[key], []).append(r)
            results = []
            for recognizer in recognizers:
                rid = recognizer.id
                mine = by_id.get(rid, [])
                if mine:
                    evidence = evidence_of(recognizer)
                    for r in mine:
                        r.recognition_metadata[EVIDENCE_KEY] = evidence
                if type(recognizer).enhance_using_context is not default:
                    mine = recognizer.enhance_using_context(
                        text=text, raw_recognizer_results=mine,
                        other_raw_recognizer_results=[
                            r for r in raw_results if r.recognition_metadata[key] != rid],
                        nlp_artifacts=nlp_artifacts, context=context)
                results.extend(mine)
            results = self.context_aware_enhancer.enhance_using_context(
                text=text, raw_results=results, nlp_artifacts=nlp_artifacts,
                recognizers=recognizers, context=context)
            return rule_evidence_wins(results) if rule_ties else results

    return GroupedContextAnalyzer


def rule_evidence_wins(results: list) -> list:
    """Where a strong rule (evidence :attr:`~preflight.core.types.Evidence.PERSON_PROOF`:
    a name spelling its e-mail address, an address's display name) found a person inside
    (or exactly on) a span the NER model calls a person, the rule's finding survives
    Presidio's de-duplication: its score is raised just above the model's. De-duplication
    keeps the higher score and drops what a higher-scored span of the type contains. The
    model's copy is checked again later as a guess ("Tom" when the text also writes "tom",
    "R. A. Hettinga" with no listed name) and may be dropped, or cut to its first line (a
    THANKS file's "Andres Soolo  andres@…\nAndrew Burgess  aab@…" is one model span) —
    with the rule's evidence gone with it."""
    from preflight.core.pii.entities import EVIDENCE_KEY
    from preflight.core.types import Evidence

    def has(r, flag: Evidence) -> bool:
        return flag in r.recognition_metadata.get(EVIDENCE_KEY, Evidence.RULE)

    model = [r for r in results if r.entity_type == "PERSON" and has(r, Evidence.STATISTICAL)]
    if not model:
        return results
    for r in results:
        if r.entity_type != "PERSON" or not has(r, Evidence.PERSON_PROOF):
            continue
        score = max((m.score for m in model if m.start <= r.start and r.end <= m.end),
                    default=None)
        if score is not None and r.score <= score:
            r.score = min(1.0, score + 0.001)
    return results
