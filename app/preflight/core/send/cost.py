"""Token counts and the cost estimate shown before a send.

Tokens are counted with a :class:`~preflight.core.ports.Tokenizer` when the composition
root plugs one in (the local SLM's tokenizer, from the runtime layer);
otherwise, or when it fails, with the documented estimate of one token per four
characters. Either way the result says which was used, because a cloud provider's own
tokenizer differs from both — the count is an estimate of the bill, not the bill.

:func:`count_request_tokens` counts the text of the exact request body the provider
receives (chat messages, or the completion prompt), never a rebuilt approximation.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from preflight.core.config import ProviderSettings
from preflight.core.ports import Tokenizer

if TYPE_CHECKING:
    from preflight.core.send.providers import PreparedRequest

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
ESTIMATE_METHOD = "estimate: characters / 4"


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    method: str   # "tokenizer: <name>" or ESTIMATE_METHOD


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


class TokenCounter:
    """Counts tokens with ``tokenizer`` (a Tokenizer port), else chars/4.

    ``tokenizer=None`` means "no tokenizer available": every count is the estimate and
    says so. A tokenizer that fails (model file gone, library missing) is dropped for the
    rest of the session, logged once, and the estimate is used from then on.
    """

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self._tokenizer = tokenizer
        self._lock = threading.Lock()

    @property
    def method(self) -> str:
        tok = self._tokenizer
        return ESTIMATE_METHOD if tok is None else f"tokenizer: {tok.name}"

    def count(self, text: str) -> TokenCount:
        with self._lock:
            tok = self._tokenizer
            if tok is not None:
                try:
                    return TokenCount(int(tok.count_tokens(text)), f"tokenizer: {tok.name}")
                except Exception as exc:  # noqa: BLE001 - the estimate is a documented fallback
                    log.info("token counts use the chars/4 estimate (%s)", type(exc).__name__)
                    self._tokenizer = None
        return TokenCount(estimate_tokens(text), ESTIMATE_METHOD)


def count_request_tokens(request: "PreparedRequest", counter: TokenCounter) -> TokenCount:
    """Tokens of what ``request`` makes the provider read: the chat messages' contents,
    or the completion prompt, taken from the very body that will be sent."""
    return counter.count(request.token_text)


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
