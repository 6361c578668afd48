"""The split study reads the 15-point rule on the committed test split and on redrawn
splits of the same documents, and scores every document out of fold."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest

from preflight_eval import split_study

sys.path.insert(0, str(Path(__file__).parent))
from test_eval_utility import _write  # noqa: E402 - the same synthetic features file


def _rows(docs: int = 60, hard_test: bool = False, seed: int = 5) -> list[dict]:
    """Plain d_X rows whose E follows B (the document's fragility, which ε alone cannot
    know); every fourth document is a test document. ``hard_test``: the test documents'
    E no longer follows B, so the full model gains nothing over ε there."""
    rng = random.Random(seed)
    rows = []
    for d in range(docs):
        test = d % 4 == 0
        fragility = rng.random()
        for eps in (20.0, 60.0, 150.0):
            quality = min(1.0, max(0.0, 1.0 - fragility * 60 / eps))
            noise = rng.gauss(0, 0.02)
            target = 0.8 - 0.5 * (rng.random() if hard_test and test else fragility) * 60 / eps
            rows.append({"group": f"memo:{d:04d}", "split": "test" if test else "train",
                         "doc_kind": "business" if d % 2 else "email", "variant": "plain",
                         "epsilon": eps, "log_epsilon": math.log(eps), "method_dx": 1.0,
                         "sim_sanitized": quality, "target": target + noise})
    return rows


def test_a_typical_split_reads_like_the_redrawn_ones() -> None:
    result = split_study.redrawn(_rows(), splits=6)
    assert result["test_documents"] == 15 and result["documents"] == 60
    committed, mean = result["committed"], result["redrawn"]["mean"]
    assert committed["difference"] > 20 and mean["difference"] > 20   # B is worth much
    assert abs(committed["difference"] - mean["difference"]) < 20


def test_test_documents_unlike_the_rest_are_found_out_of_fold() -> None:
    rows = _rows(hard_test=True)
    result = split_study.redrawn(rows, splits=6)
    assert result["redrawn"]["as_low_as_committed"] <= 1
    groups = split_study.every_document(rows, seeds=1)["groups"]
    assert groups["test"]["all"]["rows"] == 45 and groups["other"]["all"]["rows"] == 135
    assert groups["test"]["all"]["difference"] < groups["other"]["all"]["difference"] - 15
    assert set(groups["other"]) == {"all", "business", "email"}
    text = split_study.format_study({"rows": len(rows), "redrawn": result,
                                     "documents": split_study.every_document(rows, 1)})
    assert "committed split" in text and "committed test documents" in text


def test_the_command_reads_a_features_file_and_writes_its_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "features-cloud_x-slm_y.jsonl.gz", docs=40)
    out = tmp_path / "study.json"
    assert split_study.main(["--data", str(tmp_path), "--cloud-role", "cloud_x", "--slm-role",
                             "slm_y", "--splits", "3", "--seeds", "1",
                             "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["redrawn"]["splits"] == 3 and result["rows"] > 0
    assert "committed split" in capsys.readouterr().out
