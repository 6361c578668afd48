"""Does the realized score punish wrong facts? Validation of the answer check.

    python -m preflight_eval.answer_check [--docs N] [--json OUT] [--heldout]

Answers: the stand-in's (Qwen2.5-Coder-1.5B) answers to the *unsanitized* documents of the
utility data set (``data/utility/cloud_qwen15.jsonl.gz``, kind "original": 618 summaries
of papers, e-mails and business documents). Each is scored as it is (faithful), then with
one fact altered, four ways, by edits that do not use the checker's own rules:

- **date**: a month name moved three months on ("March" → "June");
- **number**: the first number written with digits multiplied by 1.5 and rounded;
- **name**: a capitalized word of the answer that the document also writes (not at a
  sentence start) replaced by a capitalized word of another document's answer that this
  document never writes;
- **negation**: " not" inserted after the first "is/are/was/were/will/has/have/can".

Scores: the cosine of document excerpt and answer (all-mpnet-base-v2, the product's E),
and the realized score (:func:`preflight.core.utility.answer_check.faithful_utility`: the
cosine discounted by unsupported statements, the product's detector finding the names).
Reported per alteration: the AUC of faithful against altered answers of the same
documents (1 = every altered answer scored below every faithful one; 0.5 = blind) and
the mean drop. Documents are split in two halves by a hash of their id: the weight of an
unsupported statement is chosen on the development half; ``--heldout`` reads the other
half once, with that weight.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
from typing import Any

from preflight.core.utility.answer_check import check_answer, faithful_utility
from preflight.core.utility.excerpt import original_excerpt
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.shards import read_rows

ALTERATIONS = ("date", "number", "name", "negation")
WEIGHTS = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_DIGITS = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?")
_CAPITAL = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]{2,}\b")
_AUX = re.compile(r"\b(is|are|was|were|will|has|have|can)\b")


def half(doc_id: str) -> str:
    """"dev" or "heldout", fixed by the document id."""
    return "dev" if hashlib.sha256(doc_id.encode()).digest()[0] % 2 == 0 else "heldout"


def alter(kind: str, answer: str, document: str, foreign: list[str]) -> str | None:
    """``answer`` with one fact changed, or None when it has none of that kind."""
    if kind == "date":
        m = _MONTH.search(answer)
        if not m:
            return None
        new = _MONTHS[(_MONTHS.index(m.group(1)) + 3) % 12]
        return answer[:m.start()] + new + answer[m.end():]
    if kind == "number":
        for m in _DIGITS.finditer(answer):
            raw = m.group(0).rstrip(",")
            value = float(raw.replace(",", ""))
            if value < 2:
                continue
            new = round(value * 1.5) if value >= 10 else int(value) + 3
            text = f"{new:,}" if "," in raw else str(new)
            return answer[:m.start()] + text + answer[m.start() + len(raw):]
        return None
    if kind == "name":
        doc_words = set(re.findall(r"\w+", document))
        for m in _CAPITAL.finditer(answer):
            if m.group(0) in doc_words:
                for other in foreign:
                    if other not in doc_words and other != m.group(0):
                        return answer[:m.start()] + other + answer[m.end():]
        return None
    if kind == "negation":
        m = _AUX.search(answer)
        if not m:
            return None
        return answer[:m.end()] + " not" + answer[m.end():]
    raise ValueError(kind)


def auc(good: list[float], bad: list[float]) -> float:
    """P(a faithful answer scores above an altered one), ties counting half."""
    if not good or not bad:
        return float("nan")
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return wins / (len(good) * len(bad))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=0, help="first N documents only (0: all)")
    ap.add_argument("--heldout", action="store_true",
                    help="read the held-out half once, with the weight chosen on dev")
    ap.add_argument("--json", default=None, help="write the per-answer scores here")
    ap.add_argument("--reuse", default=None,
                    help="an earlier --json of the same half: its cosines are reused (the "
                         "alterations are deterministic; only the check is recomputed)")
    args = ap.parse_args(argv)
    from preflight.app.services import build_services

    services = build_services()
    detector = services.detector()
    embedder = services.embedder()
    rows = [r for r in read_rows(DATA_DIR / "cloud_qwen15.jsonl.gz")
            if r["setting"]["kind"] == "original" and r.get("answer") and r.get("text")]
    part = "heldout" if args.heldout else "dev"
    rows = [r for r in rows if half(r["doc_id"]) == part]
    if args.docs:
        rows = rows[: args.docs]
    capitals = [w for r in rows for w in _CAPITAL.findall(r["answer"])]
    earlier: dict[tuple[str, str], float] = {}
    if args.reuse:
        with open(args.reuse, encoding="utf-8") as f:
            earlier = {(x["doc_id"], x["variant"]): x["cosine"] for x in json.load(f)["scored"]}
    scored: list[dict[str, Any]] = []
    for i, r in enumerate(rows):
        doc, answer = r["text"], r["answer"]
        excerpt = original_excerpt(doc)
        foreign = [w for w in capitals[(i * 7) % max(1, len(capitals)):] + capitals
                   if w not in doc][:20]
        variants = {"faithful": answer}
        for kind in ALTERATIONS:
            altered = alter(kind, answer, doc, foreign)
            if altered is not None and altered != answer:
                variants[kind] = altered
        for kind, text in variants.items():
            check = check_answer(doc, text, detect=detector.detect)
            scored.append({"doc_id": r["doc_id"], "variant": kind,
                           "cosine": earlier.get((r["doc_id"], kind))
                           or embedder.similarity(excerpt, text),
                           "supported": check.supported_count,
                           "unsupported": len(check.unsupported),
                           "flagged": [f.text for f in check.unsupported]})
        print(f"\r{i + 1}/{len(rows)} documents", end="", flush=True)
    print()

    def score(item: dict[str, Any], weight: float) -> float:
        s, u = item["supported"], item["unsupported"]
        return item["cosine"] * (s + 1) / (s + 1 + weight * u)

    good = [x for x in scored if x["variant"] == "faithful"]
    flagged_faithful = sum(1 for x in good if x["unsupported"])
    print(f"{part} half: {len(good)} faithful answers; {flagged_faithful} of them "
          f"({100 * flagged_faithful / max(1, len(good)):.1f} %) have a flagged fact")
    table: dict[str, Any] = {}
    for weight in WEIGHTS:
        table[weight] = {}
        for kind in ALTERATIONS:
            bad = [x for x in scored if x["variant"] == kind]
            ids = {x["doc_id"] for x in bad}
            base = [x for x in good if x["doc_id"] in ids]
            table[weight][kind] = {
                "n": len(bad),
                "auc_cosine": auc([x["cosine"] for x in base], [x["cosine"] for x in bad]),
                "auc_realized": auc([score(x, weight) for x in base],
                                    [score(x, weight) for x in bad]),
                "mean_faithful": statistics.fmean(score(x, weight) for x in base) if base else 0,
                "mean_altered": statistics.fmean(score(x, weight) for x in bad) if bad else 0,
            }
    print(f"{'weight':>6}  " + "  ".join(f"{k:>22}" for k in ALTERATIONS))
    print(f"{'':>6}  " + "  ".join(f"{'AUC cosine / realized':>22}" for _ in ALTERATIONS))
    for weight, per in table.items():
        print(f"{weight:>6}  " + "  ".join(
            f"{per[k]['auc_cosine']:>10.3f} / {per[k]['auc_realized']:<9.3f}" for k in ALTERATIONS))
    n = {k: table[WEIGHTS[0]][k]["n"] for k in ALTERATIONS}
    print("altered answers per kind: " + ", ".join(f"{k} {v}" for k, v in n.items()))
    faithful_mean = {w: statistics.fmean(score(x, w) for x in good) for w in WEIGHTS}
    print("mean realized score of faithful answers: " + ", ".join(
        f"w={w}: {v:.3f}" for w, v in faithful_mean.items())
          + f" (cosine {statistics.fmean(x['cosine'] for x in good):.3f})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"half": part, "table": table, "scored": scored}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
