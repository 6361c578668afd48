"""The one reading of the frozen test set (issue 47): its features, then its report.

The frozen set (``data/utility/test_frozen.json``: 105 documents of kinds no model trained
on — ECHR judgments, manual pages, READMEs — 35 of them also with a question) was sent to
the stand-in by ``generate --frozen`` into ``frozen-cloud_qwen15.jsonl.gz``. It is read
ONCE, at the end of the issue, in two phases:

    nice -n 10 python -m preflight_eval.read_frozen --features --time-limit 60 --n-threads 1
    python -m preflight_eval.read_frozen --report --json frozen-report.json

``--features`` computes a feature row per cloud row (resumable: every row is appended to
``features-frozen-cloud_qwen15-slm_qwen05.jsonl.gz`` as it is done; rerun to resume) with
the feature pass of :mod:`.utility_data.features` as the product assesses: the shipped
SLM (``slm_qwen05``, its answers capped as the shipped bundle's rows were), the documents'
texts and questions from ``newkinds.jsonl.gz``, a question row under the product's
question request as the generator sent it, D of the local answer restored by the
sanitization's vault, and the product's realized score (the cosine discounted by
unsupported facts) as the target, as the shipped bundle's training rows now have them.

``--report`` is the reading (:mod:`.frozen_report`): the SHIPPED bundle's instant, full and
shown predictions against the realized score, beside the ε-and-setting-only model fitted on
the shipped bundle's own training rows and the per-setting mean of the other frozen
documents; per kind of document, task and setting kind; issue 47's three acceptance
checks and the refined-against-instant comparison. It writes ``frozen-read.json`` (date,
bundle) first — the record that the set was read — and refuses to run again without
``--again``. ``--input`` (any cloud rows file, e.g. a few rows of the committed test
split) rehearses both phases without touching the frozen set.

``--scope`` reads no row: it copies from the reading's JSON report (``--json``) the share
of sends whose shown value missed by more than 0.1 — all, and the questions — into
``resources/utility/scope.json``'s ``unseen`` entry, which both faces say beside the scope:

    python -m preflight_eval.read_frozen --scope --json data/utility/frozen-report.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from preflight.core.tasks import Task
from preflight_eval.utility_data.corpus import DATA_DIR, SEED
from preflight_eval.utility_data.features import FeaturePass, interrupted, old_dx_row
from preflight_eval.utility_data.shards import read_rows

log = logging.getLogger("preflight_eval.read_frozen")

SLM_ROLE = "slm_qwen05"                 # the shipped default SLM's bundle and features
INPUT = DATA_DIR / "frozen-cloud_qwen15.jsonl.gz"
FEATURES = DATA_DIR / "features-frozen-cloud_qwen15-slm_qwen05.jsonl.gz"
MARKER = DATA_DIR / "frozen-read.json"
# the shipped bundle's training rows (its card: --rows 3764 --split-version 1)
TRAIN_FEATURES = DATA_DIR / "features-cloud_qwen15-slm_qwen05.jsonl.gz"
TRAIN_ROWS = 3764
TRAIN_SPLIT_VERSION = 1


def answered_keys(path: Path) -> set[tuple[str, str]]:
    """(document, setting key) of every row of a cloud rows file that gets a feature row:
    keys only, no answer is looked at."""
    return {(r["doc_id"], r["key"]) for r in read_rows(path)
            if r["setting"]["kind"] != "original" and "error" not in r
            and not interrupted(r) and not old_dx_row(r)}


def assessors(slm: Any, embedder: Any, predictor: Any, answer_tokens: int
              ) -> Callable[[Task], Any]:
    """One :class:`UtilityAssessor` per task (sharing the models), as the product's
    ``Services.assessor(task)``: a question is answered by the SLM under its request."""
    from preflight.core.utility.assess import UtilityAssessor

    made: dict[tuple[str, str], Any] = {}

    def assessor_for(task: Task) -> Any:
        key = (task.kind, task.question)
        if key not in made:
            made[key] = UtilityAssessor(slm=slm, embedder=embedder, predictor=predictor,
                                        task=task, answer_tokens=answer_tokens)
        return made[key]
    return assessor_for


def feature_pass(input_path: Path, out: Path, documents: dict[str, Any],
                 assessor_for: Callable[[Task], Any], detector: Any, answer_tokens: int,
                 time_limit_min: float, kinds: dict[str, Any] | None = None,
                 max_docs: int = 0, seed: int = SEED,
                 shard: tuple[int, int] = (0, 1)) -> FeaturePass:
    """The features phase on ``input_path``'s rows (the product's setting kinds)."""
    from preflight_eval.utility_data.settings import setting_kinds, shipped_kinds

    # the frozen set's kinds are the product's (a rehearsal's rows may hold the corpus's
    # other kinds too); a kind sanitizes the same whatever its draw
    return FeaturePass(
        input_path, out, assessor_for(Task("summarize")), detector,
        kinds=kinds if kinds is not None else {**setting_kinds(), **shipped_kinds()},
        seed=seed,
        time_limit_min=time_limit_min, max_docs=max_docs, answer_tokens=answer_tokens,
        shard=shard, documents=documents, assessor_for=assessor_for, restore_d=True, faithful=True)


def shard_of(text: str) -> tuple[int, int]:
    """``I/N`` as (I, N): every N-th document from the I-th."""
    i, n = (int(x) for x in text.split("/"))
    if not 0 <= i < n:
        raise ValueError("--shard takes I/N with 0 <= I < N")
    return i, n


def bundle_id(path: Path) -> dict[str, Any]:
    """What names the bundle read: its file, its sha256 and when it was built."""
    from preflight.core.utility.predictor import load_bundle

    data = Path(path).read_bytes()
    bundle = load_bundle(Path(path))
    return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(),
            "created": bundle.get("created"), "source": bundle.get("source")}


def guard(marker: Path, again: bool) -> str | None:
    """Why the report must not run (None: it may): the set was read already."""
    if not marker.exists() or again:
        return None
    read = json.loads(marker.read_text(encoding="utf-8"))
    last = (read.get("readings") or [{}])[-1]
    return (f"the frozen test set was read already ({last.get('read_at', '?')}, bundle "
            f"{str(last.get('bundle', {}).get('sha256', '?'))[:12]}; {marker}). It is read "
            "once: rerun with --again only if you mean to read it another time, and say so "
            "where you report it")


def record_reading(marker: Path, entry: dict[str, Any]) -> None:
    """Append one reading to the marker (created on the first)."""
    read = json.loads(marker.read_text(encoding="utf-8")) if marker.exists() else {
        "what": "the readings of the frozen test set (data/utility/test_frozen.json)",
        "readings": []}
    read["readings"].append(entry)
    marker.write_text(json.dumps(read, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def run_features(args: argparse.Namespace) -> int:
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path
    from preflight.runtime.slm import LocalSLM
    from preflight_eval.utility_data.newkinds import document_from_json
    from preflight_eval.utility_data.settings import use_mechanisms

    services = build_services(Settings())       # the defaults, not this user's settings
    use_mechanisms(services.mechanism)
    bundle = Path(args.bundle) if args.bundle else shipped_bundle_path(SLM_ROLE)
    predictor = UtilityPredictor.load(bundle, prefer_user=False)
    tokens = args.answer_tokens or int(predictor.bundle["slm_answer_tokens"])
    detector = services.detector()
    detector.load()
    if detector.warnings:       # a degraded detector would sanitize as no send did
        log.error("the detector is degraded: %s", " ".join(detector.warnings))
        return 1
    slm = LocalSLM(services.models.path(SLM_ROLE), n_threads=args.n_threads)
    docs = {d.doc_id: d for d in map(document_from_json, read_rows(Path(args.documents)))} \
        if Path(args.documents).exists() else {}
    job = feature_pass(Path(args.input), Path(args.out), docs,
                       assessors(slm, services.embedder(), predictor, tokens), detector,
                       tokens, args.time_limit, max_docs=args.max_docs,
                       shard=shard_of(args.shard))
    t0 = time.monotonic()
    try:
        job.run()
    except KeyboardInterrupt:
        log.warning("stopped; rerun the same command to resume")
        return 130
    wanted = answered_keys(Path(args.input))
    have = {(r["doc_id"], r["key"]) for r in read_rows(Path(args.out))}
    log.info("%d new feature rows in %.0f s (%.1f s a row); %d of %d rows done", job.n_new,
             time.monotonic() - t0, (time.monotonic() - t0) / max(1, job.n_new),
             len(wanted & have), len(wanted))
    return 0


def run_report(args: argparse.Namespace) -> int:
    from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path
    from preflight_eval.frozen_report import (
        acceptance, format_report, frozen_rows, reading, training_rows,
    )

    marker = Path(args.marker)
    why = guard(marker, args.again)
    if why:
        print(why, file=sys.stderr)
        return 3
    rows = frozen_rows(Path(args.out))
    wanted = answered_keys(Path(args.input)) if Path(args.input).exists() else set()
    missing = len(wanted - {(r["group"], r["key"]) for r in rows})
    if not rows or (missing and not args.incomplete):
        print(f"{missing} of {len(wanted)} answered rows have no features yet "
              f"({args.out}): finish the features phase first (or --incomplete)",
              file=sys.stderr)
        return 2
    bundle = Path(args.bundle) if args.bundle else shipped_bundle_path(SLM_ROLE)
    entry = {"read_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "bundle": bundle_id(bundle), "features": str(args.out), "rows": len(rows),
             "missing_rows": missing, "command": " ".join(sys.argv)}
    record_reading(marker, entry)       # before a number is computed: the set is read
    train = training_rows(Path(args.train_features), args.train_rows, args.split_version)
    result = reading(rows, UtilityPredictor.load(bundle, prefer_user=False), train)
    result.update(reading_of=entry, acceptance=acceptance(result))
    print(format_report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False),
                                   encoding="utf-8")
    return 0


KIND_NAMES = {"judgment": "court judgments", "manpage": "manual pages", "readme": "READMEs"}


def unseen_entry(report: dict[str, Any]) -> dict[str, Any]:
    """The scope file's ``unseen`` entry from a reading's report: the value the faces show
    (``shown``), its Failed share overall and on the question sends."""
    kinds = [KIND_NAMES.get(k, k) for k in report["by_document_kind"]]
    questions = report.get("by_task", {}).get("question")
    return {"kinds": ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1
            else kinds[0],
            "documents": int(report["documents"]), "sends": int(report["rows"]),
            "missed": round(report["all"]["shown"]["failed_pct"] / 100, 3),
            "missed_questions": None if questions is None
            else round(questions["shown"]["failed_pct"] / 100, 3),
            "read_at": report["reading_of"]["read_at"],
            "command": "python -m preflight_eval.read_frozen --scope --json F"}


def run_scope(args: argparse.Namespace) -> int:
    from preflight.core import paths
    from preflight.core.utility.scope import SCOPE_FILE, MeasuredScope, UnseenReading

    if not args.json or not Path(args.json).exists():
        print("--scope reads the reading's report: give it with --json FILE", file=sys.stderr)
        return 2
    entry = unseen_entry(json.loads(Path(args.json).read_text(encoding="utf-8")))
    if UnseenReading.from_json(entry) is None:
        print(f"the report gives no usable reading: {entry}", file=sys.stderr)
        return 2
    path = Path(args.scope_file) if args.scope_file else paths.resource_path("utility",
                                                                               SCOPE_FILE)
    scope = MeasuredScope.load(path)
    if scope is None:
        print(f"{path} is missing or unreadable: write it first (utility_scope --write)",
              file=sys.stderr)
        return 2
    MeasuredScope(scope.shortest, scope.longest, scope.measured_on, scope.tasks,
                  {**scope.meta, "unseen": entry}).save(path)
    print(f"wrote the unseen reading into {path}: {entry}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    phase = ap.add_mutually_exclusive_group(required=True)
    phase.add_argument("--features", action="store_true", help="compute the feature rows "
                       "(resumable; rerun resumes)")
    phase.add_argument("--report", action="store_true", help="the one reading")
    phase.add_argument("--scope", action="store_true", help="copy the reading's misses "
                       "(from --json) into the shipped scope file")
    ap.add_argument("--input", default=str(INPUT), help="the stand-in's rows (default: the "
                    "frozen set's); a few rows of another file rehearse both phases")
    ap.add_argument("--out", default=str(FEATURES), help="the feature rows' file")
    ap.add_argument("--documents", default=str(DATA_DIR / "newkinds.jsonl.gz"),
                    help="the documents' texts and questions (a row of a document it does "
                         "not hold reads the text of its unsanitized row)")
    ap.add_argument("--bundle", default=None, help="default: the shipped slm_qwen05 bundle")
    ap.add_argument("--answer-tokens", type=int, default=0,
                    help="cap on the SLM's answers (0: the bundle's rows' cap)")
    ap.add_argument("--n-threads", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=60.0, help="minutes; rerun resumes")
    ap.add_argument("--max-docs", type=int, default=0, help="only the first N documents")
    ap.add_argument("--shard", default="0/1", help="I/N: every N-th document from the I-th "
                    "(two processes: 0/2 into the file, 1/2 with --out OTHER; then append "
                    "OTHER's bytes to the file — gzip members concatenate)")
    ap.add_argument("--marker", default=str(MARKER), help="the record of the readings")
    ap.add_argument("--again", action="store_true", help="read the set another time")
    ap.add_argument("--incomplete", action="store_true",
                    help="report although some answered rows have no features")
    ap.add_argument("--train-features", default=str(TRAIN_FEATURES))
    ap.add_argument("--train-rows", type=int, default=TRAIN_ROWS)
    ap.add_argument("--split-version", type=int, choices=(1, 2), default=TRAIN_SPLIT_VERSION)
    ap.add_argument("--json", default=None, help="also write the reading as JSON here "
                    "(--scope: the report to read)")
    ap.add_argument("--scope-file", default=None, help="--scope: the scope file to write "
                    "(default: the shipped resources/utility/scope.json)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.scope:
        return run_scope(args)
    return run_features(args) if args.features else run_report(args)


if __name__ == "__main__":
    raise SystemExit(main())
