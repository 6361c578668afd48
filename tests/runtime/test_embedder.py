"""SentenceEmbedder windows and pooling, with a fake sentence-transformers model."""

from __future__ import annotations

import numpy as np
import pytest

from preflight.core.errors import ModelUnavailableError
from preflight.runtime.embedder import SentenceEmbedder, split_sentences


class FakeTokenizer:
    def tokenize(self, text):
        return text.split()

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        offsets, pos = [], 0
        for w in text.split():
            start = text.index(w, pos)
            offsets.append((start, start + len(w)))
            pos = start + len(w)
        return {"offset_mapping": offsets}


class FakeST:
    """Each text embeds to a one-hot vector chosen by its first letter."""

    max_seq_length = 12
    tokenizer = FakeTokenizer()

    def __init__(self):
        self.encoded: list[str] = []

    def get_embedding_dimension(self):
        return 26

    def encode(self, texts, **kw):
        self.encoded.extend(texts)
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, (ord(t[:1].lower() or "a") - 97) % 26] = 1.0
        return out


@pytest.fixture
def emb():
    e = SentenceEmbedder("unused")
    e._model = FakeST()
    e._max_pieces = FakeST.max_seq_length
    return e


def test_sentences_split_on_punctuation_and_blank_lines():
    assert split_sentences("One two. Three four!\n\nFive") == ["One two.", "Three four!", "Five"]


def test_short_text_is_one_window(emb):
    assert emb.windows("alpha beta. gamma.") == [("alpha beta. gamma.", 3)]


def test_long_text_is_packed_into_windows_within_the_limit(emb):
    text = "aa bb cc dd. " * 6            # 6 sentences × 4 pieces; limit 12 − 2 = 10
    wins = emb.windows(text)
    assert [n for _, n in wins] == [8, 8, 8]
    assert all(n <= 10 for _, n in wins)
    # a sentence longer than a window is cut at piece boundaries
    long = " ".join(f"w{i}" for i in range(25))
    assert [n for _, n in emb.windows(long)] == [10, 10, 5]


def test_long_text_embedding_is_the_weighted_mean_of_window_vectors(emb):
    text = "apple a b c d e f g h. " + "banana x y. "     # windows of 9 and 3 pieces
    vec = emb.embed([text])[0]
    expected = np.zeros(26)
    expected[0], expected[1] = 9, 3
    expected /= np.linalg.norm(expected)
    assert np.allclose(vec, expected, atol=1e-6)
    assert np.isclose(np.linalg.norm(vec), 1.0)


def test_embeddings_are_cached_by_text(emb):
    emb.embed(["apple pie", "banana"])
    n = len(emb._model.encoded)
    emb.embed(["banana", "apple pie"])
    assert len(emb._model.encoded) == n
    assert emb.similarity("apple pie", "avocado") == pytest.approx(1.0)
    assert emb.similarity("apple pie", "banana") == pytest.approx(0.0)


def test_missing_model_folder_is_a_user_error(tmp_path):
    with pytest.raises(ModelUnavailableError) as err:
        SentenceEmbedder(tmp_path / "nothing").embed(["x"])
    assert "models install" in err.value.hint
