"""Utility assessment of one sanitized document: features → predicted cloud utility.

Two stages, so the window can show something at once and something better soon after:

1. :meth:`UtilityAssessor.fast` — features that need no model call and the ``fast``
   regressor (well under 50 ms).
2. :meth:`UtilityAssessor.refine` — B, C, D and the SLM's perplexity, then the ``full``
   regressor. The SLM's answer on the *original* (feature C) is cached per document, so
   moving the ε slider costs one SLM answer on the sanitized text, not two. A text
   already measured (the candidate "Find best ε" chose, a slider moved back) is not
   measured again: the last :data:`MEASURED_TEXTS` measurements are kept, and only the
   regressor runs on them (it may have learned since).

D compares the original with the SLM's answer *restored* by the sanitization's vault,
as the cloud's answer is restored before its realized utility is scored (issue 47: D
measured with ``<PERSON_1>`` still in the answer pulled placeholder payloads down).

Optionally (``correct=True``) the SLM first repairs the sanitized text's grammar; D and the
text that would be sent are then the repaired ones (the paper's "Corrected = Yes").
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from preflight.core.errors import Cancelled
from preflight.core.ports import Embedder, LanguageModel
from preflight.core.sanitize.restoring import restore
from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS, CORRECT, SUMMARIZE, Task
from preflight.core.types import SanitizedText, Span
from preflight.core.utility.excerpt import excerpts, original_excerpt
from preflight.core.utility.features import (
    SANITIZED_PERPLEXITY, Features, fast_features, word_count,
)
from preflight.core.utility.predictor import Estimate, UtilityPredictor

if TYPE_CHECKING:
    from preflight.core.sanitize.vault import Vault

Progress = Callable[[float, str], None]
SLM = LanguageModel          # the name this module used before the ports existed
MEASURED_TEXTS = 32          # refinements remembered (features and answers: a few kB each)

# Grammar repair rewrites the whole text, so it cannot run on an excerpt: above this many
# words it is skipped (and said so in Assessment.meta) instead of truncating what is sent.
MAX_CORRECTION_WORDS = 600


@dataclass(frozen=True)
class Assessment:
    """Predicted utility of sending ``text`` (the sanitized, or repaired, document)."""

    features: Features
    predicted_fast: float
    predicted: float | None = None      # None until the refined stage ran
    text: str = ""                      # what the cloud model would receive
    corrected: bool = False
    slm_answer: str | None = None       # the SLM's answer on ``text`` (or on its excerpt)
    meta: dict[str, Any] = field(default_factory=dict)
    estimate_fast: Estimate | None = None   # the fast prediction with band and drivers
    estimate: Estimate | None = None        # the same for the refined prediction

    @property
    def best(self) -> float:
        return self.predicted if self.predicted is not None else self.predicted_fast

    @property
    def explained(self) -> Estimate | None:
        """The estimate behind :attr:`best` (band, unsanitized expectation, drivers)."""
        return self.estimate if self.predicted is not None else self.estimate_fast

    def to_json(self) -> dict[str, Any]:
        """The assessment for ``--json`` (one builder: callers add their sections)."""
        feats = self.features.as_dict() if isinstance(self.features, Features) \
            else dict(self.features)
        out: dict[str, Any] = {
            "features": {k: _json_float(v) for k, v in feats.items()},
            "predicted_utility_fast": round(self.predicted_fast, 4),
            "predicted_utility": None if self.predicted is None else round(self.predicted, 4),
            "corrected": self.corrected,
        }
        out.update(estimate_json(self.explained, self.best))
        if self.meta:
            out["notes"] = dict(self.meta)
        return out


def estimate_json(est: Estimate | None, value: float) -> dict[str, Any]:
    """predicted, interval, unsanitized_expected, kept_share and drivers of one estimate."""
    if est is None:
        return {"predicted": round(value, 4), "interval": None, "unsanitized_expected": None,
                "kept_share": None, "drivers": []}
    interval = None if est.low is None or est.high is None else {
        "low": round(est.low, 4), "high": round(est.high, 4), "level": est.level}
    return {
        "predicted": round(est.value, 4),
        "model": est.model,
        "interval": interval,
        "unsanitized_expected": None if est.unsanitized is None else round(est.unsanitized, 4),
        "kept_share": None if est.kept_share is None else round(est.kept_share, 4),
        "drivers": [d.to_json() for d in est.drivers],
    }


def _json_float(v: float) -> float | None:
    return None if v != v else round(float(v), 6)


def correction_task(text: str) -> Task:
    """The repair task, with room for about the document's own length."""
    return dataclasses.replace(CORRECT, max_tokens=min(1024, int(word_count(text) * 1.7) + 32))


@dataclass
class _DocCache:
    answer: str
    ppl: float
    sim_answer: float | None = None     # computed when the embedder first runs on it


class UtilityAssessor:
    """Computes features and predictions from the collaborators it is given.

    Args:
        slm: the local language model (:class:`preflight.core.ports.LanguageModel`).
        embedder: sentence embeddings (:class:`preflight.core.ports.Embedder`).
        predictor: the regressor; ``None`` loads the shipped one on first use (a file in
            the app's resources, no model runtime).
        original_slm: the model that reads the *original* (C and its perplexity); None:
            ``slm``. A company assessor not trusted with originals gets only the rest.
        answer_tokens: the cap on the SLM's own answers (features C and D) — whatever the
            user's task allows the cloud. The regressor learned from answers capped the
            same way (:data:`~preflight.core.tasks.ASSESSOR_ANSWER_TOKENS`).
        all_features: compute every feature, also those no model of the regressor reads
            (the training-set builder); otherwise the sanitized text's perplexity pass
            runs only for a bundle that reads it
            (:data:`~preflight.core.utility.features.SANITIZED_PERPLEXITY`).
    Both models are required: the composition root (``preflight.app``) builds the real
    ones, tests pass fakes.
    """

    def __init__(
        self,
        slm: LanguageModel | None,
        embedder: Embedder | None,
        predictor: UtilityPredictor | None = None,
        task: Task = SUMMARIZE,
        cache_documents: int = 8,
        original_slm: LanguageModel | None = None,
        answer_tokens: int = ASSESSOR_ANSWER_TOKENS,
        all_features: bool = False,
    ) -> None:
        for name, value, port in (("slm", slm, "LanguageModel"), ("embedder", embedder,
                                                                  "Embedder")):
            if value is None:
                raise TypeError(
                    f"UtilityAssessor needs its {name} (a preflight.core.ports.{port}); "
                    "build it in the composition root (preflight.app) and pass it in.")
        self._slm: LanguageModel = slm
        self._original_model: LanguageModel = original_slm or slm
        self._embedder: Embedder = embedder
        self._predictor = predictor
        self.task = task
        self._answer_task = dataclasses.replace(task, max_tokens=int(answer_tokens))
        self._docs: OrderedDict[str, _DocCache] = OrderedDict()
        self._cache_documents = cache_documents
        self._measured: OrderedDict[str, tuple[Features, str, str, dict[str, Any]]] = \
            OrderedDict()
        self._lock = threading.Lock()
        self.slm_calls = 0          # generations run (for the recommendation's budget)
        self._all_features = all_features

    @property
    def slm(self) -> LanguageModel:
        return self._slm

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def predictor(self) -> UtilityPredictor:
        if self._predictor is None:
            self._predictor = UtilityPredictor.load()
        return self._predictor

    # -- stage 1 -------------------------------------------------------------------------
    def fast(
        self, original: str, sanitized: SanitizedText, spans: Sequence[Span] = (),
        correct: bool = False, explain: bool = True,
    ) -> Assessment:
        """``explain=False`` skips the unsanitized expectation and the drivers (the
        curve needs only the value and its band)."""
        correct = correct and sanitized.method == "dx"
        feats = fast_features(original, sanitized, spans)
        est = self.predictor.estimate(feats, refined=False, corrected=correct,
                                      explain=explain)
        return Assessment(feats, est.value, None, sanitized.text, correct,
                          estimate_fast=est)

    # -- stage 2 -------------------------------------------------------------------------
    def original_answer(
        self, original: str, cancel: threading.Event | None = None
    ) -> tuple[str, float, float]:
        """SLM answer on the original, its similarity C, and the original's perplexity.

        On a long document all three are computed on its excerpt (see
        :mod:`preflight.core.utility.excerpt`): the SLM summarizes, and C compares with,
        the same bounded sample of passages.
        """
        hit = self._original_slm(original, cancel)
        return hit.answer, self._original_similarity(hit, original), hit.ppl

    def _original_similarity(self, hit: _DocCache, original: str) -> float:
        """C for a cached original answer (embedded once, kept with the answer)."""
        if hit.sim_answer is None:
            hit.sim_answer = self.embedder.similarity(original_excerpt(original), hit.answer)
        return hit.sim_answer

    def _original_slm(self, original: str, cancel: threading.Event | None) -> _DocCache:
        """The SLM's part of :meth:`original_answer` (answer and perplexity), cached."""
        key = hashlib.blake2b(
            (self._answer_task.kind + "\0" + self._answer_task.question + "\0"
             + (self._answer_task.note + "\0" if self._answer_task.note else "")
             + f"{self._answer_task.max_tokens}\0" + original).encode(
                "utf-8", "surrogatepass"),
            digest_size=16,
        ).hexdigest()
        with self._lock:
            hit = self._docs.get(key)
        if hit is None:
            sample = original_excerpt(original)
            answer = self._generate(self._answer_task, sample, cancel, self._original_model)
            hit = _DocCache(answer, self._original_model.perplexity(sample))
            with self._lock:
                self._docs[key] = hit
                while len(self._docs) > self._cache_documents:
                    self._docs.popitem(last=False)
        return hit

    def scores_sanitized_perplexity(self) -> bool:
        """Whether a refinement runs the perplexity pass on the sanitized text: for a
        training-set builder that asks for every feature, or a bundle that reads it."""
        return self._all_features or any(self.predictor.reads(name)
                                         for name in SANITIZED_PERPLEXITY)

    def _perplexity(self, text: str) -> float:
        """SLM perplexity on the excerpt (the runtime scores a bounded prefix of it: a
        sample of the document's first passage, the same for original and sanitized)."""
        return self.slm.perplexity(text)

    def measure(
        self,
        original: str,
        sanitized: SanitizedText,
        spans: Sequence[Span] = (),
        *,
        correct: bool = False,
        cancel: threading.Event | None = None,
        progress: Progress | None = None,
        notes: dict[str, Any] | None = None,
        slm_done: Callable[[], None] | None = None,
        vault: Vault | None = None,
    ) -> tuple[Features, str, str]:
        """All features (no prediction), the text that would be sent, and the SLM's answer.

        Used by :meth:`refine` and by the training-set builder, so training and use
        compute features the same way. B, C, D and the perplexities are computed on the
        aligned excerpts of a long document (the whole text when it is short); ``notes``,
        if given, receives what was sampled or skipped. Every SLM call comes before the
        first embedding, and ``slm_done`` (if given) is called in between: a one-shot
        caller can free the SLM there so the two models are never in memory together.
        ``vault``: the sanitization's restoration (None: d_X); D compares the original
        with the answer it restores (:func:`answer_for_d`); the SLM's own answer is returned.
        """
        report = progress or (lambda _f, _m: None)
        notes = notes if notes is not None else {}
        feats = fast_features(original, sanitized, spans)
        report(0.05, "local model reads the original")
        doc = self._original_slm(original, cancel)
        text = sanitized.text
        if correct and word_count(text) > MAX_CORRECTION_WORDS:
            notes["correction_skipped"] = (f"grammar repair runs on documents up to "
                                           f"{MAX_CORRECTION_WORDS} words")
            correct = False
        if correct:
            report(0.35, "local model repairs the sanitized text")
            text = self._generate(correction_task(text), text, cancel) or text
            sanitized = dataclasses.replace(sanitized, text=text, changes=())
        sample = excerpts(original, sanitized)
        if sample.sampled:
            notes["sampled"] = "B, C, D and perplexity were computed on an excerpt"
        report(0.6, "local model works on the sanitized text")
        answer = self._generate(self._answer_task, sample.sanitized, cancel) \
            if sample.sanitized.strip() else ""
        ppl_s = (self._perplexity(sample.sanitized)
                 if sample.sanitized.strip() and self.scores_sanitized_perplexity()
                 else float("nan"))
        if slm_done is not None:
            slm_done()
        report(0.9, "comparing")
        sim_c = self._original_similarity(doc, original)
        vecs = self.embedder.embed([sample.original, sample.sanitized,
                                    answer_for_d(answer, vault)])
        sim_b = float(np.dot(vecs[0], vecs[1]))
        sim_d = float(np.dot(vecs[0], vecs[2])) if answer else 0.0
        feats = feats.with_refined(
            sim_sanitized=sim_b, sim_slm_original=sim_c, sim_slm_sanitized=sim_d,
            ppl_sanitized=ppl_s, ppl_original=doc.ppl,
        )
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
        slm_done: Callable[[], None] | None = None,
        vault: Vault | None = None,
    ) -> Assessment:
        """Both stages; runs the SLM (once or twice if the original is not cached).

        Grammar repair applies to d_X output only; operator output is already fluent.
        ``slm_done`` and ``vault``: see :meth:`measure`.
        """
        correct = correct and sanitized.method == "dx"
        key = _measurement_key(original, sanitized, spans, correct, vault)
        with self._lock:
            known = self._measured.get(key)
            if known is not None:
                self._measured.move_to_end(key)
        if known is not None:
            feats, text, answer, notes = known[0], known[1], known[2], dict(known[3])
        else:
            notes = {}
            feats, text, answer = self.measure(
                original, sanitized, spans, correct=correct, cancel=cancel,
                progress=progress, notes=notes, slm_done=slm_done, vault=vault,
            )
            with self._lock:
                self._measured[key] = (feats, text, answer, dict(notes))
                while len(self._measured) > MEASURED_TEXTS:
                    self._measured.popitem(last=False)
        correct = correct and "correction_skipped" not in notes
        est_fast = self.predictor.estimate(feats, refined=False, corrected=correct)
        est = self.predictor.estimate(feats, refined=True, corrected=correct)
        if progress is not None:
            progress(1.0, "done")
        return Assessment(feats, est_fast.value, est.value, text, correct, answer, notes,
                          est_fast, est)

    def realized_utility(self, original: str, cloud_answer: str) -> float:
        """E: how close the cloud's answer is to the original (for learning on the flow).

        Compared with the original's excerpt, as C and D are, so E and its predictors
        measure the same thing on long documents (short ones are their own excerpt).
        """
        return self.embedder.similarity(original_excerpt(original), cloud_answer)

    def _generate(self, task: Task, text: str, cancel: threading.Event | None,
                  model: LanguageModel | None = None) -> str:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        self.slm_calls += 1
        return (model or self.slm).run(task, text, cancel=cancel)


def answer_for_d(answer: str, vault: Vault | None) -> str:
    """The SLM's answer as D compares it: restored as the send path restores the cloud's
    (:class:`~preflight.core.sanitize.restoring.StreamRestorer`: every occurrence gets the
    value, secrets and link targets stay placeholders)."""
    if vault is None or not answer:
        return answer
    return restore(answer, vault, exact_forms=False, secrets=False, in_links=False)


def _measurement_key(original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     correct: bool, vault: Vault | None = None) -> str:
    """What a refinement's features depend on: both texts, the sanitization's record (ε,
    policy, token counts), the detected spans, the repair option and the restoration."""
    h = hashlib.sha256()
    restoring = [(e.token, e.original) for e in vault.entries] if vault else []
    for part in (original, sanitized.text, sanitized.method, repr(sorted(
            sanitized.report.to_json().items(), key=lambda kv: kv[0])),
            repr(sanitized.changes), repr([(s.start, s.end, s.type) for s in spans]),
            repr(correct), repr(restoring)):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()
