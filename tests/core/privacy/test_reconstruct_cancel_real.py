"""The reconstruction attack with the shipped local model: within its budget, with
progress per token, and a cancel that stops the generation loop itself (missing model →
fails in CI). No wall-clock assertion: the machine may be loaded; the tokens written
after the cancel show that the loop stopped."""

from __future__ import annotations

import threading

import pytest
from _models import require_model

from preflight.core.errors import Cancelled
from preflight.core.privacy.reconstruct import MAX_ATTACK_TOKENS, ReconstructionAttack
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, Span
from preflight.runtime.slm import LocalSLM

pytestmark = pytest.mark.slow

PARAGRAPH = ("Maria Keller, a nurse at the Sydney branch, called on 3 March about her loan "
             "of 12,400 dollars. She said the branch manager, Tom Hale, had promised a "
             "lower rate and that her husband would call back from Perth on Monday. ")
TEXT = PARAGRAPH * 8          # longer than the attack's window


def _spans() -> list[Span]:
    out = []
    for value, typ in (("Maria Keller", "PERSON"), ("Tom Hale", "PERSON"),
                       ("12,400 dollars", "MONEY")):
        at = 0
        while (at := TEXT.find(value, at)) >= 0:
            out.append(Span(at, at + len(value), typ, Category.DIRECT_IDENTIFIER, 0.9,
                            "t", "t"))
            at += len(value)
    return sorted(out, key=lambda s: s.start)


class CountingSLM:
    """The real model, with the budget it was asked for recorded."""

    def __init__(self, slm: LocalSLM) -> None:
        self.slm, self.max_tokens = slm, None

    def run(self, task, text, on_token=None, cancel=None):
        self.max_tokens = task.max_tokens
        return self.slm.run(task, text, on_token=on_token, cancel=cancel)

    def perplexity(self, text):
        return self.slm.perplexity(text)


def test_a_cancel_stops_the_real_model_mid_generation_within_budget():
    spans = _spans()
    out = PolicyMechanism(PRESETS["placeholder"]).sanitize(TEXT, spans, SanitizeParams(seed=1))
    slm = CountingSLM(LocalSLM(require_model("slm")))
    cancel = threading.Event()
    steps: list[tuple[float, str]] = []
    after_cancel = [0]

    def progress(fraction: float, step: str) -> None:
        if cancel.is_set():
            after_cancel[0] += 1
        steps.append((fraction, step))
        if step == "writing" and sum(s == "writing" for _f, s in steps) == 5:
            cancel.set()                       # the user presses Cancel mid-answer

    try:
        with pytest.raises(Cancelled):
            ReconstructionAttack(slm).run(TEXT, out, spans, cancel=cancel, progress=progress)
    finally:
        slm.slm.close()
    assert steps[0] == (0.0, "waiting")
    assert slm.max_tokens is not None and slm.max_tokens <= MAX_ATTACK_TOKENS
    # the loop stopped at the next token (a piece may already be on its way)
    assert after_cancel[0] <= 2
    assert all(0.0 <= f < 1.0 for f, _s in steps)
