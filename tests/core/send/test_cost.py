from __future__ import annotations

import json

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


def test_without_tokenizer_counts_chars_per_four_and_says_so():
    assert TokenCounter().count("x" * 40) == TokenCount(10, ESTIMATE_METHOD)


class WordTokenizer:
    """A Tokenizer port fake: one token per whitespace-separated word."""

    name = "words"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def count_tokens(self, text: str) -> int:
        if self.fail:
            raise OSError("model file gone")
        return len(text.split())


def test_fake_tokenizer_matches_the_port():
    from preflight.core.ports import Tokenizer

    assert isinstance(WordTokenizer(), Tokenizer)


def test_tokenizer_counts_and_names_itself():
    got = TokenCounter(WordTokenizer()).count("one two three four five")
    assert got == TokenCount(5, "tokenizer: words")


def test_failing_tokenizer_falls_back_to_estimate_and_says_so():
    counter = TokenCounter(WordTokenizer(fail=True))
    assert counter.count("x" * 40) == TokenCount(10, ESTIMATE_METHOD)
    assert counter.method == ESTIMATE_METHOD


def test_missing_model_file_falls_back_to_estimate(tmp_path):
    from preflight.runtime.tokenizer import LlamaTokenizer

    counter = TokenCounter(LlamaTokenizer(tmp_path / "missing.gguf"))
    assert counter.count("x" * 40) == TokenCount(10, ESTIMATE_METHOD)


def test_count_request_tokens_reads_the_exact_body_texts():
    from preflight.core.send.cost import count_request_tokens
    from preflight.core.send.providers import create_client
    from preflight.core.tasks import SUMMARIZE

    for style in ("chat", "completions"):
        client = create_client(ProviderSettings("p", "https://x.example/v1", "m",
                                                api_style=style))
        request = client.build_request(SUMMARIZE, "alpha beta gamma")
        body = json.loads(request.body)
        sent = ("\n".join(m["content"] for m in body["messages"]) if style == "chat"
                else body["prompt"])
        got = count_request_tokens(request, TokenCounter(WordTokenizer()))
        assert got.tokens == len(sent.split()) and "alpha beta gamma" in sent


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
    from preflight.runtime.tokenizer import LlamaTokenizer

    counter = TokenCounter(LlamaTokenizer(require_model("slm")))
    got = counter.count("Hello world, this is a test of the tokenizer.")
    assert got.method.startswith("tokenizer: SmolLM2")
    assert 5 <= got.tokens <= 15
