"""How often the quasi-identifier warning is red on the TAB dev sample (40 court
judgments) under the default policy, and what it lists.

Run:  python -m preflight_eval.tab_quasi_warning [--data FILE] [--ner PATH] [--spans FILE]
                                                [--policy PRESET]

Each judgment is detected with the shipped detector, sanitized by the default policy
("identifiers"), and its quasi-identifiers left and warning computed by the application's
own functions. Printed: the documents red (a warning) and grey, the kinds left, and how
many of the human annotators' QUASI mentions the payload still carries as written (the
judgments are each about one applicant: what a reader could single them out with).
``--spans`` caches the detections (a pickle) so the same spans compare two versions.
"""

from __future__ import annotations

import argparse
import json
import pickle
from collections import Counter
from pathlib import Path

from preflight_eval.tab_code_recall import DEFAULT_DATA


def main(argv: list[str] | None = None) -> int:
    from preflight.app.presentation import quasi_warning
    from preflight.core.privacy.quasi import quasi_identifiers_left
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.sanitize.policy import DEFAULT_POLICY, PRESETS
    from preflight.core.sanitize.policy_apply import PolicyMechanism
    from preflight.core.types import SanitizedText

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--spans", type=Path, help="detections cache (written when missing)")
    ap.add_argument("--policy", default=DEFAULT_POLICY,
                    help="a preset (default: the default), or 'keep': send the text as written")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        ap.error(f"the TAB dev sample is not at {args.data}; pass --data FILE")
    docs = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    all_spans = _detections(docs, args.ner, args.spans)
    mech = None if args.policy == "keep" else PolicyMechanism(PRESETS[args.policy])
    red, kinds, listed, annotated, carried = 0, Counter(), 0, 0, 0
    for doc, spans in zip(docs, all_spans):
        text = doc["text"]
        out = SanitizedText(text, "keep") if mech is None else \
            mech.sanitize(text, spans, SanitizeParams(seed=1))
        left = quasi_identifiers_left(text, out, spans)
        warning = quasi_warning(left)
        red += warning is not None
        listed += len(left)
        kinds.update({q.kind for q in left})
        quasi = [m for m in doc["mentions"] if m["identifier"] == "QUASI"]
        annotated += len(quasi)
        carried += sum(_carried(out, m) for m in quasi)
        print(f"{doc['doc_id']:>12s}  {'RED ' if warning else 'grey'}  {len(left):3d} left  "
              f"kinds: {', '.join(sorted({q.kind for q in left})) or '—'}")
    n = len(docs)
    print(f"\nTAB dev, {n} documents, policy {args.policy!r}: red {red} ({red / n:.0%}), "
          f"grey {n - red} ({(n - red) / n:.0%}); {listed / n:.1f} quasi-identifiers "
          f"listed per document")
    print("documents with each kind left: " + ", ".join(f"{k} {v}" for k, v in
                                                         kinds.most_common()))
    print(f"annotated QUASI mentions still in the payload as written: {carried} of "
          f"{annotated} ({carried / max(1, annotated):.0%})")
    return 0


def _detections(docs: list[dict], ner: str | None, cache: Path | None) -> list[list]:
    if cache is not None and cache.is_file():
        return pickle.loads(cache.read_bytes())
    from preflight.core.pii.detector import PiiDetector

    from preflight_eval.eval_pii import resolve_ner_path

    detector = PiiDetector(nlp_model_path=resolve_ner_path(ner))
    spans = [detector.detect(doc["text"]) for doc in docs]
    if cache is not None:
        cache.write_bytes(pickle.dumps(spans))
    return spans


def _carried(out, mention: dict) -> bool:
    """Whether no change of the sanitization touches the mention (it is sent as written)."""
    return not any(c.source_start < mention["end"] and c.source_end > mention["start"]
                   and c.replacement.casefold() != c.original.casefold() for c in out.changes)


if __name__ == "__main__":
    raise SystemExit(main())
