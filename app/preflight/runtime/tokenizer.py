"""The local SLM's tokenizer as a :class:`preflight.core.ports.Tokenizer` (cost estimates).

llama.cpp loads the GGUF with ``vocab_only=True``: the vocabulary only, no weights, in a
fraction of a second. Loading is lazy (first count) and any failure propagates to the
caller — :class:`preflight.core.send.cost.TokenCounter` then falls back to chars/4 and
says so.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from preflight.core.errors import ModelUnavailableError
from preflight.core.ports import ModelLocator
from preflight.runtime.llama_open import open_llama


class LlamaTokenizer:
    """Counts tokens with the vocabulary of the GGUF model at ``model_path``."""

    def __init__(self, model_path: Path | str) -> None:
        self.model_path = Path(model_path)
        self.name = self.model_path.name
        self._vocab: Any = None
        self._lock = threading.Lock()   # one llama.cpp object, one caller at a time

    def _load(self) -> Any:
        if self._vocab is None:
            self._vocab = open_llama(self.model_path, quiet_stderr=True, vocab_only=True)
        return self._vocab

    def count_tokens(self, text: str) -> int:
        with self._lock:
            vocab = self._load()
            return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def slm_tokenizer(locator: ModelLocator) -> LlamaTokenizer | None:
    """The tokenizer of the installed "slm" model, or None when it is not installed."""
    try:
        return LlamaTokenizer(locator.path("slm"))
    except ModelUnavailableError:
        return None
