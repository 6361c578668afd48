"""Utility assessment of one sanitized document: features → predicted cloud utility.

Two stages, so the window can show something at once and something better soon after:

1. :meth:`UtilityAssessor.fast` — features that need no model call and the ``fast``
   regressor (well under 50 ms).
2. :meth:`UtilityAssessor.refine` — B, C, D and the SLM's perplexity, then the ``full``
   regressor. The SLM's answer on the *original* (feature C) is cached per document, so
   moving the ε slider costs one SLM answer on the sanitized text, not two.

Optionally (``correct=True``) the SLM first repairs the sanitized text's grammar; D and the
text that would be sent are then the repaired ones (the paper's "Corrected = Yes").
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from preflight.core.errors import Cancelled
from preflight.core.tasks import CORRECT, SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.features import fast_features, refined_features, word_count
from preflight.core.utility.predictor import UtilityPredictor

Progress = Callable[[float, str], None]


class SLM(Protocol):
    def run(self, task: Task, text: str, on_token: Any = None,
            cancel: threading.Event | None = None) -> str: ...

    def perplexity(self, text: str) -> float: ...


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def similarity(self, a: str, b: str) -> float: ...


@dataclass(frozen=True)
class Assessment:
    """Predicted utility of sending ``text`` (the sanitized, or repaired, document)."""

    features: dict[str, float]
    predicted_fast: float
    predicted: float | None = None      # None until the refined stage ran
    text: str = ""                      # what the cloud model would receive
    corrected: bool = False
    slm_answer: str | None = None       # the SLM's answer on ``text``
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> float:
        return self.predicted if self.predicted is not None else self.predicted_fast

    def to_json(self) -> dict[str, Any]:
        return {
            "features": {k: _json_float(v) for k, v in self.features.items()},
            "predicted_utility_fast": round(self.predicted_fast, 4),
            "predicted_utility": None if self.predicted is None else round(self.predicted, 4),
            "corrected": self.corrected,
        }


def _json_float(v: float) -> float | None:
    return None if v != v else round(float(v), 6)


def correction_task(text: str) -> Task:
    """The repair task, with room for about the document's own length."""
    return dataclasses.replace(CORRECT, max_tokens=min(1024, int(word_count(text) * 1.7) + 32))


@dataclass(frozen=True)
class _DocCache:
    answer: str
    sim_answer: float
    ppl: float


class UtilityAssessor:
    """Computes features and predictions; collaborators default to the real models."""

    def __init__(
        self,
        slm: SLM | None = None,
        embedder: Embedder | None = None,
        predictor: UtilityPredictor | None = None,
        task: Task = SUMMARIZE,
        cache_documents: int = 8,
    ) -> None:
        self._slm = slm
        self._embedder = embedder
        self._predictor = predictor
        self.task = task
        self._docs: OrderedDict[str, _DocCache] = OrderedDict()
        self._cache_documents = cache_documents
        self._lock = threading.Lock()
        self.slm_calls = 0          # generations run (for the recommendation's budget)

    # -- collaborators, built on first use ---------------------------------------------
    @property
    def slm(self) -> SLM:
        if self._slm is None:
            from preflight.runtime.slm import LocalSLM

            self._slm = LocalSLM()
        return self._slm

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from preflight.runtime.embedder import SentenceEmbedder

            self._embedder = SentenceEmbedder()
        return self._embedder

    @property
    def predictor(self) -> UtilityPredictor:
        if self._predictor is None:
            self._predictor = UtilityPredictor.load()
        return self._predictor

    # -- stage 1 -------------------------------------------------------------------------
    def fast(
        self, original: str, sanitized: SanitizedText, spans: Sequence[Span] = (),
        correct: bool = False,
    ) -> Assessment:
        correct = correct and sanitized.method == "dx"
        feats = fast_features(original, sanitized, spans)
        pred = self.predictor.predict_fast(feats, corrected=correct)
        return Assessment(feats, pred, None, sanitized.text, correct)

    # -- stage 2 -------------------------------------------------------------------------
    def original_answer(
        self, original: str, cancel: threading.Event | None = None
    ) -> tuple[str, float, float]:
        """SLM answer on the original, its similarity C, and the original's perplexity."""
        key = hashlib.blake2b(
            (self.task.kind + "\0" + self.task.question + "\0" + original).encode(),
            digest_size=16,
        ).hexdigest()
        with self._lock:
            hit = self._docs.get(key)
        if hit is None:
            answer = self._generate(self.task, original, cancel)
            sim = self.embedder.similarity(original, answer)
            ppl = self.slm.perplexity(original)
            hit = _DocCache(answer, sim, ppl)
            with self._lock:
                self._docs[key] = hit
                while len(self._docs) > self._cache_documents:
                    self._docs.popitem(last=False)
        return hit.answer, hit.sim_answer, hit.ppl

    def measure(
        self,
        original: str,
        sanitized: SanitizedText,
        spans: Sequence[Span] = (),
        *,
        correct: bool = False,
        cancel: threading.Event | None = None,
        progress: Progress | None = None,
    ) -> tuple[dict[str, float], str, str]:
        """All features (no prediction), the text that would be sent, and the SLM's answer.

        Used by :meth:`refine` and by the training-set builder, so training and use
        compute features the same way.
        """
        report = progress or (lambda _f, _m: None)
        feats = fast_features(original, sanitized, spans)
        report(0.05, "local model reads the original")
        _, sim_c, ppl_o = self.original_answer(original, cancel)
        text = sanitized.text
        if correct:
            report(0.35, "local model repairs the sanitized text")
            text = self._generate(correction_task(text), text, cancel) or text
        report(0.6, "local model works on the sanitized text")
        answer = self._generate(self.task, text, cancel) if text.strip() else ""
        report(0.9, "comparing")
        sims = self.embedder.embed([original, text, answer])
        sim_b = float(np.dot(sims[0], sims[1]))
        sim_d = float(np.dot(sims[0], sims[2])) if answer else 0.0
        ppl_s = self.slm.perplexity(text) if text.strip() else float("nan")
        feats.update(refined_features(
            sim_sanitized=sim_b, sim_slm_original=sim_c, sim_slm_sanitized=sim_d,
            ppl_sanitized=ppl_s, ppl_original=ppl_o,
        ))
        return feats, text, answer

    def refine(
        self,
        original: str,
        sanitized: SanitizedText,
        spans: Sequence[Span] = (),
        *,
        correct: bool = False,
        cancel: threading.Event | None = None,
        progress: Progress | None = None,
    ) -> Assessment:
        """Both stages; runs the SLM (once or twice if the original is not cached).

        Grammar repair applies to d_X output only; operator output is already fluent.
        """
        correct = correct and sanitized.method == "dx"
        feats, text, answer = self.measure(
            original, sanitized, spans, correct=correct, cancel=cancel, progress=progress
        )
        pred_fast = self.predictor.predict_fast(feats, corrected=correct)
        pred = self.predictor.predict(feats, corrected=correct)
        if progress is not None:
            progress(1.0, "done")
        return Assessment(feats, pred_fast, pred, text, correct, answer)

    def realized_utility(self, original: str, cloud_answer: str) -> float:
        """E: how close the cloud's answer is to the original (for learning on the flow)."""
        return self.embedder.similarity(original, cloud_answer)

    def _generate(self, task: Task, text: str, cancel: threading.Event | None) -> str:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        self.slm_calls += 1
        return self.slm.run(task, text, cancel=cancel)
