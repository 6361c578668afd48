"""The committed utility data set as regressor rows, split by family (by document before).

Reads ``data/utility/features-<cloud role>-<slm role>.jsonl.gz`` (written by
:mod:`.features` from the stand-in's answers of :mod:`.generate`) and turns each row into
the flat form the regressor reads: the feature names of
:mod:`preflight.core.utility.features`, plus ``target`` (E), ``target_original`` (E of the
unsanitized send of the same document), ``variant`` ("plain" / "corrected"), ``group``
(document id), ``split`` (from the committed ``split.json``, version 2: train / calibration
/ test by family; ``split_version=1`` gives the split by document of ``split-v1.json``,
which the bundles trained before it cite), ``family`` (the document's family, for folds
that keep a family together), ``method`` and ``kind`` (the setting kind: dx,
identifiers, placeholder, ...).

Rows are dropped, and counted, when they cannot describe what the stand-in read:
an ``error`` (the sanitization failed and nothing was sent), or features computed on a
re-created text that differs from the stored payload (rows of the feature pass before
session 4; since then such rows are computed on the stored payload, ``features_from``),
or features from SLM answers capped at another length than the product's
(``slm_answer_tokens``; rows without it were capped at 142 tokens), or, for a corrected
row, features of a grammar repair other than the payload (``repair_matches_payload``
false: another SLM's repair; since session 26 ``features --repair-from-payload`` computes
them on the payload and appends them to the same file).
d_X rows written before the word-boundary classes get no features at all (a mechanism
the product no longer ships: :func:`.features.old_dx_row`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS
from preflight_eval.utility_data.corpus import DATA_DIR, SEED, family_for, split_for, split_of
from preflight_eval.utility_data.features import interrupted, old_dx_row
from preflight_eval.utility_data.shards import ShardWriter, read_rows

# The cap on the SLM's answers of the feature rows written before it was recorded.
LEGACY_ANSWER_TOKENS = 142


@dataclass
class DataSet:
    cloud: str
    slm: str
    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    # "faithful" once ``retarget`` rewrote the file (target_cosine beside it), else "cosine"
    target: str = "cosine"

    @property
    def read(self) -> int:
        """Rows read from the file: kept and dropped."""
        return len(self.rows) + sum(self.dropped.values())

    def split(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["split"] == name]

    @property
    def documents(self) -> int:
        return len({r["group"] for r in self.rows})


def feature_files(data_dir: Path = DATA_DIR) -> list[tuple[str, str, Path]]:
    """(cloud role, slm role, path) of every committed features file but the frozen test
    set's (``features-frozen-*``), which no report, study or training reads."""
    out = []
    for path in sorted(Path(data_dir).glob("features-*.jsonl.gz")):
        if path.name.startswith("features-frozen-"):
            continue    # the frozen test set's: read once, by preflight_eval.read_frozen
        stem = path.name[len("features-"):-len(".jsonl.gz")]
        cloud, _, slm = stem.partition("-")
        out.append((cloud, slm, path))
    return out


def row_split(doc_id: str, stored: str, split_version: int = 2) -> str:
    """The document's split: version 2 from the committed split.json (a document it does
    not list keeps the split stored in its row), version 1 by the hash of its id."""
    if split_version == 1:
        return split_of(doc_id, SEED)
    return split_for(doc_id) if family_for(doc_id) else stored


def flat_row(r: dict[str, Any], split_version: int = 2) -> dict[str, Any]:
    setting = r["setting"]
    flat: dict[str, Any] = {k: (math.nan if v is None else float(v))
                            for k, v in r["features"].items()}
    flat.update(
        target=float(r["target"]), target_original=float(r["target_original"]),
        variant="corrected" if setting.get("corrected") else "plain",
        group=r["doc_id"], key=r.get("key", ""),
        split=row_split(r["doc_id"], r["split"], split_version),
        family=family_for(r["doc_id"]) or r["doc_id"],
        doc_kind=r.get("doc_kind", ""),
        method=setting["method"], kind=setting["kind"], epsilon_setting=setting.get("epsilon"),
        seed=setting.get("seed"),
        # rows of a pass run with --skip-unread have no sanitized-text perplexity
        sanitized_perplexity=bool(r.get("sanitized_perplexity", True)),
    )
    return flat


def load(path: Path, limit: int | None = None, split_version: int = 2) -> DataSet:
    """The rows of one features file; ``limit``: only its first N rows (the file only
    grows at its end, so a model card that names N stays reproducible while the data set
    keeps growing); ``split_version``: 1 for the split by document the bundles trained
    before version 2 cite."""
    stem = path.name[len("features-"):-len(".jsonl.gz")]
    cloud, _, slm = stem.partition("-")
    data = DataSet(cloud, slm, path)
    for r in itertools.islice(read_rows(path), limit):
        if "error" in r or r.get("target") is None:
            data.dropped["error"] = data.dropped.get("error", 0) + 1
        elif not r.get("reproduced", True) and r.get("features_from") != "stored payload":
            # computed (before session 4's fix) on a text the stand-in never read
            data.dropped["features of another text"] = \
                data.dropped.get("features of another text", 0) + 1
        elif r["setting"].get("corrected") and r.get("repair_matches_payload") is False:
            # D, the SLM's answer and the change shares describe this SLM's own repair, not
            # the payload the stand-in answered (``features --repair-from-payload`` redoes it)
            data.dropped["repair the stand-in did not read"] = \
                data.dropped.get("repair the stand-in did not read", 0) + 1
        elif r.get("slm_answer_tokens", LEGACY_ANSWER_TOKENS) != ASSESSOR_ANSWER_TOKENS:
            # C and D from answers of another length than the product's assessor gives
            data.dropped["answers of another length"] = \
                data.dropped.get("answers of another length", 0) + 1
        else:
            data.rows.append(flat_row(r, split_version))
            if "target_cosine" in r:
                data.target = "faithful"
    return data


def original_rows(data: DataSet) -> list[dict[str, Any]]:
    """One row per document: the unsanitized send (E of the original), for the model of
    "what would sending the document as it is give"."""
    seen: dict[str, dict[str, Any]] = {}
    for r in data.rows:
        if r["group"] not in seen:
            seen[r["group"]] = r
    return [{"group": g, "split": r["split"], "doc_kind": r["doc_kind"],
             "log_words": r.get("log_words", math.nan), "target": r["target_original"]}
            for g, r in seen.items()]


def load_csv(path: Path) -> DataSet:
    """The shipped ``training_features.csv`` (numbers only, document ids hashed) as a
    data set, split by document with the hash rule of ``split-v1.json``: how the
    interim bundle of sessions 2–3 (Gemma 3 270M stand-in, 41 documents) is rebuilt."""
    import csv

    from preflight.core.utility.flow import read_training_rows
    from preflight_eval.utility_data.corpus import SEED, split_of

    data = DataSet("cloud_standin", "slm", Path(path))
    with Path(path).open(newline="", encoding="utf-8") as fh:
        methods = [rec.get("method", "") for rec in csv.DictReader(fh)]
    for row, method in zip(read_training_rows(Path(path)), methods):
        row.update(method=method, kind=method, split=split_of(row["group"], SEED),
                   doc_kind="", epsilon_setting=None if math.isnan(row.get("epsilon", math.nan))
                   else row["epsilon"], target_original=math.nan)
        data.rows.append(row)
    return data


def add_data_arguments(ap: Any) -> None:
    """``--data``, ``--cloud-role``, ``--slm-role`` and ``--rows`` of the scripts that read
    one features file (:func:`features_path` turns them into its path)."""
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    ap.add_argument("--slm-role", default="slm")
    ap.add_argument("--rows", type=int, default=None, metavar="N",
                    help="only the first N rows of the features file (a stated snapshot)")


def features_path(args: Any) -> Path:
    return Path(args.data) / f"features-{args.cloud_role}-{args.slm_role}.jsonl.gz"


def plain_rows(args: Any) -> list[dict[str, Any]]:
    """The uncorrected rows of the features file that :func:`add_data_arguments`'
    options name (the studies that read one file)."""
    return [r for r in load(features_path(args), args.rows).rows if r["variant"] == "plain"]


def write_json(path: str | None, result: Any) -> None:
    """A study's whole result, when ``--json PATH`` asked for it."""
    if path:
        Path(path).write_text(json.dumps(result, indent=1, ensure_ascii=False),
                              encoding="utf-8")


def seeded_study_main(argv: list[str] | None, doc: str | None,
                      study: Callable[[list[dict[str, Any]], int], Any],
                      format_study: Callable[[Any], str]) -> int:
    """``main()`` of a study over one features file's plain rows whose only option of its
    own is ``--seeds`` (fold assignments), printed and, with ``--json``, written whole."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    add_data_arguments(ap)
    ap.add_argument("--seeds", type=int, default=3, help="fold assignments to average")
    ap.add_argument("--json", default=None, help="also write the whole result here")
    args = ap.parse_args(argv)
    result = study(plain_rows(args), args.seeds)
    print(format_study(result))
    write_json(args.json, result)
    return 0


def rewrite_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Replace a row file with ``rows``, through a temporary file: an interrupted rewrite
    leaves the old file whole."""
    tmp = Path(path).with_name(Path(path).name + ".new")
    tmp.unlink(missing_ok=True)
    writer = ShardWriter(tmp)
    for row in rows:
        writer.append(row)
    tmp.replace(path)


def answered_test_documents(path: Path) -> int | None:
    """How many TEST documents the stand-in's rows file (``<stand-in role>.jsonl.gz``)
    holds a sanitized send for that a feature pass computes (not an error, a torn stream
    or a d_X row of the retired mechanism): the documents a features file must cover
    before the acceptance rule is read on it. None without that file."""
    if not Path(path).exists():
        return None
    return len({r["doc_id"] for r in read_rows(path)
                if row_split(r["doc_id"], r.get("split", "")) == "test"
                and r["setting"]["kind"] != "original"
                and "error" not in r and not interrupted(r) and not old_dx_row(r)})
