"""The end-to-end utility check: held-out documents only, and a report that scores the
stored features with the shipped bundle against the other documents' mean."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight.core.utility.features import FAST_FEATURES
from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path
from preflight_eval import e2e_utility
from preflight_eval.utility_data.corpus import (
    DATA_DIR, E2E_RESERVED, SEED, Document, held_out_documents, split_of,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows


def test_only_test_split_documents_are_sent_kinds_interleaved() -> None:
    docs = [Document(f"{kind}:{i:04d}", kind, kind, "text") for i in range(60)
            for kind in ("aclsum", "email", "business")]
    chosen = held_out_documents(docs, 6)
    assert len(chosen) == 6
    assert all(split_of(d.doc_id, SEED) == "test" for d in chosen)
    assert {d.kind for d in chosen} == {"aclsum", "email", "business"}
    assert chosen[0].doc_id == next(d.doc_id for d in reversed(docs)   # from the end
                                    if split_of(d.doc_id, SEED) == "test"
                                    and d.kind == "aclsum")


def _features(changed: float) -> dict[str, float]:
    import math

    f = {n: 0.0 for n in FAST_FEATURES}
    f.update(epsilon=60.0, log_epsilon=math.log(60.0), method_dx=1.0, length_ratio=1.0,
             frac_tokens_changed=changed, frac_chars_changed=changed, dx_share=1.0,
             log_words=math.log(200))
    return f


def test_report_scores_stored_features_and_the_other_documents_mean(tmp_path: Path) -> None:
    predictor = UtilityPredictor.load(shipped_bundle_path(), prefer_user=False)
    path = tmp_path / "e2e-x.jsonl.gz"
    writer = ShardWriter(path)
    for d in range(3):
        for setting, changed, realized in (("original", 0.0, 0.9),
                                           ("d_X whole text, low ε", 0.9, 0.1 + d / 10),
                                           ("d_X whole text, high ε", 0.05, 0.8)):
            feats = _features(changed)
            writer.append({"doc_id": f"doc{d}", "setting": setting, "features": feats,
                           "bundle": str(predictor.bundle.get("created")),
                           "slm_role": predictor.slm_role,
                           "predicted_full": predictor.predict(feats), "realized": realized})
    # a send whose features another SLM computed is left out, and counted
    other = "slm" if predictor.slm_role != "slm" else "slm_qwen05"
    writer.append({"doc_id": "doc9", "setting": "pseudonym", "features": _features(0.3),
                   "bundle": "x", "slm_role": other, "predicted_full": 0.5, "realized": 0.5})
    rep = e2e_utility.report(path, predictor)
    assert rep["rows"] == 6 and rep["documents"] == 3          # the original is no setting
    assert rep["other_slm"] == 1 and rep["slm_role"] == predictor.slm_role
    assert "1 sends of another SLM left out" in e2e_utility.format_report(rep)
    assert e2e_utility.stored_slm_role(path) == predictor.slm_role
    assert rep["assessed_with_this_bundle"] == 6 and rep["printed_differs"] == 0
    ref = rep["models"]["other documents' mean per setting (reference)"]
    # doc0's low-ε row is predicted by the mean of doc1 and doc2 (0.25 against 0.1), ...
    assert ref["n"] == 6 and ref["rmse"] == pytest.approx(((0.15**2 + 0.0 + 0.15**2) / 6) ** 0.5, abs=1e-4)
    assert rep["by_setting"]["d_X whole text, high ε"]["realized"] == pytest.approx(0.8)
    base = rep["models"][e2e_utility.BASELINE]
    assert base["n"] == 6                  # the acceptance rule's reference, same sends
    assert base != rep["models"][e2e_utility.FULL]
    lo, hi = rep["reduction_ci"]
    gap = base["failed_pct"] - rep["models"][e2e_utility.FULL]["failed_pct"]
    assert lo <= gap <= hi
    assert rep["in_data_set"] == 0
    assert "held-out documents (0 of them in the data set's rows" in \
        e2e_utility.format_report(rep)
    # a sent document that the data set also holds is counted, so it cannot pass unseen
    leaked = e2e_utility.report(path, predictor, frozenset({"doc1", "other"}))
    assert leaked["in_data_set"] == 1
    assert "(1 of them in the data set's rows" in e2e_utility.format_report(leaked)


def test_committed_end_to_end_documents_are_not_in_the_data_set() -> None:
    """The end-to-end sends are held out: none of their documents has a data-set row."""
    sent = {r["doc_id"] for r in read_rows(DATA_DIR / "e2e-cloud_qwen15.jsonl.gz")}
    assert len(sent) >= 10
    assert not sent & {r["doc_id"] for r in read_rows(DATA_DIR / "cloud_qwen15.jsonl.gz")}


def test_report_without_sends_says_what_to_run(tmp_path: Path) -> None:
    predictor = UtilityPredictor.load(shipped_bundle_path(), prefer_user=False)
    assert e2e_utility.report(tmp_path / "none.jsonl.gz", predictor) == {"rows": 0}
    assert "run without --report" in e2e_utility.format_report({"rows": 0})


def test_refeature_recomputes_features_and_keeps_the_sends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a change to how features are computed, the stored sends get today's features
    and predictions; their answers and realized E stay; a payload today's code no longer
    makes keeps its old features and is counted."""
    path = tmp_path / "e2e-x.jsonl.gz"
    writer = ShardWriter(path)
    for setting, payload in (("original", "doc text"), ("pseudonym", "same payload"),
                             ("d_X whole text, low ε", "old payload")):
        writer.append({"doc_id": "doc0", "setting": setting, "features": _features(0.5),
                       "predicted_full": 0.5, "payload": payload, "answer": "a",
                       "realized": 0.7})

    class Detector:
        def detect(self, text: str) -> list:
            return []

    class Services:
        def detector(self) -> Detector:
            return Detector()

    e2e = e2e_utility.EndToEnd.__new__(e2e_utility.EndToEnd)
    e2e.services, e2e.writer = Services(), ShardWriter(path)

    class Assessor:
        predictor = UtilityPredictor.load(shipped_bundle_path(), prefer_user=False)

    e2e.assessor = Assessor()

    def assess(doc, spans, name, row, prepared_by):  # noqa: ANN001, ANN202
        row.update(features=_features(0.1), predicted_full=0.9,
                   payload="same payload" if name == "pseudonym" else "new payload")
        return None, None

    monkeypatch.setattr(e2e, "_assess", assess)
    counts = e2e.refeature([Document("doc0", "email", "email", "doc text")])
    assert counts == {"recomputed": 1, "payload differs": 1, "not re-sanitized": 0}
    rows = {r["setting"]: r for r in read_rows(path)}
    assert rows["pseudonym"]["predicted_full"] == 0.9 and "refeatured" in rows["pseudonym"]
    assert rows["pseudonym"]["realized"] == 0.7 and rows["pseudonym"]["answer"] == "a"
    assert rows["d_X whole text, low ε"]["predicted_full"] == 0.5     # kept, counted
    assert rows["original"]["payload"] == "doc text"
    assert not (tmp_path / "e2e-x.jsonl.gz.new").exists()


def test_more_documents_than_the_generator_leaves_unseen_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        e2e_utility.main(["--docs", str(E2E_RESERVED + 1), "--report"])
    assert stop.value.code == 2
    assert "E2E_RESERVED" in capsys.readouterr().err
