"""The "Find best ε" study: both widenings on one preparation, refinements shared."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "utility"))

from _utility_fakes import DOC, FakeDx, FakeEmbedder, FakeSLM, LinearPredictor  # noqa: E402
from preflight.core.utility.assess import UtilityAssessor  # noqa: E402
from preflight_eval.search_study import SharedRefinements, study_document, summary  # noqa: E402


class _NoDetector:
    def detect(self, text):
        return []


class _Services:
    def detector(self):
        return _NoDetector()

    def __init__(self):
        self.policies: list[str] = []

    def dx(self):
        return FakeDx()

    def mechanism(self, name):
        self.policies.append(name)
        return FakeDx()


class _Doc:
    doc_id, kind, text = "memo:0001", "business", DOC


def _assessor(offset: float) -> UtilityAssessor:
    return UtilityAssessor(FakeSLM(), FakeEmbedder(), LinearPredictor(offset))


def test_a_refinement_shared_by_both_searches_runs_once():
    inner = _assessor(0.0)
    shared = SharedRefinements(inner)
    prepared = FakeDx().prepare(DOC, [], None)
    first = shared.refine(DOC, prepared.at(60.0))
    calls = inner.slm_calls
    assert shared.refine(DOC, prepared.at(60.0)) is first and inner.slm_calls == calls
    assert shared.refine(DOC, prepared.at(80.0)) is not first and inner.slm_calls > calls
    assert len(shared.seconds) == 2


def test_the_study_measures_both_widenings_against_the_refined_truth():
    row = study_document(_Doc(), _Services(), _assessor(-0.15), 0.6, truth_points=6)
    shift, bisect = row["shift"], row["bisect"]
    assert shift["decision"] == bisect["decision"] == "send"
    assert shift["refinements"] == 2 and bisect["refinements"] == 3
    assert shift["refined_at"][0] == bisect["refined_at"][0]     # the same first candidate
    # a constant gap: bisection lands on the refined crossing (ε ≈ 75) in three checks,
    # the shift in two, past it by the margin
    assert 75.0 <= bisect["epsilon"] < shift["epsilon"] <= 86.0
    # the grid's refined truth: utility = ε/100 − 0.15 passes 0.6 from ε = 75 on
    assert len(row["truth"]) == 6 and row["first_passing_grid_epsilon"] >= 75.0

    out = summary([row, row])
    assert out["shift"]["refinements_histogram"][2] == 2
    assert out["bisect"]["refinements_histogram"][3] == 2
    assert out["same_decision"] == 2 and out["first_candidate_passed"] == 0
    assert out["truth"]["documents_with_a_passing_grid_point"] == 2


def test_a_study_names_its_documents_again_from_its_json_or_a_list(tmp_path):
    import json

    from preflight_eval.search_study import _ids

    run = tmp_path / "run.json"
    run.write_text(json.dumps({"documents": [{"doc_id": "memo:0001"},
                                             {"doc_id": "spam:easy-ham-1/00353"}]}))
    assert _ids(str(run)) == ["memo:0001", "spam:easy-ham-1/00353"]
    assert _ids(" memo:0001, aclsum:H05-1023 ") == ["memo:0001", "aclsum:H05-1023"]
    assert _ids(None) is None


def test_a_policy_is_prepared_as_the_window_prepares_it():
    services = _Services()
    row = study_document(_Doc(), services, _assessor(0.0), 0.6, truth_points=0,
                         policy="identifiers-dx")
    assert services.policies == ["identifiers-dx"]
    assert row["shift"]["refinements"] == row["bisect"]["refinements"] == 1
    assert "truth" not in row
