from __future__ import annotations

import pytest

from _models import require_model
from preflight.core.config import ProviderSettings
from preflight.core.send.cost import (
    ESTIMATE_METHOD, TokenCount, TokenCounter, estimate_cost, estimate_tokens, price,
)


def test_chars_per_four_estimate():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_missing_model_falls_back_to_estimate_and_says_so(tmp_path):
    counter = TokenCounter(model_path=tmp_path / "missing.gguf")
    got = counter.count("x" * 40)
    assert got == TokenCount(10, ESTIMATE_METHOD)


def test_cost_from_prices_per_million():
    p = ProviderSettings("p", "https://x/v1", "m", price_input_per_mtok=2.5,
                         price_output_per_mtok=10.0)
    est = estimate_cost(TokenCount(1000, ESTIMATE_METHOD), 142, p)
    assert est.input_cost == pytest.approx(0.0025)
    assert est.max_output_cost == pytest.approx(0.00142)
    assert est.priced and "0.0025" in est.describe()
    assert price(1_000_000, 1_000_000, p) == pytest.approx(12.5)


def test_unpriced_provider_says_so():
    est = estimate_cost(TokenCount(10, ESTIMATE_METHOD), 5, ProviderSettings("p", "u", "m"))
    assert not est.priced and "no prices" in est.describe()


@pytest.mark.slow
def test_real_tokenizer_vocab_only():
    path = require_model("slm")
    counter = TokenCounter(model_path=path)
    got = counter.count("Hello world, this is a test of the tokenizer.")
    assert got.method.startswith("tokenizer: SmolLM2")
    assert 5 <= got.tokens <= 15
