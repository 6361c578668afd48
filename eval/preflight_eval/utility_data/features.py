"""Second, cheaper pass over the generated rows: features A–D (+ extras) and target E.

The first pass (:mod:`.generate`) stored, per (document, setting), the payload sent and
the stand-in's answer. This pass re-creates each sanitization from its stored setting
(mechanism, ε, seed: deterministic), checks that it reproduces the stored text, and
computes the features exactly as the app does (``UtilityAssessor.measure``) with the
chosen local SLM, plus E = sim(original, the stand-in's restored answer). It is run once
per candidate SLM, into its own file, so SmolLM2-135M and Qwen2.5-Coder-0.5B can be
compared on the same cloud answers:

    nice -n 19 python -m preflight_eval.utility_data.features --slm-role slm --time-limit 60

The SLM's answers are capped at ``--answer-tokens`` (default: the product's
:data:`~preflight.core.tasks.ASSESSOR_ANSWER_TOKENS`); every row records its cap, and
``train_utility`` trains only on rows made with the product's. To recompute a file with
another cap, write it elsewhere (``--out``), in parallel shards if you like
(``--shard 0/2`` and ``--shard 1/2`` into two files, then ``cat`` them: gzip members
concatenate), and reuse the grammar repairs an earlier pass of the same SLM already
verified (``--reuse-repairs``): the repair does not depend on the answer cap.

Corrected rows: in the app the SLM that computes the features also repairs the text. The
payload was repaired by the generator's corrector; ``measure(correct=True)`` repairs it
again with this pass's SLM, and ``repair_matches_payload`` says whether both agree (with
the same greedy SLM they do; with another SLM, D describes a different repair than the
one the stand-in read). For another SLM, ``--repair-from-payload`` takes the stored
payload as the repair instead of generating one, so every feature describes the text whose
answer is the target (rows say ``repair_from: "payload"``): the regressor learns features
of a repaired text → utility of that same text, which is what it is asked in the app.
Session 26 measured why it matters: Qwen 0.5B's own repairs of the 486 corrected rows (none
equal to SmolLM2's payloads) left its corrected model at 54.6 % Failed on the test rows,
against 27.8 % for SmolLM2, whose repairs were the payloads.

The frozen test set's reading (:mod:`preflight_eval.read_frozen`) runs this pass with the
documents' file for the texts and questions, one assessor per task, D restored by the
sanitization's vault and the product's realized score as the target (see
:class:`FeaturePass`); its defaults leave the committed passes as they were.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import time
from pathlib import Path
from dataclasses import replace
from typing import Any, Callable, Mapping

from preflight.core.send.answer_review import review_answer
from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS, SUMMARIZE, Task
from preflight.core.types import Change, SanitizedText
from preflight.core.utility.answer_check import faithful_utility
from preflight.core.utility.assess import answer_for_d
from preflight.core.utility.features import as_mapping
from preflight_eval.utility_data.corpus import DATA_DIR, SEED
from preflight_eval.utility_data.settings import (
    DocumentContext, Setting, setting_kinds, use_mechanisms,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.utility_data.features")

# Rows written before d_X's word-boundary classes (session 3) carry outputs of a d_X
# mechanism the product no longer ships: no features are computed for them.
WORD_BOUNDARIES_FROM = "2026-11-22T23:00:35"
_DX_KINDS = ("dx", "identifiers-dx")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
VARIANTS = ("all", "plain", "corrected")


def old_dx_row(row: dict[str, Any]) -> bool:
    return (row["setting"]["kind"] in _DX_KINDS
            and str(row.get("created") or row.get("row_created") or "") < WORD_BOUNDARIES_FROM)


def interrupted(row: dict[str, Any]) -> bool:
    """A send whose stream ended with no answer and no finish reason: the server dropped
    it (llama-cpp-python's server interrupts a streaming request when another client's
    request arrives). Its E would score an answer nobody gave; it gets no features."""
    return "error" not in row and not row.get("answer") and row.get("finish_reason") is None


def from_stored(original: str, stored: str, recreated: SanitizedText) -> SanitizedText:
    """The stored payload as a SanitizedText: its changes from a token diff against the
    original; the recreated output's info (ε, policy) without its token counts, which
    described another text (the change share then comes from the diff)."""
    a, b = _TOKEN.findall(original), _TOKEN.findall(stored)
    pos_a = [0]
    for t in a:
        pos_a.append(pos_a[-1] + len(t))
    pos_b = [0]
    for t in b:
        pos_b.append(pos_b[-1] + len(t))
    changes = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            changes.append(Change(pos_b[j1], pos_b[j2], pos_a[i1], pos_a[i2], "TOKEN",
                                  original[pos_a[i1]:pos_a[i2]], stored[pos_b[j1]:pos_b[j2]]))
    report = recreated.report
    if report.dx is not None:        # the stored text's tokens were never counted
        report = replace(report, dx=replace(report.dx, tokens_changed=None,
                                            tokens_total=None, tokens_in_text=None))
    return SanitizedText(stored, recreated.method, tuple(changes), report)


def faithful_fields(text: str, answer: str, cosine: float, detector: Any,
                    payload: str | None = None) -> dict[str, Any]:
    """The product's realized utility of ``answer`` (:func:`faithful_utility`: the cosine
    discounted by the facts the document does not hold, checked as the send path checks an
    answer; ``payload``: the sanitized text the cloud read, None for the unsanitized send)
    and what it was made from, as :mod:`.retarget` writes them."""
    check, _ = review_answer(text, answer, detector, payload=payload)
    return {"target": faithful_utility(cosine, check), "target_cosine": cosine,
            "unsupported_facts": len(check.unsupported),
            "supported_facts": check.supported_count}


def row_task(row: dict[str, Any]) -> str:
    """What the cloud was asked for ``row``: "summarize" (rows before tasks existed) or
    "question"."""
    return row["setting"].get("task") or "summarize"


def _nan_free(feats: dict[str, float]) -> dict[str, float | None]:
    return {k: (None if v != v else round(float(v), 6)) for k, v in as_mapping(feats).items()}


class VerifiedRepairs:
    """The local SLM, except that a grammar repair an earlier pass of the same (greedy,
    deterministic) SLM already produced and checked — its output was the stored payload —
    is looked up instead of generated again. Every other call goes to the SLM."""

    def __init__(self, slm: Any, repairs: dict[str, str]) -> None:
        self._slm = slm
        self._repairs = repairs
        self.reused = 0

    @classmethod
    def of_payloads(cls, slm: Any, rows: list[dict[str, Any]]) -> "VerifiedRepairs":
        """Every corrected row's stored payload stands for the repair of its sanitized text:
        the features of another SLM then describe the text the stand-in read."""
        return cls(slm, {r["sanitized"]: r["payload"] for r in rows
                         if r["setting"].get("corrected") and "sanitized" in r})

    @classmethod
    def from_pass(cls, slm: Any, rows: list[dict[str, Any]],
                  earlier: list[dict[str, Any]]) -> "VerifiedRepairs":
        verified = {(r["doc_id"], r["key"]) for r in earlier
                    if r["setting"].get("corrected") and r.get("repair_matches_payload")}
        return cls(slm, {r.get("sanitized", r["payload"]): r["payload"] for r in rows
                         if (r["doc_id"], r["key"]) in verified and "sanitized" in r})

    def run(self, task: Any, text: str, *args: Any, **kwargs: Any) -> str:
        if task.kind == "correct" and text in self._repairs:
            self.reused += 1
            return self._repairs[text]
        return self._slm.run(task, text, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._slm, name)


def in_shard(index: int, shard: tuple[int, int]) -> bool:
    return index % shard[1] == shard[0]


class FeaturePass:
    def __init__(self, rows_path: Path, out_path: Path, assessor: Any, detector: Any,
                 kinds: dict[str, Any] | None = None, seed: int = SEED,
                 time_limit_min: float = 60.0, max_docs: int = 0,
                 answer_tokens: int = ASSESSOR_ANSWER_TOKENS,
                 shard: tuple[int, int] = (0, 1), variant: str = "all",
                 repair_from: str = "slm", documents: Mapping[str, Any] | None = None,
                 assessor_for: Callable[[Task], Any] | None = None,
                 restore_d: bool = False, faithful: bool = False) -> None:
        self.rows_path = Path(rows_path)
        self.writer = ShardWriter(out_path)
        self.out_path = Path(out_path)
        self.assessor = assessor
        self.detector = detector
        self.kinds = kinds if kinds is not None else setting_kinds()
        self.seed = seed
        self.repair_from = repair_from      # "slm", or "payload" (VerifiedRepairs.of_payloads)
        # with the payload as the repair, a corrected row of this SLM's own repair is redone
        # (appended to the same file; ``rows.load`` drops the one the stand-in did not read)
        self.done = {(r["doc_id"], r["key"]) for r in read_rows(self.out_path)
                     if repair_from == "slm" or not r["setting"].get("corrected")
                     or r.get("repair_from") == "payload"}
        self.deadline = time.monotonic() + time_limit_min * 60
        self.n_new = 0
        self.max_docs = max_docs
        self.answer_tokens = answer_tokens
        self.shard = shard
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
        self.variant = variant
        # The frozen test set's reading (:mod:`preflight_eval.read_frozen`): the texts and
        # questions from the documents' file (``documents``, by id; a document it does not
        # hold: the unsanitized row's text), an assessor per task (``assessor_for``: a
        # question row is measured under the product's question request, as it was sent),
        # D of the local answer restored by the sanitization's vault as the product does
        # (``restore_d``) and the product's realized score as the target (``faithful``).
        self.documents = documents or {}
        self.assessor_for = assessor_for
        self.restore_d = restore_d
        self.faithful = faithful

    def task(self, row: dict[str, Any]) -> Task:
        """The request the cloud answered for ``row`` (the generator's
        :func:`~.generate.document_task` when the document is known)."""
        if row_task(row) != "question":
            return SUMMARIZE
        doc = self.documents.get(row["doc_id"])
        if doc is None:
            return Task("question", question=row["question"])
        from preflight_eval.utility_data.generate import document_task

        task = document_task(doc, Setting(**row["setting"]))
        if row.get("question", task.question) != task.question:
            raise ValueError(f"{row['doc_id']}: the row's question is not the document's")
        return task

    def wanted(self, row: dict[str, Any]) -> bool:
        """Whether ``row``'s variant is one this pass computes (plain: sent as sanitized;
        corrected: repaired by the SLM first, which costs a whole-text generation)."""
        corrected = bool(row["setting"].get("corrected"))
        return self.variant == "all" or corrected == (self.variant == "corrected")

    def run(self) -> None:
        rows = read_rows(self.rows_path)
        # one unsanitized send per document and task (a question's own, beside the summary's)
        originals = {(r["doc_id"], row_task(r)): r for r in rows
                     if r["setting"]["kind"] == "original" and not interrupted(r)}
        doc_ids = list(dict.fromkeys(doc_id for doc_id, _task in originals))
        for i, doc_id in enumerate(doc_ids[: self.max_docs or None]):
            if not in_shard(i, self.shard):
                continue
            todo = [r for r in rows if r["doc_id"] == doc_id and r["setting"]["kind"] != "original"
                    and "error" not in r and (doc_id, r["key"]) not in self.done
                    and (doc_id, row_task(r)) in originals
                    and not old_dx_row(r) and not interrupted(r) and self.wanted(r)]
            if not todo:
                continue
            doc = self.documents.get(doc_id)
            text = doc.text if doc is not None else \
                next(o["text"] for (d, _t), o in originals.items() if d == doc_id)
            ctx = DocumentContext(doc_id, text, self.detector.detect(text), self.seed)
            for row in todo:
                if time.monotonic() > self.deadline:
                    log.warning("time limit reached; rerun the same command to resume")
                    return
                self._row(ctx, originals[(doc_id, row_task(row))], row)

    def _row(self, ctx: DocumentContext, orig: dict[str, Any], row: dict[str, Any]) -> None:
        t0 = time.monotonic()
        setting = Setting(**row["setting"])
        recreated, vault = self.kinds[setting.kind].sanitize(ctx, setting)
        vault = vault if self.restore_d else None
        assessor = self.assessor_for(self.task(row)) if self.assessor_for else self.assessor
        stored = row.get("sanitized", row["payload"])
        reproduced = recreated.text == stored
        # The features must describe the text the stand-in read: when today's code no
        # longer makes it (a detector or operator changed since), they are computed on the
        # stored text, with its changes found by a diff against the original.
        sanitized = recreated if reproduced else from_stored(ctx.text, stored, recreated)
        feats, worked, slm_answer = assessor.measure(
            ctx.text, sanitized, ctx.spans, correct=setting.corrected, vault=vault)
        _, sim_c, _ = assessor.original_answer(ctx.text)
        out = {
            "doc_id": row["doc_id"], "key": row["key"], "split": row["split"],
            "doc_kind": row["doc_kind"], "setting": row["setting"],
            "features": _nan_free(feats),
            "target": assessor.realized_utility(ctx.text, row["answer"]),
            "target_original": assessor.realized_utility(ctx.text, orig["answer"]),
            "sim_slm_original": sim_c,
            "slm_answer": slm_answer,
            "slm_answer_tokens": self.answer_tokens,
            "reproduced": reproduced,
            "features_from": "recreated" if reproduced else "stored payload",
            "row_created": row.get("created"),
            "repair_matches_payload": worked == row["payload"],
            **({"repair_from": self.repair_from} if setting.corrected else {}),
            # False: the sanitized text's perplexity (no shipped model reads it) was skipped
            "sanitized_perplexity": assessor.scores_sanitized_perplexity(),
        }
        if "subkind" in row:
            out["subkind"] = row["subkind"]
        if self.restore_d:
            out["d_restored"] = answer_for_d(slm_answer, vault) != slm_answer
        if self.faithful:
            original = faithful_fields(ctx.text, orig["answer"], out["target_original"],
                                       self.detector)
            out.update(faithful_fields(ctx.text, row["answer"], out["target"], self.detector,
                                       payload=row["payload"]),
                       target_original=original["target"],
                       target_original_cosine=original["target_cosine"])
        out["seconds"] = round(time.monotonic() - t0, 2)
        if not reproduced:
            log.info("%s %s: today's sanitization differs from the stored text; features "
                     "computed on the stored text", row["doc_id"], row["key"])
        self.writer.append(out)
        self.done.add((row["doc_id"], row["key"]))
        self.n_new += 1
        log.info("features %d (%s %s): %.1f s", self.n_new, row["doc_id"], row["key"],
                 out["seconds"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    ap.add_argument("--slm-role", default="slm", help="manifest role of the local SLM")
    ap.add_argument("--n-threads", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=60.0, help="minutes; rerun resumes")
    ap.add_argument("--max-docs", type=int, default=0,
                    help="only the first N documents of the generation order (0: all), e.g. "
                         "to compare a slower SLM on part of the data")
    ap.add_argument("--answer-tokens", type=int, default=ASSESSOR_ANSWER_TOKENS,
                    help="cap on the SLM's answers (default: the product's)")
    ap.add_argument("--out", default=None, help="feature file to write (default: "
                    "data/utility/features-CLOUD-SLM.jsonl.gz)")
    ap.add_argument("--shard", default="0/1", help="I/N: only every N-th document from "
                    "the I-th (run N processes into N files, then cat them)")
    repairs = ap.add_mutually_exclusive_group()
    repairs.add_argument("--reuse-repairs", default=None, help="an earlier feature file of "
                         "the same SLM whose verified grammar repairs are looked up, not rerun")
    repairs.add_argument("--repair-from-payload", action="store_true",
                         help="corrected rows: the stored payload (the generator's repair) "
                         "stands for this SLM's repair, so the features describe the text "
                         "the stand-in read (for an SLM other than the generator's corrector)")
    ap.add_argument("--skip-unread", action="store_true",
                    help="compute only the features a shipped model reads, as the product "
                         "does: no perplexity pass on the sanitized text (about a quarter of "
                         "a plain row's time); its rows say so (sanitized_perplexity false) and "
                         "eval_utility leaves the model that reads it out for their file")
    ap.add_argument("--variant", choices=VARIANTS, default="all",
                    help="only the plain rows (the acceptance rule's variant) or only the "
                         "corrected ones, whose grammar repair is a whole-text generation "
                         "(several times a plain row's time with a slower SLM); a later "
                         "pass with 'all' fills in the rest")
    args = ap.parse_args(argv)
    shard = tuple(int(x) for x in args.shard.split("/"))
    if len(shard) != 2 or not 0 <= shard[0] < shard[1]:
        ap.error("--shard takes I/N with 0 <= I < N")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.utility.assess import UtilityAssessor
    from preflight.runtime.slm import LocalSLM

    data = Path(args.data)
    services = build_services(Settings())       # the defaults, not this user's settings
    use_mechanisms(services.mechanism)
    rows_path = data / f"{args.cloud_role}.jsonl.gz"
    slm: Any = LocalSLM(services.models.path(args.slm_role), n_threads=args.n_threads)
    if args.repair_from_payload:
        slm = VerifiedRepairs.of_payloads(slm, read_rows(rows_path))
    elif args.reuse_repairs:
        slm = VerifiedRepairs.from_pass(slm, read_rows(rows_path),
                                        read_rows(Path(args.reuse_repairs)))
    feature_pass = FeaturePass(
        rows_path,
        Path(args.out) if args.out else data / f"features-{args.cloud_role}-{args.slm_role}"
                                                ".jsonl.gz",
        UtilityAssessor(slm=slm, embedder=services.embedder(), predictor=services.predictor(),
                        answer_tokens=args.answer_tokens, all_features=not args.skip_unread),
        services.detector(), time_limit_min=args.time_limit, max_docs=args.max_docs,
        answer_tokens=args.answer_tokens, shard=shard, variant=args.variant,
        repair_from="payload" if args.repair_from_payload else "slm")
    try:
        feature_pass.run()
    except KeyboardInterrupt:
        log.warning("stopped; rerun the same command to resume")
        return 130
    log.info("done: %d new feature rows in %s", feature_pass.n_new, feature_pass.out_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
