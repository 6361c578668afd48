"""retarget: the faithful realized score as the target, D of the restored local answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from preflight.core.sanitize.vault import PLACEHOLDER, Vault, VaultEntry
from preflight.core.types import SanitizedText
from preflight.core.utility.answer_check import check_answer, faithful_utility
from preflight_eval.utility_data import retarget
from preflight_eval.utility_data.shards import ShardWriter, read_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "utility"))
from _utility_fakes import FakeEmbedder  # noqa: E402

DOC = ("Maria Lopez signed the supply contract in Lisbon on 4 March 2024; the first "
       "instalment of 12,000 euros is due in May.")
PAYLOAD = DOC.replace("Maria Lopez", "<PERSON_1>")


class NoNames:
    def detect(self, text):
        return []


class PlaceholderKind:
    name = "placeholder"

    def sanitize(self, ctx, setting):
        vault = Vault()
        vault.add(VaultEntry("<PERSON_1>", "PERSON", "Maria Lopez", PLACEHOLDER))
        return SanitizedText(PAYLOAD, "placeholder"), vault


def _rows(tmp_path):
    setting = {"kind": "placeholder", "method": "placeholder", "epsilon": None, "seed": 1,
               "corrected": False}
    dx = dict(setting, kind="dx", method="dx", epsilon=30.0)
    feats = {"sim_slm_original": 0.5, "sim_slm_sanitized": 0.1, "slm_d_minus_c": -0.4}
    features = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    w = ShardWriter(features)
    w.append({"doc_id": "d1", "key": "p", "setting": setting, "features": feats,
              "target": 0.8, "target_original": 0.9, "split": "train",
              "slm_answer": "<PERSON_1> signed the supply contract in Lisbon."})
    w.append({"doc_id": "d1", "key": "x", "setting": dx, "features": feats,
              "target": 0.7, "target_original": 0.9, "split": "train",
              "slm_answer": "A contract was signed."})
    cloud = [{"doc_id": "d1", "key": "o", "setting": {"kind": "original"}, "text": DOC,
              "answer": "Maria Lopez signed a contract in Lisbon.", "payload": DOC},
             {"doc_id": "d1", "key": "p", "setting": setting, "payload": PAYLOAD,
              "answer": "Maria Lopez signed the contract on 9 June 2023 in Lisbon."},
             {"doc_id": "d1", "key": "x", "setting": dx, "payload": "noise",
              "answer": "A contract of 12,000 euros was signed in March 2024."}]
    return features, cloud


def test_the_file_is_rewritten_with_the_faithful_target_and_restored_d(tmp_path, monkeypatch):
    monkeypatch.setattr(retarget, "setting_kinds", lambda: {"placeholder": PlaceholderKind()})
    features, cloud = _rows(tmp_path)
    emb = FakeEmbedder()
    job = retarget.Retarget(features, cloud, NoNames(), emb)
    assert job.run()
    placeholder, dx = read_rows(features)
    # the invented date lowers the placeholder row's target; the cosine stays beside it
    want = faithful_utility(0.8, check_answer(DOC, cloud[1]["answer"], payload=PAYLOAD))
    assert placeholder["target"] == pytest.approx(want) and want < 0.8
    assert placeholder["target_cosine"] == 0.8 and placeholder["unsupported_facts"] >= 1
    assert dx["target"] == pytest.approx(0.7) and dx["target_cosine"] == 0.7
    # D: the local answer with Maria Lopez put back, as the cloud's answer was
    assert placeholder["d_restored"] and not dx["d_restored"]
    d = emb.similarity(DOC, "Maria Lopez signed the supply contract in Lisbon.")
    assert placeholder["features"]["sim_slm_sanitized"] == pytest.approx(d, abs=1e-5)
    assert placeholder["features"]["slm_d_minus_c"] == pytest.approx(d - 0.5, abs=1e-5)
    assert placeholder["sim_slm_sanitized_unrestored"] == 0.1
    assert dx["features"]["sim_slm_sanitized"] == 0.1
    assert not job.partials()
    # a second pass reads the kept cosine and the stored answer: the same bytes
    before = features.read_bytes()
    assert retarget.Retarget(features, cloud, NoNames(), emb).run()
    assert features.read_bytes() == before


def test_the_frozen_test_set_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        retarget.main([str(tmp_path / "frozen-cloud_qwen15.jsonl.gz")])


def test_a_send_held_twice_keeps_both_rows_each_with_the_target(tmp_path, monkeypatch):
    # a corrected d_X row redone with the payload as the repair: two rows, one send
    monkeypatch.setattr(retarget, "setting_kinds", lambda: {"placeholder": PlaceholderKind()})
    features, cloud = _rows(tmp_path)
    rows = read_rows(features)
    again = dict(rows[1], repair_from="payload", seconds=3.0)
    w = ShardWriter(features)
    w.append(again)
    assert retarget.Retarget(features, cloud, NoNames(), FakeEmbedder()).run()
    out = read_rows(features)
    assert len(out) == 3
    assert out[2]["repair_from"] == "payload" and out[2]["seconds"] == 3.0
    assert out[2]["target"] == out[1]["target"] and "repair_from" not in out[1]


def test_targets_from_another_slms_file_are_copied_only_for_the_same_cosine(tmp_path,
                                                                             monkeypatch):
    # --targets-from: the other SLM's rewritten file of the same sends gives the checked
    # facts where its cosine is this row's; a row whose cosine differs is checked again
    monkeypatch.setattr(retarget, "setting_kinds", lambda: {"placeholder": PlaceholderKind()})
    checked = []
    from preflight_eval.utility_data import features as feature_pass

    real_review = feature_pass.review_answer     # the one check (features.faithful_fields)

    def review(text, answer, *a, **kw):
        checked.append(answer)
        return real_review(text, answer, *a, **kw)

    monkeypatch.setattr(feature_pass, "review_answer", review)
    features, cloud = _rows(tmp_path)
    # the donor's counts differ from what the check finds, so a copy is visible
    same = {"doc_id": "d1", "key": "p", "target_cosine": 0.8 + 4e-7, "target": 0.1,
            "supported_facts": 2, "unsupported_facts": 3, "target_original_cosine": 0.9,
            "target_original": 0.45}
    other = {"doc_id": "d1", "key": "x", "target_cosine": 0.75, "target": 0.75,
             "supported_facts": 9, "unsupported_facts": 0, "target_original_cosine": 0.9,
             "target_original": 0.45}
    emb = FakeEmbedder()
    job = retarget.Retarget(features, cloud, NoNames(), emb, donors=[same, other])
    assert job.run()
    placeholder, dx = read_rows(features)
    # copied: the donor's facts on this row's own cosine, no check of that answer
    assert placeholder["target_cosine"] == 0.8
    assert (placeholder["supported_facts"], placeholder["unsupported_facts"]) == (2, 3)
    assert placeholder["target"] == pytest.approx(0.8 * 3 / (3 + 4 * 3))
    assert placeholder["target_original"] == 0.45 and job.copied == 1
    assert cloud[1]["answer"] not in checked and cloud[0]["answer"] not in checked
    # not copied: the cosines differ by 0.05, so the answer was checked
    assert cloud[2]["answer"] in checked
    want = faithful_utility(0.7, check_answer(DOC, cloud[2]["answer"], payload="noise"))
    assert dx["target"] == pytest.approx(want) and dx["supported_facts"] != 9
    # D is recomputed from this file's own local answer all the same
    d = emb.similarity(DOC, "Maria Lopez signed the supply contract in Lisbon.")
    assert placeholder["d_restored"]
    assert placeholder["features"]["sim_slm_sanitized"] == pytest.approx(d, abs=1e-5)


def test_targets_from_a_file_of_another_cloud_role_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        retarget.main([str(tmp_path / "features-cloud_a-slm.jsonl.gz"), "--targets-from",
                       str(tmp_path / "features-cloud_b-slm_qwen05.jsonl.gz")])
    assert "same cloud role" in capsys.readouterr().err
