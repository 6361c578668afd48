"""Detection on text annotated by people: TAB's metrics for the product under each policy,
beside vanilla Presidio over the same spaCy model, in one run.

    python -m preflight_eval.eval_annotated [--source tab,wnut17]
        [--policy identifiers,everything] [--json OUT] [--show-misses N] [--heldout]

Sources and their dev / held-out split: :mod:`preflight_eval.annotated.corpus`. Metrics
(entity recall for DIRECT and QUASI identifiers, mention recall, unweighted token
precision): :mod:`preflight_eval.annotated.tab_metrics`. What counts as masked:
:mod:`preflight_eval.annotated.maskers`. The dev part is read by default; the held-out
part only with ``--heldout`` (report it, never tune on it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VANILLA = "vanilla Presidio"


def _fmt(ratio: dict) -> str:
    value = ratio["value"]
    return "   -  " if value is None else f"{value:6.3f}"


def run_source(source: str, part: str, policies: list[str], services, masker, vanilla,
               docs_limit: int | None = None) -> dict:  # noqa: ANN001
    from preflight_eval.annotated import corpus, tab_metrics

    docs = corpus.load(source, part)[:docs_limit]
    texts = [d.text for d in docs]
    words = sum(len(t.split()) for t in texts)
    before = masker.seconds
    spans = masker.detect(texts)
    detect_s = masker.seconds - before
    systems: dict[str, dict] = {}
    scores = {}
    for policy in policies:
        masks = [masker.mask(policy, d.text, s) for d, s in zip(docs, spans)]
        scores[policy] = tab_metrics.score(docs, masks)
    if vanilla is not None:
        before = vanilla.seconds
        scores[VANILLA] = tab_metrics.score(docs, vanilla.masks(texts))
        vanilla_s = vanilla.seconds - before
    for name, sc in scores.items():
        systems[name] = sc.as_dict()
    report = {
        "source": source, "part": part, "documents": len(docs), "words": words,
        "entities": {lvl: sum(1 for d in docs for e in tab_metrics.entities(d)
                              if e.level == lvl) for lvl in tab_metrics.MASK_LEVELS},
        "systems": systems,
        "seconds": {"product_detection": round(detect_s, 2),
                    **({"vanilla": round(vanilla_s, 2)} if vanilla is not None else {})},
        "ms_per_1000_words": {"product_detection": round(detect_s * 1e6 / max(words, 1), 1),
                              **({"vanilla": round(vanilla_s * 1e6 / max(words, 1), 1)}
                                 if vanilla is not None else {})},
    }
    report["_scores"] = scores
    return report


def print_report(report: dict, show_misses: int = 0) -> None:
    scores = report.pop("_scores")
    e = report["entities"]
    print(f"\n== {report['source']}/{report['part']}: {report['documents']} documents, "
          f"{report['words']:,} words; entities to mask: DIRECT {e['DIRECT']}, "
          f"QUASI {e['QUASI']}")
    print(f"{'system':18} | {'entity recall':^15} | {'mention recall':^15} | "
          f"{'precision':>9} {'masked tokens':>13}")
    print(f"{'':18} | {'DIRECT':>7} {'QUASI':>7} | {'DIRECT':>7} {'QUASI':>7} |")
    for name, r in report["systems"].items():
        print(f"{name:18} | {_fmt(r['entity_recall']['DIRECT']):>7} "
              f"{_fmt(r['entity_recall']['QUASI']):>7} | "
              f"{_fmt(r['mention_recall']['DIRECT']):>7} "
              f"{_fmt(r['mention_recall']['QUASI']):>7} | "
              f"{_fmt(r['precision']):>9} {r['precision']['n']:>13}")
    names = list(report["systems"])
    types = sorted({t for r in report["systems"].values() for t in r["entity_recall_by_type"]})
    print("entity recall per type (n entities): " + " | ".join(names))
    for t in types:
        for lvl in ("DIRECT", "QUASI"):
            cells = [report["systems"][n]["entity_recall_by_type"].get(t, {}).get(lvl)
                     for n in names]
            if not any(cells):
                continue
            n = next(c["n"] for c in cells if c)
            print(f"  {t:9} {lvl:6} ({n:4}): "
                  + " | ".join("  -  " if c is None else f"{c['value']:.3f}" for c in cells))
    print("precision by the type masked as (tokens: share inside a mention to mask):")
    for n in names:
        parts = [f"{t} {v['n']}: {v['value']:.2f}" for t, v in
                 sorted(report["systems"][n]["precision_by_masked_type"].items(),
                        key=lambda kv: -kv[1]["n"])]
        print(f"  {n}: " + ", ".join(parts))
    ms = report["ms_per_1000_words"]
    print("detection time: " + ", ".join(f"{k} {report['seconds'][k]} s ({v} ms per 1,000 "
                                         f"words)" for k, v in ms.items()))
    for name, sc in scores.items():
        direct = [m for m in sc.missed if m.startswith("DIRECT")]
        if show_misses and direct:
            print(f"  {name} missed {len(direct)} DIRECT mentions, e.g.: "
                  + "; ".join(direct[:show_misses]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="tab,wnut17", help="comma-separated: tab, wnut17")
    ap.add_argument("--policy", default="identifiers,everything",
                    help="comma-separated policy names (presets or saved)")
    ap.add_argument("--heldout", action="store_true",
                    help="read the held-out part instead of dev (report only, never tune)")
    ap.add_argument("--docs", type=int, default=None, help="first N documents (quick runs)")
    ap.add_argument("--no-vanilla", action="store_true")
    ap.add_argument("--show-misses", type=int, default=0, metavar="N",
                    help="print N missed DIRECT mentions per system")
    ap.add_argument("--json", type=Path, help="write the report here")
    args = ap.parse_args(argv)

    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-eval-annotated-")
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight_eval.annotated.corpus import SOURCES, CorpusMissing
    from preflight_eval.annotated.maskers import ProductMasker, VanillaMasker

    sources = [s.strip() for s in args.source.split(",") if s.strip()]
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        ap.error(f"unknown source {unknown[0]!r}: choose from {', '.join(SOURCES)}")
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    part = "heldout" if args.heldout else "dev"
    services = build_services(Settings())
    masker = ProductMasker(services)
    ner = str(services.ner_model_path())
    vanilla = None if args.no_vanilla else VanillaMasker(ner)
    print(f"detector: {services.models.spec('ner').name} ({ner}), default detection "
          f"settings; vanilla Presidio: {'off' if vanilla is None else 'same spaCy model'}"
          f"; part: {part}")
    reports = []
    for source in sources:
        try:
            report = run_source(source, part, policies, services, masker, vanilla, args.docs)
        except CorpusMissing as err:
            print(f"{source}: {err}", file=sys.stderr)
            return 2
        print_report(report, args.show_misses)
        reports.append(report)
    if args.json:
        args.json.write_text(json.dumps({"part": part, "policies": policies,
                                         "ner_model": services.models.spec("ner").name,
                                         "sources": reports}, indent=2))
        print(f"\nreport written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
