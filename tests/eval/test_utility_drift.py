"""The drift report between two feature passes over the same rows."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "utility"))

from _utility_fakes import LinearPredictor  # noqa: E402
from preflight_eval.utility_data.drift import _index, compare, main  # noqa: E402
from preflight_eval.utility_data.shards import ShardWriter  # noqa: E402


def _row(doc: str, key: str, changed: float, sim: float, answer: str = "a summary") -> dict:
    return {"doc_id": doc, "key": key, "setting": {"corrected": False},
            "slm_answer": answer,
            "features": {"frac_tokens_changed": changed, "sim_sanitized": sim,
                         "sim_slm_sanitized": 0.5, "epsilon": None}}


def _write(path: Path, rows: list[dict]) -> Path:
    writer = ShardWriter(path)
    for row in rows:
        writer.append(row)
    return path


def test_compare_reports_what_moved_and_what_did_not():
    old = {("d1", "k1"): _row("d1", "k1", 0.2, 0.800000),
           ("d1", "k2"): _row("d1", "k2", 0.4, 0.700000),
           ("d1", "k3"): _row("d1", "k3", 0.3, 0.5),
           ("d2", "k1"): _row("d2", "k1", 0.1, 0.9)}              # only in the old pass
    repaired = _row("d1", "k3", 0.9, 0.1)
    repaired["setting"]["corrected"], repaired["repair_matches_payload"] = True, False
    new = {("d1", "k1"): _row("d1", "k1", 0.2, 0.800001),
           ("d1", "k2"): _row("d1", "k2", 0.45, 0.700000, answer="another summary"),
           ("d1", "k3"): repaired}                  # read another repair: not compared
    out = compare(new, old, LinearPredictor(), min_utility=0.58)
    assert out["rows"] == 2
    assert out["corrected_rows_repaired_otherwise"] == 1
    assert out["same_slm_answers"] == 1
    assert abs(out["features"]["sim_sanitized"]["max"] - 1e-6) < 1e-9
    assert abs(out["features"]["frac_tokens_changed"]["max"] - 0.05) < 1e-9
    assert "sim_slm_sanitized" in out["unchanged_features"]
    assert "epsilon" not in out["unchanged_features"]          # missing values are skipped
    # 1 - 0.4 = 0.60 passes 0.58, 1 - 0.45 = 0.55 does not: one row changes side
    assert abs(out["refined_prediction"]["max"] - 0.05) < 1e-9
    assert out["refined_prediction"]["rows_changing_side"] == 1


def test_cli_reads_two_files_and_says_when_nothing_is_shared(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl.gz", [_row("d1", "k1", 0.2, 0.8)])
    same = _write(tmp_path / "same.jsonl.gz", [_row("d1", "k1", 0.2, 0.8)])
    other = _write(tmp_path / "other.jsonl.gz", [_row("d9", "k1", 0.2, 0.8)])
    assert len(_index(old)) == 1
    assert main([str(same), "--against", str(old), "--no-predictor"]) == 0
    assert '"same_slm_answers": 1' in capsys.readouterr().out
    assert main([str(other), "--against", str(old), "--no-predictor"]) == 1
    assert "no row in common" in capsys.readouterr().err
