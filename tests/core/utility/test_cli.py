"""`preflight assess` and `preflight recommend` end to end, with fake models."""

from __future__ import annotations

import json

import pytest

from _utility_fakes import DOC, FakeDx, FakeEmbedder, FakeSLM, LinearPredictor
from preflight.cli.main import main
from preflight.core.utility import assess as assess_mod


class FakeAttack:
    """DxAttack.run's signature; success grows with ε like the real attack's."""

    def __init__(self):
        self.seen = []

    def run(self, prepared, epsilon=None, grid=None, spans=None, cancel=None, max_tokens=None):
        self.seen.append((prepared, epsilon))

        class Result:
            def to_json(self):
                return {"epsilon": epsilon, "success": min(1.0, epsilon / 100), "curve": []}
        return Result()


class NoPii:
    def detect(self, text):
        return []


_REAL_ASSESSOR = assess_mod.UtilityAssessor


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    """The composition root hands out fakes: no PII found, a fake d_X, fake models."""
    from preflight.app.services import Services

    real_mechanism = Services.mechanism
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: NoPii())
    monkeypatch.setattr(Services, "mechanism", lambda self, name, **kw: FakeDx()
                        if name == "dx" else real_mechanism(self, name, **kw))
    state = {"offset": 0.0, "fast_offset": 0.0, "attack": FakeAttack(), "slm": FakeSLM()}
    monkeypatch.setattr(Services, "dx_attack", lambda self: state["attack"])
    monkeypatch.setattr(Services, "slm", lambda self: state["slm"])   # answers locally
    monkeypatch.setattr(
        Services, "assessor",
        lambda self, task=None: _REAL_ASSESSOR(FakeSLM(), FakeEmbedder(),
                                               LinearPredictor(state["offset"],
                                                               state["fast_offset"])),
    )
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    return doc, state


def test_assess_json_has_features_predictions_and_text(fakes, capsys):
    doc, state = fakes
    assert main(["assess", str(doc), "--method", "dx", "--epsilon", "70", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"features", "predicted_utility_fast", "predicted_utility", "sanitized_text"}
    assert out["features"]["epsilon"] == 70.0
    assert out["predicted_utility_fast"] == pytest.approx(0.7, abs=0.05)
    # a d_X setting shows the curve's instant value; no refined one (app.refinement)
    assert out["predicted_utility"] is None and "never fall" in out["notes"]["refined_withheld"]
    assert "zz" in out["sanitized_text"]
    # The attack on d_X noise ran on the payload's own preparation, at its ε.
    assert out["privacy"]["attack_success"] == pytest.approx(0.7)
    prepared, eps = state["attack"].seen[-1]
    assert eps == 70.0 and prepared.calls[0] == 70.0   # (then the curve's grid)


def test_assess_fast_only_and_operator(fakes, capsys):
    doc, _ = fakes
    assert main(["assess", str(doc), "--method", "redact", "--fast", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["predicted_utility"] is None
    assert out["features"]["method_redact"] == 1.0 and out["features"]["epsilon"] is None
    assert out["privacy"]["attack_success"] is None      # no d_X noise to attack


def test_assess_dx_without_epsilon_is_a_clear_error(fakes, capsys):
    doc, _ = fakes
    assert main(["assess", str(doc), "--method", "dx"]) == 2
    err = capsys.readouterr().err
    assert "--epsilon" in err and "Traceback" not in err


def test_recommend_send_and_keep_local(fakes, capsys):
    doc, state = fakes
    assert main(["recommend", str(doc), "--method", "dx", "--min-utility", "0.6",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "send" and out["epsilon"] >= 55
    assert out["predicted_utility"] >= 0.6 and out["local_answer"] is None
    # the search reads the instant curve the window draws, not the local model's check
    assert out["refined"] is False and out["slm_calls"] == 0
    state["fast_offset"] = -0.5
    assert main(["recommend", str(doc), "--method", "dx", "--min-utility", "0.9",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "keep_local" and out["epsilon"] is None
    # the whole local answer, as `send --keep-local` gives it (not the assessor's first lines)
    assert out["local_answer"] == " ".join(DOC.split()[:12])
    assert ("summarize", DOC) in state["slm"].calls and out["local_answer_notes"] == []


def test_recommend_judges_a_policy_without_d_x(fakes, capsys):
    doc, state = fakes
    assert main(["recommend", str(doc), "--policy", "everything", "--min-utility", "-1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "send" and out["epsilon"] is None
    assert out["policy"]["name"] == "everything" and out["sanitized_text"]
    state["offset"] = -0.5
    assert main(["recommend", str(doc), "--policy", "everything", "--min-utility", "0.9",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "keep_local" and out["local_answer"]
    assert main(["recommend", str(doc), "--policy", "everything", "--min-utility", "0.9"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("keep local:") and " ".join(DOC.split()[:12]) in said


def test_recommend_rejects_impossible_threshold(fakes, capsys):
    doc, _ = fakes
    assert main(["recommend", str(doc), "--min-utility", "3"]) == 2
    assert "between -1 and 1" in capsys.readouterr().err


def test_assess_says_what_the_number_means(fakes, capsys, monkeypatch):
    """With the shipped regressor: band, unsanitized expectation, kept share and drivers,
    in --json and in the human output (the same words)."""
    from preflight.app.services import Services
    from preflight.core.utility.predictor import UtilityPredictor

    shipped = UtilityPredictor.load(prefer_user=False)
    monkeypatch.setattr(Services, "assessor", lambda self, task=None: _REAL_ASSESSOR(
        FakeSLM(), FakeEmbedder(), shipped))
    doc, _ = fakes
    assert main(["assess", str(doc), "--method", "dx", "--epsilon", "30", "--fast",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    band = out["interval"]
    assert band["level"] == 0.8 and band["low"] <= out["predicted"] <= band["high"]
    assert out["predicted"] == out["predicted_utility_fast"]
    assert out["unsanitized_expected"] is not None
    assert out["kept_share"] == pytest.approx(out["predicted"] / out["unsanitized_expected"],
                                              abs=0.01)
    assert out["drivers"] and all({"feature", "effect", "text"} <= set(d)
                                  for d in out["drivers"])
    assert main(["assess", str(doc), "--method", "dx", "--epsilon", "30", "--fast"]) == 0
    human = capsys.readouterr().out
    assert "80% interval" in human and out["drivers"][0]["text"] in human
    assert f"expected {out['unsanitized_expected']:.2f}" in human


def test_assess_reads_the_instant_number_from_the_monotone_curve(fakes, capsys, monkeypatch):
    """A raw instant prediction that dips at one ε (as the regressor's did between ε 55
    and 91) is reported on the document's non-decreasing curve: `assess` at a larger ε
    never says less."""
    from dataclasses import replace

    real_fast = _REAL_ASSESSOR.fast

    def zigzag(self, original, sanitized, spans, **kw):
        a = real_fast(self, original, sanitized, spans, **kw)
        eps = sanitized.epsilon
        return replace(a, predicted_fast=0.05 if eps == 50 else min(1.0, eps / 200))

    monkeypatch.setattr(_REAL_ASSESSOR, "fast", zigzag)
    doc, _ = fakes
    got = {}
    for eps in ("40", "50", "60"):
        assert main(["assess", str(doc), "--method", "dx", "--epsilon", eps, "--fast",
                     "--json"]) == 0
        got[eps] = json.loads(capsys.readouterr().out)
    assert got["50"]["predicted_utility_fast_raw"] == 0.05
    values = [got[e]["predicted_utility_fast"] for e in ("40", "50", "60")]
    assert values == sorted(values) and values[1] > 0.05
    assert main(["assess", str(doc), "--method", "dx", "--epsilon", "50", "--fast"]) == 0
    assert "the raw estimate is 0.050" in capsys.readouterr().out
