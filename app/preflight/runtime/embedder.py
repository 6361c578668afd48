"""Sentence similarity with all-mpnet-base-v2 (sentence-transformers), offline only.

all-mpnet-base-v2 reads at most 384 word pieces and silently drops the rest, which would
make a long document "similar" to anything that matches its first page. We handle long
texts deliberately: the text is split into sentences, consecutive sentences are packed
into windows of at most 384 word pieces (a sentence longer than a window is cut at piece
boundaries), each window is embedded and L2-normalized, and the document vector is the
piece-count-weighted mean of the window vectors, normalized again. Weighting by length
keeps a short trailing window from counting as much as a full one. Texts that fit in one
window take exactly the model's ordinary path, so short texts score as in the paper.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.errors import ModelUnavailableError

# Never reach for a hub: these must be set before transformers/huggingface_hub import.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

log = logging.getLogger(__name__)

MAX_PIECES = 384
# torch's threads when a llama.cpp built with OpenMP runs in the same process. Both then
# use the process's one OpenMP runtime (libgomp), and once torch has started its own team,
# libgomp counts more threads than cores and stops spinning at its barriers — llama.cpp,
# which meets such a barrier after every operation of every token, then runs 1.5–1.9x
# slower for the rest of the process. Measured on 2 cores, 500-token document (python -m
# preflight_eval.bench_utility): a 142-token SLM answer took 6.7 s after the first
# embedding and 3.8 s with torch on one thread, whose embeddings cost 1.5 s instead of 1.0.
# setup.sh builds llama.cpp without OpenMP, so this applies only to a build from elsewhere
# (see :func:`shared_process_torch_threads`).
SHARED_PROCESS_TORCH_THREADS = 1
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n\s*\n")


def default_similarity_path() -> Path:
    from preflight.runtime.models import ModelManager

    return Path(ModelManager().path("similarity"))


def shared_process_torch_threads(llama_uses_openmp: bool) -> int | None:
    """torch's threads beside an in-process llama.cpp: one if that llama.cpp shares libgomp
    with torch (:data:`SHARED_PROCESS_TORCH_THREADS`), else torch's default (a thread per
    core; ggml's own thread pool is not slowed by torch's team)."""
    return SHARED_PROCESS_TORCH_THREADS if llama_uses_openmp else None


def split_sentences(text: str) -> list[str]:
    """Rough sentence split (punctuation or blank lines); never loses characters' words."""
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text)) if s]


class SentenceEmbedder:
    """all-mpnet-base-v2 embeddings and cosine similarity, with long-text windows.

    Args:
        model_dir: local sentence-transformers folder; ``None`` asks the model manager.
        max_pieces: window size in word pieces (the model's limit is 384).
        cache_size: embeddings kept in memory, keyed by a hash of the text (the original
            document is compared with many variants; never re-embed it).
        batch_size: windows per forward pass. One: a refined step embeds windows of
            unequal length (a full window, the document's rest, the SLM's short answer),
            and a batch pads them all to the longest.
        torch_threads: torch's intra-op threads, set when the model loads (``None``:
            torch's default, one per core). See :data:`SHARED_PROCESS_TORCH_THREADS`.
    """

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        max_pieces: int = MAX_PIECES,
        cache_size: int = 512,
        device: str = "cpu",
        batch_size: int = 1,
        torch_threads: int | None = None,
    ) -> None:
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._max_pieces = max_pieces
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()   # one encode at a time: torch already uses all cores
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        # Windows encoded at once. Measured on a 450-word excerpt: the first encode added
        # ~510 MB to the loaded model with 16, ~400 MB with 2. Padding made two per batch
        # 1.6x slower than one at a time on a refined step's texts (python -m
        # preflight_eval.bench_utility, "embeddings_batch_of_2_over_1").
        self._batch_size = batch_size
        self._torch_threads = torch_threads

    @property
    def dimension(self) -> int:
        return int(self._ensure().get_embedding_dimension())

    def _ensure(self) -> Any:
        if self._model is None:
            path = self._model_dir if self._model_dir is not None else default_similarity_path()
            if not (path / "modules.json").is_file():
                raise ModelUnavailableError(
                    f"The similarity model is missing: {path}.",
                    "Run `preflight models install`.", fix="install-models",
                )
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                # transformers draws a "Loading weights" bar on stderr: noise in a CLI's
                # output, and the window shows its own state.
                hf_logging.disable_progress_bar()
                if self._torch_threads is not None:
                    import torch

                    torch.set_num_threads(max(1, int(self._torch_threads)))

                self._model = SentenceTransformer(
                    str(path), device=self._device, local_files_only=True
                )
            except (OSError, ValueError, RuntimeError):
                raise ModelUnavailableError(
                    "The similarity model could not be loaded (its files are damaged or are "
                    "not a model).",
                    "Run `preflight models verify`; reinstall with `preflight models install`.",
                    fix="install-models",
                ) from None
            # Windows are packed to the model's real limit (including [CLS]/[SEP]).
            self._max_pieces = min(self._max_pieces, int(self._model.max_seq_length))
        return self._model

    def load(self) -> None:
        with self._lock:
            self._ensure()

    # -- windows ---------------------------------------------------------------------
    def windows(self, text: str) -> list[tuple[str, int]]:
        """``(window_text, n_pieces)`` covering ``text``, each ≤ the model's limit."""
        model = self._ensure()
        tok = model.tokenizer
        limit = self._max_pieces - 2  # [CLS] and [SEP]
        out: list[tuple[str, int]] = []
        current: list[str] = []
        current_n = 0
        for sentence in split_sentences(text) or [text]:
            n = len(tok.tokenize(sentence))
            if n > limit:
                if current:
                    out.append((" ".join(current), current_n))
                    current, current_n = [], 0
                out.extend(self._cut_long(sentence, limit))
                continue
            if current and current_n + n > limit:
                out.append((" ".join(current), current_n))
                current, current_n = [], 0
            current.append(sentence)
            current_n += n
        if current:
            out.append((" ".join(current), current_n))
        return out

    def _cut_long(self, sentence: str, limit: int) -> list[tuple[str, int]]:
        enc = self._model.tokenizer(
            sentence, add_special_tokens=False, return_offsets_mapping=True
        )
        offsets = enc["offset_mapping"]
        pieces = []
        for i in range(0, len(offsets), limit):
            chunk = offsets[i : i + limit]
            pieces.append((sentence[chunk[0][0] : chunk[-1][1]], len(chunk)))
        return pieces

    # -- embeddings ------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized vector per text, shape ``(len(texts), dim)``."""
        with self._lock:
            model = self._ensure()
            out = np.zeros((len(texts), model.get_embedding_dimension()), np.float32)
            todo: dict[int, str] = {}
            for i, text in enumerate(texts):
                cached = self._cache.get(_key(text))
                if cached is not None:
                    out[i] = cached
                else:
                    todo[i] = text
            if todo:
                for i, vec in zip(todo, self._embed_uncached(list(todo.values()))):
                    out[i] = vec
                    self._remember(_key(todo[i]), vec)
            return out

    def _embed_uncached(self, texts: list[str]) -> list[np.ndarray]:
        model = self._model
        plans = [self.windows(t) if t.strip() else [("", 1)] for t in texts]
        flat = [w for plan in plans for w, _ in plan]
        vecs = model.encode(
            flat, batch_size=self._batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        result = []
        pos = 0
        for plan in plans:
            chunk = vecs[pos : pos + len(plan)]
            pos += len(plan)
            if len(plan) == 1:
                result.append(chunk[0].astype(np.float32))
                continue
            weights = np.asarray([n for _, n in plan], dtype=np.float32)
            mean = (chunk * weights[:, None]).sum(axis=0) / weights.sum()
            result.append((mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32))
        return result

    def _remember(self, key: str, vec: np.ndarray) -> None:
        self._cache[key] = vec
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of the two texts' embeddings, in [-1, 1]."""
        va, vb = self.embed([a, b])
        return float(np.clip(np.dot(va, vb), -1.0, 1.0))


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
