"""The real SmolLM2 GGUF (installed by `preflight models install`; missing → fails in CI)."""

from __future__ import annotations

import threading

import pytest
from _models import require_model

from preflight.core.errors import Cancelled
from preflight.core.tasks import SUMMARIZE, Task
from preflight.runtime.slm import LocalSLM

pytestmark = pytest.mark.slow

DOC = (
    "The city council of Springfield voted on Tuesday to build a new public library "
    "next to the central station. The building will cost twelve million dollars and "
    "open in 2027. Mayor Jane Porter said the library would offer free computer classes, "
    "a children's wing and a rooftop garden. Opponents argued that the money should go "
    "to road repairs instead, but the measure passed by seven votes to two."
)


@pytest.fixture(scope="module")
def slm():
    model = LocalSLM(require_model("slm"))
    yield model
    model.close()


def test_summary_is_about_the_document_and_capped(slm):
    pieces: list[str] = []
    out = slm.run(SUMMARIZE, DOC, on_token=pieces.append)
    assert "library" in out.lower()
    assert "".join(pieces).strip() == out
    assert slm.count_tokens(out) <= SUMMARIZE.max_tokens + 2
    # greedy decoding: the same input gives the same answer (features are reproducible)
    assert slm.run(SUMMARIZE, DOC) == out


def test_question_task_answers_from_the_document(slm):
    out = slm.run(Task("question", question="How much will the library cost?"), DOC)
    assert "twelve" in out.lower() or "12" in out


def test_cancel_interrupts_a_real_generation(slm):
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 5:
            cancel.set()

    with pytest.raises(Cancelled):
        slm.run(SUMMARIZE, DOC, on_token=on_token, cancel=cancel)
    assert len(seen) == 5


def test_perplexity_separates_language_from_noise(slm):
    import random

    rng = random.Random(0)
    # no repeats: a repeated phrase becomes predictable even when it is noise
    noise = " ".join("".join(rng.choice("bcdfgkpqvxz") for _ in range(rng.randint(2, 7)))
                     for _ in range(60))
    assert slm.perplexity(DOC) * 5 < slm.perplexity(noise)


@pytest.mark.parametrize("role", ["slm", "slm_qwen05"])
def test_perplexity_in_the_generation_context_equals_a_logits_context(role, monkeypatch):
    """Scoring reuses the generation's context, a few rows of logits per batch, instead
    of a second context with logits for the whole window (which maps the model again):
    the value must be the one that context gives, bit for bit — the utility features
    were computed with it. The window spans several scoring batches and is cut."""
    import math

    from preflight.runtime import slm as slm_module
    from preflight.runtime.llama_open import open_llama
    from preflight.runtime.slm import PERPLEXITY_WINDOW, token_nll

    path = require_model(role)
    opened: list[dict] = []
    real_open = slm_module.open_llama
    monkeypatch.setattr(slm_module, "open_llama",
                        lambda *a, **kw: opened.append(kw) or real_open(*a, **kw))
    text = " ".join([DOC] * 6)                           # > PERPLEXITY_WINDOW tokens
    with LocalSLM(path) as model:
        before = model.run(SUMMARIZE.for_answer(24), DOC)
        got = [model.perplexity(DOC), model.perplexity(text)]
        after = model.run(SUMMARIZE.for_answer(24), DOC)
    assert len(opened) == 1                              # one context, one mapping
    assert after == before              # scoring leaves generation as it found it
    size = PERPLEXITY_WINDOW + 8
    reference = open_llama(path, n_ctx=size, n_batch=size, n_ubatch=size, logits_all=True)
    try:
        assert len(reference.tokenize(text.encode(), add_bos=True)) > PERPLEXITY_WINDOW
        want = []
        for t in (DOC, text):
            tokens = reference.tokenize(t.encode(), add_bos=True)[:PERPLEXITY_WINDOW]
            reference.reset()
            reference.eval(tokens)
            want.append(math.exp(float(token_nll(reference.scores, tokens).mean())))
    finally:
        reference.close()
    assert got == want


def test_cancel_lands_within_a_second_during_prompt_evaluation(slm, capsys):
    """A long document's prompt takes seconds per batch on a small CPU: llama.cpp's abort
    callback must stop it inside the batch, before any token exists — without llama.cpp
    reporting the abandoned decode on stderr as if something had failed."""
    import time

    cancel = threading.Event()
    long_doc = " ".join([DOC] * 25)                      # ~2,000 tokens of prompt
    threading.Timer(0.5, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        slm.answer(SUMMARIZE.for_answer(800), long_doc, cancel=cancel)
    assert time.monotonic() - t0 - 0.5 < 1.0
    assert "decode" not in capsys.readouterr().err
    # the model is usable afterwards, and says why an answer ended
    got = slm.answer(SUMMARIZE.for_answer(8), DOC)
    assert got.finish_reason == "length" and got.text


def test_a_queued_call_is_withdrawn_when_cancelled(slm):
    import time

    busy = threading.Event()

    def occupy() -> None:
        with pytest.raises(Cancelled):
            slm.run(SUMMARIZE, " ".join([DOC] * 8), cancel=busy)

    started = threading.Thread(target=occupy)
    started.start()                                      # occupies the owner thread
    time.sleep(0.2)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        slm.run(SUMMARIZE, DOC, cancel=cancel)
    assert time.monotonic() - t0 < 1.3
    busy.set()
    started.join(30)


def test_a_real_loop_is_stopped_at_its_first_repeat(slm):
    """SmolLM2 loops on this committed business memo when answering at the product's
    default length (preflight_eval.local_answer_study: 221 words, the same sentences again);
    the guard stops it at the first repeated sentence, through the runtime's own cancel."""
    import gzip
    import json
    from pathlib import Path

    from preflight.core.send.answer_text import REPEAT_REASON, finish_answer, first_repeat
    from preflight.core.send.local import guarded_answer
    from preflight.core.tasks import ANSWER_MAX_TOKENS

    data = Path(__file__).resolve().parents[2] / "data" / "utility" / "business.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as fh:
        memo = next(r["text"] for r in map(json.loads, fh) if r["doc_id"] == "memo:0052")
    task = SUMMARIZE.for_answer(ANSWER_MAX_TOKENS)
    loose = slm.answer(task, memo)
    assert first_repeat(loose.text) is not None, "this build no longer loops on the memo"
    pieces: list[str] = []
    got = guarded_answer(slm, task, memo, on_token=pieces.append)
    assert got.finish_reason == REPEAT_REASON
    assert "".join(pieces) == got.text and first_repeat(got.text) is None
    assert loose.text.startswith(got.text) and len(got.text) < len(loose.text)
    shown, _ = finish_answer(got.text, got.finish_reason)
    assert shown and loose.text.startswith(shown)
