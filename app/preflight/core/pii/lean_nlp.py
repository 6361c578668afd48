"""Presidio's spaCy engine without the per-token work nothing here reads.

Presidio turns every analyzed text into ``NlpArtifacts``: a lemma and an offset per token
(a Python ``Token`` object built for each), and "keywords" — every lemma looked up in the
vocabulary as a stop word and as punctuation. Only the context-word enhancer reads them,
and only for a result of a recognizer that has context words. Here:

- lemmas are the tokens' lower-case forms (the pipeline runs the entity recognizer alone;
  the real lemmatizer needs the tagger, and Presidio matches context words as substrings,
  so "numbers" still carries "number"), read with the offsets in one array call;
- keywords are computed the first time the enhancer asks for them, by Presidio's own
  function (the same list, later or never).

Import only after :func:`~preflight.core.pii.presidio_loader.import_presidio`.
"""

from __future__ import annotations

from typing import Any

from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine
from spacy.attrs import IDX, LOWER


class LazyKeywordArtifacts(NlpArtifacts):
    """``NlpArtifacts`` whose keywords are computed on first use."""

    def __init__(self, *, entities, tokens, tokens_indices, lemmas, nlp_engine, language,
                 scores=None) -> None:  # noqa: D107 - Presidio's fields, keywords deferred
        self.entities = entities
        self.tokens = tokens
        self.lemmas = lemmas
        self.tokens_indices = tokens_indices
        self.nlp_engine = nlp_engine
        self.language = language
        self.scores = scores if scores else [0.85] * len(entities)
        self._keywords: list[str] | None = None

    @property
    def keywords(self) -> list[str]:
        if self._keywords is None:
            self._keywords = NlpArtifacts.set_keywords(self.nlp_engine, self.lemmas,
                                                       self.language)
        return self._keywords

    @keywords.setter
    def keywords(self, value: list[str]) -> None:
        self._keywords = value


class LeanSpacyNlpEngine(SpacyNlpEngine):
    """``SpacyNlpEngine`` building :class:`LazyKeywordArtifacts` (module docstring)."""

    def _doc_to_nlp_artifact(self, doc: Any, language: str) -> NlpArtifacts:
        rows = doc.to_array([LOWER, IDX])
        strings = doc.vocab.strings
        entities, scores = self._get_updated_entities(self._get_entities(doc),
                                                      self._get_scores_for_entities(doc))
        return LazyKeywordArtifacts(
            entities=entities, tokens=doc,
            tokens_indices=[int(i) for i in rows[:, 1]] if len(doc) else [],
            lemmas=[strings[int(h)] for h in rows[:, 0]] if len(doc) else [],
            nlp_engine=self, language=language, scores=scores)
