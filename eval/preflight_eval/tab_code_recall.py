"""CODE mentions of the TAB dev sample (case and application numbers): how many the
detector covers, and how many the default policy protects, per identifier class.

Run:  python -m preflight_eval.tab_code_recall [--data FILE] [--ner PATH]

A mention counts when one detected span covers it whole. Also printed: the identifier,
national-ID, host and secret detections that lie outside every annotated mention (the
false positives these recognizers add on court judgments). TAB dev only; the sample's
README says why its numbers are not comparable to published TAB results.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

#: Where the sample sits next to the main checkout (``../shared/data/tab/``).
DEFAULT_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tab" / \
    "echr_dev_sample.jsonl"
#: Types whose detections on court judgments are listed when no annotation holds them.
WATCHED = ("ID_NUMBER", "NATIONAL_ID", "INTERNAL_HOST", "SECRET", "US_SSN", "US_ITIN")


def main(argv: list[str] | None = None) -> int:
    from preflight.core.pii.detector import PiiDetector
    from preflight.core.sanitize.policy import PRESETS
    from preflight_eval.eval_pii import resolve_ner_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        ap.error(f"the TAB dev sample is not at {args.data}; pass --data FILE")
    docs = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    detector = PiiDetector(nlp_model_path=resolve_ner_path(args.ner))
    policy = PRESETS["identifiers"]
    total, detected, protected = Counter(), Counter(), Counter()
    outside = []
    for doc in docs:
        text = doc["text"]
        spans = detector.detect(text)
        kept_safe = [s for s, _ in policy.protected(text, spans)]
        for m in doc["mentions"]:
            if m["type"] != "CODE":
                continue
            cls = m["identifier"]
            total[cls] += 1
            detected[cls] += any(s.start <= m["start"] and m["end"] <= s.end for s in spans)
            protected[cls] += any(s.start <= m["start"] and m["end"] <= s.end
                                  for s in kept_safe)
        for s in spans:
            if s.type in WATCHED and not any(m["start"] <= s.start and s.end <= m["end"]
                                             for m in doc["mentions"]):
                outside.append((s.type, text[s.start:s.end]))
    print(f"TAB dev sample: {len(docs)} documents")
    for cls in sorted(total):
        n = total[cls]
        print(f"CODE {cls:8s} mentions {n:3d}  detected {detected[cls] / n:.3f}  "
              f"protected by the default policy {protected[cls] / n:.3f}")
    print(f"{', '.join(WATCHED)} detections outside every annotated mention: {len(outside)}")
    for typ, value in outside:
        print(f"  {typ:14s} {value!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
