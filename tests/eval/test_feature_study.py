"""The document-form features: chosen out of fold without the test documents, and added
to rows written before them from the document text alone."""

from __future__ import annotations

import math
import random

from preflight.core.utility.features import DOCUMENT_FORM_FEATURES, document_form
from preflight_eval import feature_study
from preflight_eval.utility_data import backfill
from preflight_eval.utility_data.shards import ShardWriter, read_rows

PROSE = "We measure how much of an argument survives when its names are replaced. " * 3
FORM = "From: a@b.c\nTo: team\nSubject: Order 4411\nDate: 2025-03-02\n\nSee 3 x 12.50 EUR.\n"


def _rows(docs: int = 60, seed: int = 3) -> list[dict]:
    """d_X rows whose E starts from a level set by the document's form (prose high, forms
    low), which ε and the change share cannot see; every fourth document is a test
    document whose E is the opposite, so a study that read them would be misled."""
    rng = random.Random(seed)
    rows = []
    for d in range(docs):
        prose = d % 2 == 0
        test = d % 4 == 1
        letters, fields = document_form(PROSE if prose else FORM)
        level = 0.9 if prose != test else 0.6
        for eps in (20.0, 60.0, 150.0, 250.0):
            changed = max(0.0, 1.0 - eps / 300)
            rows.append({"group": f"doc{d}", "split": "test" if test else "train",
                         "doc_kind": "aclsum" if prose else "email", "variant": "plain",
                         "epsilon": eps, "log_epsilon": math.log(eps), "method_dx": 1.0,
                         "frac_tokens_changed": changed, "frac_chars_changed": changed,
                         "letter_share": letters, "field_line_share": fields,
                         "log_words": math.log1p(120), "pii_total": 2.0,
                         "target": level - 0.4 * changed + rng.gauss(0, 0.02),
                         "target_original": level + rng.gauss(0, 0.02)})
    return rows


def test_the_document_form_is_worth_its_place_and_the_test_documents_are_not_read() -> None:
    result = feature_study.study(_rows(), seeds=1)
    assert result["rows"] == 45 * 4 and result["documents"] == 45     # 15 test docs left out
    for name in ("instant", "full", "unsanitized"):
        pair = result["models"][name]
        assert pair["with"]["failed"] < pair["without"]["failed"] - 20, name
    text = feature_study.format_study(result)
    assert "| full | with |" in text and "test split not read" in text


def test_backfill_adds_the_form_from_the_document_and_keeps_order(tmp_path) -> None:
    path = tmp_path / "rows.jsonl.gz"
    w = ShardWriter(path)
    w.append({"doc_id": "a", "key": "1", "features": {"epsilon": 5.0}})
    w.append({"doc_id": "gone", "key": "2", "features": {"epsilon": 6.0}})
    w.append({"doc_id": "b", "key": "3", "features": {"letter_share": 0.5,
                                                      "field_line_share": 0.25}})
    counts = backfill.backfill(path, {"a": FORM, "b": PROSE})
    assert counts == {"added": 1, "present": 1, "no document": 1}
    rows = read_rows(path)
    assert [r["key"] for r in rows] == ["1", "2", "3"]
    assert [rows[0]["features"][n] for n in DOCUMENT_FORM_FEATURES] == \
        [round(v, 6) for v in document_form(FORM)]
    assert "letter_share" not in rows[1]["features"]
    assert rows[2]["features"]["letter_share"] == 0.5               # never overwritten
    assert backfill.backfill(path, {"a": FORM})["added"] == 0       # idempotent
