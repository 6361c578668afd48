"""LocalSLM with a fake llama.cpp: one owner thread, lazy load, streaming, cancel."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import llama_cpp
from preflight.core.errors import Cancelled, InputError, ModelUnavailableError
from preflight.core.tasks import SUMMARIZE
from preflight.runtime.slm import LocalSLM


class FakeLlama:
    instances: list["FakeLlama"] = []

    def __init__(self, model_path, n_threads=None, verbose=False, **kw):
        self.kw = kw
        self.threads: set[int] = {threading.get_ident()}
        self.generated = 0
        self.closed = False
        FakeLlama.instances.append(self)

    def _touch(self):
        self.threads.add(threading.get_ident())

    def tokenize(self, data: bytes, add_bos=False):
        self._touch()
        return ([1] if add_bos else []) + [len(w) + 2 for w in data.decode().split()]

    def detokenize(self, tokens):
        return b" ".join(b"w" * max(1, t - 2) for t in tokens)

    def create_chat_completion(self, messages, max_tokens, stream, **kw):
        self._touch()
        self.last_prompt = messages[-1]["content"]
        assert stream
        words = ["The", " summary", " of", " it", "."] * 20

        def gen():
            for w in words[:max_tokens]:
                self.generated += 1
                yield {"choices": [{"delta": {"content": w}}]}

        return gen()

    def reset(self):
        self._touch()

    def close(self):
        self.closed = True


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    FakeLlama.instances = []
    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return model


def test_loads_lazily_and_uses_one_owner_thread(fake_llama):
    slm = LocalSLM(fake_llama)
    assert FakeLlama.instances == []                # nothing loaded yet
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: slm.run(SUMMARIZE, "some document text"), range(8)))
    assert len(FakeLlama.instances) == 1
    assert len(FakeLlama.instances[0].threads) == 1  # every call ran on the same thread
    assert FakeLlama.instances[0].threads != {threading.get_ident()}
    assert all(a.startswith("The summary of it.") for a in answers)
    slm.close()
    assert FakeLlama.instances[0].closed


def test_streams_tokens_and_respects_max_tokens(fake_llama):
    slm = LocalSLM(fake_llama)
    got: list[str] = []
    out = slm.run(SUMMARIZE, "a document", on_token=got.append)
    assert len(got) == 100                          # all the fake has (max_tokens is 142)
    assert "".join(got).strip() == out
    slm.close()


def test_cancel_stops_generation_early(fake_llama):
    slm = LocalSLM(fake_llama)
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 3:
            cancel.set()

    with pytest.raises(Cancelled):
        slm.run(SUMMARIZE, "a document", on_token=on_token, cancel=cancel)
    assert len(seen) == 3
    assert FakeLlama.instances[0].generated <= 4
    # the model is still usable afterwards
    assert slm.run(SUMMARIZE, "again")
    slm.close()


def test_long_document_is_cut_to_fit_the_context(fake_llama):
    slm = LocalSLM(fake_llama, n_ctx=400)
    slm.run(SUMMARIZE, "word " * 2000)
    prompt_words = len(FakeLlama.instances[0].last_prompt.split())
    assert prompt_words < 400 - SUMMARIZE.max_tokens    # the document was cut, not overflowed
    slm.close()


def test_missing_model_and_empty_text_are_user_errors(tmp_path, fake_llama):
    with pytest.raises(ModelUnavailableError) as err:
        LocalSLM(tmp_path / "absent.gguf").run(SUMMARIZE, "text")
    assert "models install" in err.value.hint
    slm = LocalSLM(fake_llama)
    with pytest.raises(InputError):
        slm.run(SUMMARIZE, "   ")
    slm.close()
    with pytest.raises(ModelUnavailableError):
        slm.run(SUMMARIZE, "closed now")
