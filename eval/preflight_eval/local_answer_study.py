"""How good is "Keep local"? The local SLM's own answer, scored like a cloud answer.

When no setting is both private and useful enough, the product answers on this computer
with the assessor's SLM. This study asks each installed SLM role for the product's local
answer (the summarize task at the user's default answer length, on the unaltered
document, through ``SendSession.keep_local``'s own call: ``guarded_answer``, which stops a
loop at its first repeated sentence; ``--no-guard`` asks the model directly, as the product
did before the guard) on held-out TEST documents of the utility
data set and scores it with the same E as the data set's target: the similarity between
the document's excerpt and the answer (``UtilityAssessor.realized_utility``). Beside it:
the stand-in cloud's E on the same unaltered documents (the feature file's
``target_original``), the share of answers that reach the default minimum utility, and
answers naming a person the document never mentions (the product's detector run on the
answer; a name counts as invented when no word of it occurs in the document), answers
the guard stopped in a loop, answers that still repeat themselves (the product's loop
rule: a sentence of six words or more written twice, which E does not punish, since a loop
over the document's own words stays close to it) and answers cut off at the length limit.

Each (role, guard, document) is one checkpointed row of
``data/utility/local_answers.jsonl.gz``:

    nice python -m preflight_eval.local_answer_study --docs 20 --roles slm,slm_qwen05
    python -m preflight_eval.local_answer_study --report
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path
from typing import Any, Sequence

from preflight.core.send.answer_text import REPEAT_REASON, RepeatWatch, finish_answer
from preflight.core.send.local import guarded_answer
from preflight.core.tasks import SUMMARIZE
from preflight.core.utility.defaults import default_min_utility
from preflight_eval.utility_data.corpus import (
    DATA_DIR, Document, generation_order, held_out_documents,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.local_answer_study")

OUT = DATA_DIR / "local_answers.jsonl.gz"
FEATURES = DATA_DIR / "features-cloud_qwen15-slm.jsonl.gz"
ROWS = DATA_DIR / "cloud_qwen15.jsonl.gz"


def test_documents(rows: Sequence[dict[str, Any]], features: Sequence[dict[str, Any]],
                   n: int) -> list[tuple[Document, float]]:
    """The last ``n`` test documents of the generation order (kinds interleaved) that have
    a feature row, with the stand-in's E on their unaltered text."""
    cloud_e = {f["doc_id"]: float(f["target_original"]) for f in features
               if f.get("split") == "test" and f.get("target_original") is not None}
    docs = {r["doc_id"]: Document(r["doc_id"], r["doc_kind"], r.get("subkind", ""), r["text"])
            for r in rows if r["setting"]["kind"] == "original" and r["doc_id"] in cloud_e}
    picked = held_out_documents(generation_order(list(docs.values())), n)
    return [(d, cloud_e[d.doc_id]) for d in picked]


def invented_names(detector: Any, document: str, answer: str) -> list[str]:
    """Person names in ``answer`` none of whose words occur in ``document``."""
    words = {w.strip(".,;:'\"()").lower() for w in document.split()}
    out = []
    for span in detector.detect(answer):
        if span.type != "PERSON":
            continue
        name = answer[span.start:span.end]
        if not any(w.strip(".,;:'\"()").lower() in words for w in name.split()):
            out.append(name)
    return out


def repeats(answer: str) -> bool:
    """Whether the answer writes a sentence twice, by the product's own loop rule
    (:class:`~preflight.core.send.answer_text.RepeatWatch`; its last sentence counts too)."""
    return RepeatWatch().feed(answer) is not None


def run(roles: Sequence[str], docs: Sequence[tuple[Document, float]], out: Path,
        guard: bool = True) -> int:
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.utility.assess import UtilityAssessor

    done = {(r["role"], r.get("loop_guard", False), r["doc_id"])
            for r in read_rows(out)} if out.exists() else set()
    writer = ShardWriter(out)
    written = 0
    for role in roles:
        todo = [(d, e) for d, e in docs if (role, guard, d.doc_id) not in done]
        if not todo:
            continue
        services = build_services(Settings(assessor_slm=role))
        slm, detector = services.slm(), services.detector()
        scorer = UtilityAssessor(slm, services.embedder())
        task = SUMMARIZE.for_answer(services.settings.answer_max_tokens)
        for doc, cloud_e in todo:
            start = time.perf_counter()
            got = guarded_answer(slm, task, doc.text) if guard else slm.answer(task, doc.text)
            seconds = time.perf_counter() - start
            shown = finish_answer(got.text, got.finish_reason)[0]   # what the user reads
            writer.append({
                "role": role, "model": services.slm_choice().name, "loop_guard": guard,
                "doc_id": doc.doc_id, "doc_kind": doc.kind, "answer": shown,
                "finish_reason": got.finish_reason, "seconds": round(seconds, 2),
                "words": len(shown.split()), "local_e": scorer.realized_utility(doc.text, shown),
                "cloud_e": cloud_e, "invented_names": invented_names(detector, doc.text, shown),
            })
            written += 1
            log.info("%s%s %s: %.1f s", role, "" if guard else " (no guard)", doc.doc_id,
                     seconds)
        services.close()
    return written


def report(rows: Sequence[dict[str, Any]], min_utility: float) -> str:
    by_role: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for r in rows:
        by_role.setdefault((r["role"], r.get("loop_guard", False)), []).append(r)
    common = set.intersection(*({r["doc_id"] for r in rs} for rs in by_role.values()))
    lines = [f"local answers on {len(common)} held-out test documents answered by every role "
             f"(min utility {min_utility:.2f})",
             f"{'answerer':38} {'mean E':>7} {'median':>7} {'≥ min':>6} {'invented':>9} "
             f"{'loops':>6} {'stopped':>8} {'cut off':>8} {'words':>6} {'median s':>9}"]

    def line(name: str, es: list[float], rs: list[dict[str, Any]] | None = None) -> str:
        n = len(es)

        def count(test: Any) -> str:
            return f"{sum(bool(test(r)) for r in rs)}/{n}" if rs else "—"

        share = sum(e >= min_utility for e in es) / n
        words = f"{statistics.median(r['words'] for r in rs):.0f}" if rs else "—"
        secs = f"{statistics.median(r['seconds'] for r in rs):.1f}" if rs else "—"
        return (f"{name:38} {statistics.mean(es):7.3f} {statistics.median(es):7.3f} "
                f"{share:6.0%} {count(lambda r: r['invented_names']):>9} "
                f"{count(lambda r: repeats(r['answer'])):>6} "
                f"{count(lambda r: r['finish_reason'] == REPEAT_REASON):>8} "
                f"{count(lambda r: r['finish_reason'] == 'length'):>8} {words:>6} {secs:>9}")

    first = next(iter(by_role.values()))
    cloud = [r["cloud_e"] for r in first if r["doc_id"] in common]
    lines.append(line("stand-in cloud (Qwen2.5-Coder-1.5B)", cloud))
    for (_, guard), rs in sorted(by_role.items()):
        rs = [r for r in rs if r["doc_id"] in common]
        name = f"{rs[0]['model'][:22]}{'' if guard else ', no guard'}"
        lines.append(line(f"local: {name}", [r["local_e"] for r in rs], rs))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--roles", default="slm,slm_qwen05", help="comma-separated SLM roles")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-guard", action="store_true",
                    help="ask the model directly, without keep_local's loop guard")
    ap.add_argument("--report", action="store_true", help="only the table of stored rows")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not args.report:
        docs = test_documents(read_rows(ROWS), read_rows(FEATURES), args.docs)
        run([r.strip() for r in args.roles.split(",") if r.strip()], docs, args.out,
            guard=not args.no_guard)
    print(report(read_rows(args.out), default_min_utility()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
