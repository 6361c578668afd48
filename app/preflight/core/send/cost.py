"""Token counts and the cost estimate shown before a send.

Tokens are counted with the local SLM's tokenizer (llama.cpp, ``vocab_only`` so no
weights are loaded) when the model file is installed; otherwise with the documented
estimate of one token per four characters. Either way the result says which was used,
because a cloud provider's own tokenizer differs from both — the count is an estimate of
the bill, not the bill.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from pathlib import Path

from preflight.core.config import ProviderSettings

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
ESTIMATE_METHOD = "estimate: characters / 4"


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    method: str   # "tokenizer: <model file>" or ESTIMATE_METHOD


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


class TokenCounter:
    """Counts tokens with the SLM's tokenizer if its file is found, else chars/4.

    ``model_path=None`` asks the model manager for the "slm" role lazily; any failure
    (not installed, llama.cpp missing) falls back to the estimate and says so.
    """

    def __init__(self, model_path: Path | str | None = None, use_tokenizer: bool = True) -> None:
        self._model_path = Path(model_path) if model_path else None
        self._use_tokenizer = use_tokenizer
        self._vocab = None
        self._tried = False
        self._lock = threading.Lock()

    def _load(self):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._tried:
                return self._vocab
            self._tried = True
            if not self._use_tokenizer:
                return None
            try:
                path = self._model_path
                if path is None:
                    from preflight.runtime.models import ModelManager

                    path = ModelManager().path("slm")
                from llama_cpp import Llama

                self._vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
                self._model_path = Path(path)
            except Exception as exc:  # noqa: BLE001 - the estimate is a documented fallback
                log.info("token counts use the chars/4 estimate (%s)", type(exc).__name__)
                self._vocab = None
            return self._vocab

    @property
    def method(self) -> str:
        vocab = self._load()
        if vocab is None or self._model_path is None:
            return ESTIMATE_METHOD
        return f"tokenizer: {self._model_path.name}"

    def count(self, text: str) -> TokenCount:
        vocab = self._load()
        if vocab is None:
            return TokenCount(estimate_tokens(text), ESTIMATE_METHOD)
        with self._lock:
            tokens = vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return TokenCount(len(tokens), self.method)


@dataclass(frozen=True)
class CostEstimate:
    input_tokens: int
    max_output_tokens: int
    token_method: str
    input_cost: float
    max_output_cost: float
    priced: bool          # False when the provider has no prices set (cost shows as unknown)

    @property
    def max_total(self) -> float:
        return self.input_cost + self.max_output_cost

    def to_json(self) -> dict[str, object]:
        return {
            "input_tokens": self.input_tokens,
            "max_output_tokens": self.max_output_tokens,
            "token_method": self.token_method,
            "input_cost": round(self.input_cost, 6),
            "max_output_cost": round(self.max_output_cost, 6),
            "max_total_cost": round(self.max_total, 6),
            "priced": self.priced,
        }

    def describe(self) -> str:
        if not self.priced:
            return (f"{self.input_tokens} input tokens ({self.token_method}), up to "
                    f"{self.max_output_tokens} output tokens; no prices set for this provider")
        return (f"{self.input_tokens} input tokens ({self.token_method}) ≈ {self.input_cost:.4f}, "
                f"up to {self.max_output_tokens} output tokens ≈ {self.max_output_cost:.4f}; "
                f"at most {self.max_total:.4f} in the provider's currency")


def price(tokens_in: int, tokens_out: int, provider: ProviderSettings) -> float:
    return (tokens_in * provider.price_input_per_mtok
            + tokens_out * provider.price_output_per_mtok) / 1_000_000


def estimate_cost(
    input_tokens: TokenCount, max_output_tokens: int, provider: ProviderSettings
) -> CostEstimate:
    priced = bool(provider.price_input_per_mtok or provider.price_output_per_mtok)
    return CostEstimate(
        input_tokens=input_tokens.tokens,
        max_output_tokens=max_output_tokens,
        token_method=input_tokens.method,
        input_cost=price(input_tokens.tokens, 0, provider),
        max_output_cost=price(0, max_output_tokens, provider),
        priced=priced,
    )
