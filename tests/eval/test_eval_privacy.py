"""The privacy–utility evaluation: one attack run gives the curve, results are cached per
(document, policy, ε) so a rerun calls nothing heavy, and the table averages documents
with their standard error. The heavy models are fakes with the real signatures."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

from preflight.core.privacy.dx_attack import AttackPoint, DxAttack, DxAttackResult
from preflight.core.privacy.reconstruct import ReconstructionAttack
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy_apply import PolicyMechanism, PolicyPrepared
from preflight.core.types import Category, Change, DxReport, SanitizedText, SanitizeReport, Span
from preflight.core.utility.assess import UtilityAssessor
from preflight_eval.eval_privacy import (Evaluator, ResultCache, aggregate, epsilon_grid,
                                         finding, render)

TEXT = "Dear Anna Berg, your account 12345678 is closed."
SPANS = [Span(5, 14, "PERSON", Category.DIRECT_IDENTIFIER, 1.0, "ground truth", "test")]


class FakePrepared:
    def __init__(self, quality: float) -> None:
        self.quality, self.dx_part = quality, object()

    def at(self, epsilon: float) -> SanitizedText:
        # the name swapped for another at every ε (a d_X token change)
        out = TEXT.replace("Anna", "Hanna")
        return SanitizedText(out, "dx-all", (Change(5, 10, 5, 9, "TOKEN", "Anna", "Hanna"),),
                             SanitizeReport(dx=DxReport(epsilon)))


class FakeMechanism:
    def __init__(self, quality: float, calls: list) -> None:
        self.quality, self.calls = quality, calls

    def prepare(self, text: str, spans, params: SanitizeParams) -> FakePrepared:
        self.calls.append(("prepare", params.seed))
        return FakePrepared(self.quality)


class FakeAttack:
    """Success grows with ε; the optimal attack is ``edge`` above identity."""

    def __init__(self, edge: float, calls: list) -> None:
        self.edge, self.calls = edge, calls

    def run(self, prepared, epsilon=None, grid=None, spans=None, cancel=None,
            max_tokens=None) -> DxAttackResult:
        self.calls.append(("attack", tuple(grid)))
        pts = tuple(AttackPoint(e, min(1.0, e / 100 + self.edge), e / 200, e / 100,
                                e / 100 - 0.01, 0.005, 0.0) for e in grid)
        p = pts[0]
        return DxAttackResult(p.epsilon, p.success, p.success_pii, p.identity, p.nearest,
                              p.mc_error, 0.0, 0.0, pts, 40, 40, 3, 16, 8, 8, "", 0.1)


@dataclass
class FakeAssessment:
    predicted_fast: float


class FakeAssessor:
    def fast(self, original, sanitized, spans=(), correct=False, explain=True):
        return FakeAssessment(sanitized.epsilon / 1000)


class EchoSlm:
    """A LanguageModel whose 'reconstruction' is the original text (a perfect attacker)."""

    def __init__(self, calls: list) -> None:
        self.calls = calls

    def run(self, task, text, on_token=None, cancel=None) -> str:
        self.calls.append(("slm", text))
        return TEXT

    def perplexity(self, text: str) -> float:
        return 1.0


def _params(f) -> list[str]:
    return list(inspect.signature(f).parameters)


def test_fakes_match_the_real_signatures():
    assert _params(FakeAttack.run) == _params(DxAttack.run)
    assert _params(FakeAssessor.fast) == _params(UtilityAssessor.fast)
    assert _params(FakeMechanism.prepare) == _params(PolicyMechanism.prepare)
    assert _params(FakePrepared.at) == _params(PolicyPrepared.at)


def _evaluator(tmp_path, calls, edge=0.05, slm=True):
    return Evaluator(mechanism=lambda policy: FakeMechanism(0.5, calls),
                     attack=FakeAttack(edge, calls), assessor=FakeAssessor(),
                     reconstruct=ReconstructionAttack(EchoSlm(calls)) if slm else None,
                     cache=ResultCache(tmp_path, {"seed": 7}), seed=7)


def test_one_attack_run_gives_the_curve_and_the_cache_resumes(tmp_path):
    grid = epsilon_grid(10.0, 160.0, 5)
    assert grid == (10.0, 20.0, 40.0, 80.0, 160.0)
    calls: list = []
    rows = _evaluator(tmp_path, calls).document("d1", TEXT, SPANS, "dx-all", grid,
                                                (20.0, 80.0))
    assert [c[0] for c in calls].count("attack") == 1
    assert [c[0] for c in calls].count("slm") == 2
    assert ("prepare", 7) in calls
    assert [r["epsilon"] for r in rows] == list(grid)
    assert rows[2]["optimal"] == 0.45 and rows[2]["identity"] == 0.4
    assert rows[2]["utility"] == 0.04
    # the SLM attack runs only at the chosen ε; the echo recovers the ground-truth name
    assert "slm_values" not in rows[0]
    assert rows[1]["slm_values"] == 1.0 and rows[1]["slm_total"] == 1
    assert rows[1]["slm_words"] == 1.0
    table = render(aggregate(rows), finding(rows))
    assert "| dx-all | 20 |" in table and "| 1.000 (1/1, 1 docs) | 1.000 (1/1) |" in table
    # a second run reads every result from the cache: nothing heavy is called
    again: list = []
    rows2 = _evaluator(tmp_path, again).document("d1", TEXT, SPANS, "dx-all", grid,
                                                 (20.0, 80.0))
    assert again == [] and rows2 == rows
    # another setting is another cache: the work runs again
    other: list = []
    ev = _evaluator(tmp_path, other)
    ev.cache = ResultCache(tmp_path, {"seed": 8})
    ev.document("d1", TEXT, SPANS, "dx-all", grid, (20.0,))
    assert [c[0] for c in other].count("attack") == 1


def test_table_means_and_standard_errors_over_documents(tmp_path):
    calls: list = []
    grid = (10.0, 40.0)
    rows = []
    for doc, edge in (("a", 0.02), ("b", 0.06)):
        ev = _evaluator(tmp_path, calls, edge=edge, slm=False)
        rows += ev.document(doc, TEXT, SPANS, "dx-all", grid, ())
    table = aggregate(rows)
    assert [(t["policy"], t["epsilon"], t["docs"]) for t in table] == [
        ("dx-all", 10.0, 2), ("dx-all", 40.0, 2)]
    mean, se, n = table[1]["optimal"]
    assert n == 2 and math.isclose(mean, 0.44) and math.isclose(se, 0.02)
    assert table[0]["identity"][1] == 0.0            # same identity in both documents
    assert table[0]["slm_values"] is None             # no SLM: an empty cell
    found = finding(rows)
    assert found["dx-all"]["reproduced"]
    assert math.isclose(found["dx-all"]["optimal"], statistics_mean([0.12, 0.42, 0.16, 0.46]))
    text = render(table, found)
    assert "| dx-all | 40 | 0.440 ± 0.020 |" in text
    assert "for dx-all: reproduced" in text


def test_the_finding_fails_when_the_optimal_attack_does_not_beat_identity(tmp_path):
    calls: list = []
    rows = _evaluator(tmp_path, calls, edge=-0.02, slm=False).document(
        "a", TEXT, SPANS, "identifiers-dx", (10.0, 40.0), ())
    found = finding(rows)
    assert not found["identifiers-dx"]["reproduced"]
    assert "NOT reproduced" in render(aggregate(rows), found)


def statistics_mean(xs):
    return sum(xs) / len(xs)
