"""Per-type precision/recall of Preflight's detector and of vanilla Presidio on the
synthetic-insertion set of :mod:`preflight_eval.pii_corpus`.

Run:  python -m preflight_eval.eval_pii --split heldout [--ner PATH] [--json OUT]

Scoring (both detectors, same threshold):
- recall: a gold value counts as found when detections of a compatible type cover at
  least 80 % of its non-space characters ("exact" also reported: one detection with the
  same boundaries); "any type" recall counts coverage by detections of any type (what
  matters for hiding the value);
- precision, for the gold types only: a detection is correct when at least half of it
  lies inside a gold value of a compatible type. Detections of other types (dates,
  places, URLs of the host text) are counted but not scored. No PII in the host text was
  annotated by people, so real PII there counts as false positives.

Vanilla Presidio = ``AnalyzerEngine`` defaults (its default recognizers and NER
configuration, which ignores ORGANIZATION) over the same spaCy model, with tldextract
made offline.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from preflight_eval.pii_corpus import GOLD_TYPES, EvalDoc, build_split

THRESHOLD = 0.35

# detected type -> gold type it may stand for (recall); precision uses PRECISION_TYPES
COMPATIBLE: dict[str, set[str]] = {
    "PERSON": {"PERSON"},
    "EMAIL": {"EMAIL_ADDRESS"},
    "PHONE": {"PHONE_NUMBER"},
    "SSN": {"US_SSN"},
    "CARD": {"CREDIT_CARD"},
    "IBAN": {"IBAN_CODE"},
    "IP": {"IP_ADDRESS"},
    "API_KEY": {"API_KEY", "SECRET"},
    "ADDRESS": {"STREET_ADDRESS", "LOCATION"},
    "DOB": {"DATE_OF_BIRTH", "DATE_TIME"},
    "ORG": {"ORGANIZATION"},
}
PRECISION_TYPES: dict[str, str] = {
    "PERSON": "PERSON", "EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "US_SSN": "SSN",
    "CREDIT_CARD": "CARD", "IBAN_CODE": "IBAN", "IP_ADDRESS": "IP", "API_KEY": "API_KEY",
    "SECRET": "API_KEY", "STREET_ADDRESS": "ADDRESS", "DATE_OF_BIRTH": "DOB",
    "ORGANIZATION": "ORG",
}


@dataclass
class Tally:
    gold: int = 0
    found: int = 0
    exact: int = 0
    any_type: int = 0
    predicted: int = 0
    correct: int = 0

    def as_dict(self) -> dict:
        r = self.found / self.gold if self.gold else None
        p = self.correct / self.predicted if self.predicted else None
        return {
            "gold": self.gold,
            "recall": _r(r),
            "recall_exact": _r(self.exact / self.gold if self.gold else None),
            "recall_any_type": _r(self.any_type / self.gold if self.gold else None),
            "predicted": self.predicted,
            "precision": _r(p),
            "f2": _r(5 * p * r / (4 * p + r) if p and r else None),
        }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _coverage(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> float:
    wanted = [i for i in range(start, end) if not text[i].isspace()]
    if not wanted:
        return 0.0
    covered = sum(1 for i in wanted if any(s <= i < e for s, e in spans))
    return covered / len(wanted)


def score(docs: list[EvalDoc], detections: list[list[tuple[int, int, str]]]) -> dict:
    """Per-gold-type tallies plus counts of detections of non-gold types."""
    tallies = {t: Tally() for t in GOLD_TYPES}
    other: Counter[str] = Counter()
    for doc, dets in zip(docs, detections):
        for g in doc.gold:
            t = tallies[g.type]
            t.gold += 1
            compatible = [(s, e) for s, e, typ in dets if typ in COMPATIBLE[g.type]]
            if _coverage(doc.text, g.start, g.end, compatible) >= 0.8:
                t.found += 1
            if (g.start, g.end) in {(s, e) for s, e in compatible}:
                t.exact += 1
            if _coverage(doc.text, g.start, g.end, [(s, e) for s, e, _ in dets]) >= 0.8:
                t.any_type += 1
        for s, e, typ in dets:
            gold_type = PRECISION_TYPES.get(typ)
            if gold_type is None:
                other[typ] += 1
                continue
            t = tallies[gold_type]
            t.predicted += 1
            inside = sum(max(0, min(e, g.end) - max(s, g.start)) for g in doc.gold
                         if typ in COMPATIBLE[g.type])
            if inside * 2 >= (e - s):
                t.correct += 1
    return {"per_type": {k: v.as_dict() for k, v in tallies.items()},
            "other_types": dict(other.most_common())}


def run_ours(docs: list[EvalDoc], ner: str | None) -> tuple[list, float]:
    from preflight.core.config import DetectionSettings
    from preflight.core.pii.detector import PiiDetector

    det = PiiDetector(DetectionSettings(score_threshold=THRESHOLD), nlp_model_path=ner)
    det.load()
    if det.warnings:
        print("warning:", *det.warnings, file=sys.stderr)
    t0 = time.perf_counter()
    out = [[(s.start, s.end, s.type) for s in det.detect(d.text)] for d in docs]
    return out, time.perf_counter() - t0


def vanilla_analyzer(ner_path: str):
    """Presidio's AnalyzerEngine with its default configuration over ``ner_path``."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    from preflight.core.pii.recognizers.email import make_tldextract_offline

    make_tldextract_offline()
    conf_file = Path(__import__("presidio_analyzer").__file__).parent / "conf" / "default.yaml"
    provider = NlpEngineProvider(conf_file=str(conf_file))
    provider.nlp_configuration["models"] = [{"lang_code": "en", "model_name": ner_path}]
    return AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=["en"])


def run_vanilla(docs: list[EvalDoc], ner: str) -> tuple[list, float]:
    analyzer = vanilla_analyzer(ner)
    analyzer.analyze("warm up", language="en")
    t0 = time.perf_counter()
    out = [[(r.start, r.end, r.entity_type)
            for r in analyzer.analyze(d.text, language="en", score_threshold=THRESHOLD)]
           for d in docs]
    return out, time.perf_counter() - t0


def resolve_ner_path(explicit: str | None) -> str:
    if explicit:
        return explicit
    from preflight.runtime.models import ModelManager

    return str(ModelManager().path("ner"))


def misses(docs: list[EvalDoc], detections, gold_type: str, limit: int = 15) -> list[str]:
    out = []
    for doc, dets in zip(docs, detections):
        for g in doc.gold:
            if g.type != gold_type:
                continue
            compatible = [(s, e) for s, e, typ in dets if typ in COMPATIBLE[g.type]]
            if _coverage(doc.text, g.start, g.end, compatible) < 0.8:
                ctx = doc.text[max(0, g.start - 40):g.end + 20].replace("\n", "⏎")
                out.append(f"{doc.text[g.start:g.end]!r}  in …{ctx}…")
    return out[:limit]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="heldout", choices=("dev", "heldout"))
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--docs", type=int, default=None, help="limit the number of documents")
    ap.add_argument("--no-vanilla", action="store_true")
    ap.add_argument("--show-misses", metavar="TYPE", action="append", default=[])
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)

    ner = resolve_ner_path(args.ner)
    docs = build_split(args.split, n_docs=args.docs)
    words = sum(len(d.text.split()) for d in docs)
    report: dict = {"split": args.split, "documents": len(docs), "words": words,
                    "gold_spans": sum(len(d.gold) for d in docs), "threshold": THRESHOLD}
    ours, t_ours = run_ours(docs, ner)
    report["ours"] = score(docs, ours)
    report["ours"]["seconds"] = round(t_ours, 2)
    if not args.no_vanilla:
        vanilla, t_van = run_vanilla(docs, ner)
        report["vanilla"] = score(docs, vanilla)
        report["vanilla"]["seconds"] = round(t_van, 2)

    print(f"split={args.split} docs={len(docs)} words={words} gold={report['gold_spans']} "
          f"threshold={THRESHOLD}")
    print(f"{'type':8} {'n':>4} | {'ours R':>7} {'exact':>6} {'P':>6} {'F2':>6} | "
          f"{'vanilla R':>9} {'P':>6} {'F2':>6}")
    for t in GOLD_TYPES:
        o = report["ours"]["per_type"][t]
        v = report.get("vanilla", {}).get("per_type", {}).get(t, {})
        fmt = lambda x: "   -  " if x is None else f"{x:6.3f}"  # noqa: E731
        print(f"{t:8} {o['gold']:4d} | {fmt(o['recall']):>7} {fmt(o['recall_exact'])} "
              f"{fmt(o['precision'])} {fmt(o['f2'])} | {fmt(v.get('recall')):>9} "
              f"{fmt(v.get('precision'))} {fmt(v.get('f2'))}")
    print("other detected types, ours:", report["ours"]["other_types"])
    if "vanilla" in report:
        print("other detected types, vanilla:", report["vanilla"]["other_types"])
        print(f"time: ours {t_ours:.2f}s, vanilla {report['vanilla']['seconds']:.2f}s "
              f"for {words} words")
    for t in args.show_misses:
        print(f"-- ours missed {t}:")
        for line in misses(docs, ours, t):
            print("  ", line)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
