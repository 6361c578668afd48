"""The split study reads the 15-point rule on the committed test split and on redrawn
splits of the same documents, and scores every document out of fold."""

from __future__ import annotations

import math
import random

from preflight_eval import split_study


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
