"""Add the document-form features to rows written before they existed.

``letter_share`` and ``field_line_share`` (:func:`preflight.core.utility.features.
document_form`) depend on the original document alone, so a row written before them
needs no SLM call and no new send to get them: they are computed from the corpus text of
its ``doc_id``, exactly as ``fast_features`` computes them in the product. A row that
already has them, or whose document is not in the corpus, is left as it is (and
counted). The file is rewritten in the same order (``--rows N`` snapshots keep meaning
the same rows) through a temporary file, so an interrupted run leaves it intact:

    python -m preflight_eval.utility_data.backfill data/utility/features-*.jsonl.gz \\
        data/utility/e2e-cloud_qwen15.jsonl.gz data/utility/flow-sends-cloud_standin.jsonl.gz

Never run it on a file a feature pass is still appending to.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any, Mapping

from preflight.core.utility.features import DOCUMENT_FORM_FEATURES, document_form
from preflight_eval.utility_data.rows import rewrite_rows
from preflight_eval.utility_data.shards import read_rows

log = logging.getLogger("preflight_eval.utility_data.backfill")


def with_document_form(row: dict[str, Any], texts: Mapping[str, str]) -> str:
    """Fill ``row["features"]`` in place; returns what happened: "added", "present" or
    "no document"."""
    feats = row.get("features")
    if not isinstance(feats, dict) or all(n in feats for n in DOCUMENT_FORM_FEATURES):
        return "present"
    text = texts.get(str(row.get("doc_id")))
    if text is None:
        return "no document"
    for name, value in zip(DOCUMENT_FORM_FEATURES, document_form(text)):
        feats[name] = None if value != value else round(value, 6)   # NaN as JSON null
    return "added"


def backfill(path: Path, texts: Mapping[str, str]) -> dict[str, int]:
    path = Path(path)
    counts = {"added": 0, "present": 0, "no document": 0}
    rows = read_rows(path)
    for row in rows:
        counts[with_document_form(row, texts)] += 1
    if counts["added"]:
        rewrite_rows(path, rows)
    return counts


def corpus_texts() -> dict[str, str]:
    from preflight_eval.utility_data.corpus import build_corpus

    return {d.doc_id: d.text for d in build_corpus()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="row files with doc_id and a features dict")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    texts = corpus_texts()
    for f in args.files:
        log.info("%s: %s", f, backfill(Path(f), texts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
