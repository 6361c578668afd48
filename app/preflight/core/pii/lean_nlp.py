"""Presidio's spaCy engine without the per-token work nothing here reads.

Presidio turns every analyzed text into ``NlpArtifacts``: a lemma and an offset per token
(a Python ``Token`` object built for each), and "keywords" — every lemma looked up in the
vocabulary as a stop word and as punctuation. Only the context-word enhancer reads them,
and only for a result of a recognizer that has context words. Here:

- lemmas are the tokens' lower-case forms (the pipeline runs the entity recognizer alone;
  the real lemmatizer needs the tagger, and Presidio matches context words as substrings,
  so "numbers" still carries "number"), read with the offsets in one array call;
- keywords are computed the first time the enhancer asks for them, by Presidio's own
  function (the same list, later or never);
- a batch yields the texts it was given instead of ``doc.text`` (which builds a Python
  ``Token`` per token to join them again: a twentieth of a detection pass).

The model's matrix products run on numpy's BLAS, one thread (:func:`load_pipeline`,
:func:`one_blas_thread`): the same entities, a fifth less time for the entity recognizer.

Import only after :func:`~preflight.core.pii.presidio_loader.import_presidio`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine
from spacy.attrs import IDX, LOWER


def load_pipeline(path: Path, exclude: Sequence[str]) -> Any:
    """``spacy.load`` with thinc's numpy operations on numpy's BLAS instead of BLIS.

    The BLIS wheel thinc ships falls back to its generic (unvectorized) kernels on CPUs
    it was not built for (an AMD EPYC server here: 2.5x slower than numpy's OpenBLAS on
    the recognizer's products); numpy's OpenBLAS picks its kernels at run time on every
    x86 and ARM CPU. Same weights, same entities."""
    import spacy
    from thinc.api import use_ops

    with use_ops("numpy", use_blis=False):
        return spacy.load(path, exclude=list(exclude))


_controller_lock = threading.Lock()
_controller: Any = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread while the entity recognizer runs: its products are
    small (a batch of paragraphs' tokens by a few hundred weights), and OpenBLAS's extra
    threads spin-wait for them, which costs more CPU than they save. The limit is
    process-wide while it lasts (BLAS libraries only; torch's OpenMP pool is untouched)
    and the previous thread counts are restored at exit."""
    global _controller
    from threadpoolctl import ThreadpoolController

    with _controller_lock:
        if _controller is None:
            _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield


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

    def process_batch(self, texts: Iterable[Any], language: str, batch_size: int = 1,
                      n_process: int = 1, as_tuples: bool = False) -> Iterator[Any]:
        """Presidio's ``process_batch`` yielding each given text (spaCy's tokenizer is
        lossless: ``doc.text`` is that text) with its artifacts."""
        if as_tuples:
            yield from super().process_batch(texts, language, batch_size, n_process,
                                             as_tuples)
            return
        texts = [str(t) for t in texts]
        docs = self.nlp[language].pipe(texts, batch_size=batch_size, n_process=n_process)
        for text, doc in zip(texts, docs):
            yield text, self._doc_to_nlp_artifact(doc, language)

    def artifacts_with_entities(self, text: str, entities: Sequence[tuple[int, int, str]],
                                language: str, tokens: Any = None) -> NlpArtifacts:
        """The artifacts of ``text`` whose entities another copy of the same model found
        (``(start_char, end_char, label)``): this pipeline's tokens, those entities.
        ``tokens``: artifacts of ``text`` this engine built before (their tokens are
        reused, and take the entities). Raises ``ValueError`` if an entity does not fall
        on this tokenizer's tokens."""
        doc = tokens.tokens if tokens is not None else self.nlp[language].make_doc(text)
        spans = [doc.char_span(start, end, label=label) for start, end, label in entities]
        if any(span is None for span in spans):
            raise ValueError("an entity does not fall on token boundaries")
        doc.ents = spans
        if tokens is None:
            return self._doc_to_nlp_artifact(doc, language)
        return self._artifacts(doc, language, tokens.tokens_indices, tokens.lemmas)

    def _doc_to_nlp_artifact(self, doc: Any, language: str) -> NlpArtifacts:
        rows = doc.to_array([LOWER, IDX])
        strings = doc.vocab.strings
        return self._artifacts(
            doc, language, [int(i) for i in rows[:, 1]] if len(doc) else [],
            [strings[int(h)] for h in rows[:, 0]] if len(doc) else [])

    def _artifacts(self, doc: Any, language: str, indices: list[int],
                   lemmas: list[str]) -> NlpArtifacts:
        entities, scores = self._get_updated_entities(self._get_entities(doc),
                                                      self._get_scores_for_entities(doc))
        return LazyKeywordArtifacts(entities=entities, tokens=doc, tokens_indices=indices,
                                    lemmas=lemmas, nlp_engine=self, language=language,
                                    scores=scores)
