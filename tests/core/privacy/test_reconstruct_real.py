"""The reconstruction attack with the shipped SmolLM2 (missing → fails in CI)."""

from __future__ import annotations

import pytest
from _models import require_model

from preflight.core.privacy.reconstruct import ReconstructionAttack
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, Span
from preflight.runtime.slm import LocalSLM

pytestmark = pytest.mark.slow

TEXT = ("Maria Keller, a nurse at the Sydney branch, called about her loan. "
        "Maria said the branch manager was helpful.")


def test_the_real_model_attacks_a_placeholder_payload():
    start = TEXT.index("Maria Keller")
    spans = [Span(start, start + 12, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", "t")]
    out = PolicyMechanism(PRESETS["placeholder"]).sanitize(TEXT, spans, SanitizeParams(seed=1))
    slm = LocalSLM(require_model("slm"))
    try:
        report = ReconstructionAttack(slm).run(TEXT, out, spans)
    finally:
        slm.close()
    assert report.reconstruction.strip()
    [value] = report.values
    assert value.value == "Maria Keller" and value.kind == "name"
    # the second "Maria" was not detected: it stays in the payload, so the model can at
    # least guess the given name back from it
    assert value.in_payload is False and report.words_changed == 2
    assert 0 <= report.words_restored <= 2
