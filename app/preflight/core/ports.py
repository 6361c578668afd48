"""The protocols the core needs from the outside world (its *ports*).

The core owns these; the runtime layer implements them with real models and the
composition root (:mod:`preflight.app`) plugs the implementations in. Nothing in the core
imports the runtime, so every core object takes its collaborators through its constructor
and tests pass fakes (each fake is checked against the protocol it stands in for).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from preflight.core.tasks import Task
from preflight.core.types import Span

#: ``progress(fraction 0–1, short text)``: how the core reports progress.
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Tokenization:
    """Token ids of a text and where they sit in it.

    Tokens are grouped into *units*: the smallest runs of consecutive tokens whose
    boundaries fall on character boundaries (a byte-level tokenizer may split one emoji
    over several tokens). ``unit_of[t]`` is token ``t``'s unit; unit ``u`` covers
    ``text[unit_start[u]:unit_end[u]]``. Text outside every unit (e.g. spaces between
    the words of a word-level space) is never changed. ``out_of_vocabulary`` counts the
    words a word-level space could not embed (left out of ``ids``, never changed).
    """

    ids: np.ndarray          # (T,) int64 token ids
    unit_of: np.ndarray      # (T,) int64
    unit_start: np.ndarray   # (U,) int64 character offsets
    unit_end: np.ndarray     # (U,) int64
    out_of_vocabulary: int = 0


@runtime_checkable
class TokenSpace(Protocol):
    """What the d_X mechanism needs from an embedding space."""

    name: str            # human-readable embedding name ("SmolLM2-135M-Instruct token_embd")
    key: str             # sha256 of the source file(s): names caches and calibrations

    @property
    def matrix(self) -> np.ndarray: ...          # (V, n) float32, row = token id

    @property
    def candidate_ids(self) -> np.ndarray: ...   # sorted int64 ids allowed as output

    def tokenize(self, text: str) -> Tokenization: ...

    def piece(self, token_id: int) -> bytes: ...  # the token's bytes in text

    def filter_info(self) -> dict: ...           # {"rule", "kept", "total", ...}


@runtime_checkable
class LanguageModel(Protocol):
    """The local small language model (answers, repairs, perplexity)."""

    def run(self, task: Task, text: str, on_token: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> str: ...

    def perplexity(self, text: str) -> float: ...


@dataclass(frozen=True)
class ModelAnswer:
    """A generated answer and why generation ended (``"stop"``, ``"length"``…)."""

    text: str
    finish_reason: str | None


@runtime_checkable
class AnsweringModel(LanguageModel, Protocol):
    """A local model that also says why an answer ended (a user-facing answer that hit
    the length limit is then cut back to its last sentence)."""

    def answer(self, task: Task, text: str, on_token: Callable[[str], None] | None = None,
               cancel: threading.Event | None = None) -> ModelAnswer: ...


@runtime_checkable
class Embedder(Protocol):
    """Sentence embeddings and the similarity the utility features are built on."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def similarity(self, a: str, b: str) -> float: ...


@runtime_checkable
class Tokenizer(Protocol):
    """Counts the tokens a provider-side tokenizer would see (cost estimates)."""

    name: str

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class ModelLocator(Protocol):
    """Where the installed file of a model role is (raises ModelUnavailableError)."""

    def path(self, role: str) -> Path: ...


@runtime_checkable
class Detector(Protocol):
    """PII detection: non-overlapping spans sorted by start (overlaps already resolved)."""

    warnings: list[str]

    def detect(self, text: str) -> list[Span]: ...


__all__ = [
    "Detector", "Embedder", "LanguageModel", "ModelLocator", "Progress", "TokenSpace",
    "Tokenization", "Tokenizer",
]
