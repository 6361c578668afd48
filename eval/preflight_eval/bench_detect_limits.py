"""Time and peak memory of detecting PII in one long document (about 1 MB).

Run:  python -m preflight_eval.bench_detect_limits [--mb 1.0] [--ner PATH] [--json]

The text is the PII evaluation documents (real aclsum paper text with fictional Faker PII
inserted, see pii_corpus.py) joined as paragraphs and repeated until it reaches the
requested size. Each measurement runs in a fresh child process, which reports its own peak resident set
size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``: importing, loading the spaCy model
and detecting) and the wall and CPU time of the detection call (CPU time is the fairer
figure on a machine shared with other work):

- cold: the child imports Preflight, loads the model and detects (first use);
- warm: the child first detects a short text (engine built, caches filled), then the
  long document is timed alone.

``total_s`` is the child's whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from preflight.core.pii.detector import PiiDetector
text = open(sys.argv[1], encoding="utf-8").read()
det = PiiDetector(nlp_model_path=sys.argv[2])
if sys.argv[3] == "warm":
    det.detect("Jane Roe wrote to jane.roe@example.com about card 4111 1111 1111 1111.")
t1, c1 = time.perf_counter(), time.process_time()
spans = det.detect(text)
t2, c2 = time.perf_counter(), time.process_time()
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"detect_s": t2 - t1, "detect_cpu_s": c2 - c1, "total_s": t2 - t0,
                  "child_peak_kb": peak_kb, "spans": len(spans), "warnings": det.warnings}))
"""


def long_text(target_chars: int) -> str:
    """Evaluation documents (dev, then held-out) joined as paragraphs, repeated to size."""
    from preflight_eval.pii_corpus import build_split

    docs = [d.text for split in ("dev", "heldout") for d in build_split(split, n_docs=60)]
    parts: list[str] = []
    size = 0
    while size < target_chars:
        for doc in docs:
            parts.append(doc)
            size += len(doc) + 2
            if size >= target_chars:
                break
    return "\n\n".join(parts)[:target_chars]


def measure(text_path: Path, ner: str, mode: str) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(text_path), ner, mode],
                          capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the detection child failed:\n{proc.stderr[-2000:]}")
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(mode=mode, child_wall_s=round(wall, 2),
               peak_rss_mb=round(out.pop("child_peak_kb") / scale, 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=1.0, help="document size in MB of text")
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from preflight_eval.eval_pii import resolve_ner_path

    ner = resolve_ner_path(args.ner)
    text = long_text(int(args.mb * 1_000_000))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.txt"
        path.write_text(text, encoding="utf-8")
        results = [measure(path, ner, mode) for mode in args.modes.split(",")]
    summary = {"chars": len(text), "words": len(text.split()), "cpus": os.cpu_count(),
               "load_average_1min": round(os.getloadavg()[0], 2), "runs": results}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"document: {summary['chars']:,} chars, {summary['words']:,} words; "
          f"{summary['cpus']} CPUs, load average {summary['load_average_1min']}")
    for r in results:
        print(f"{r['mode']:5s}  detect {r['detect_s']:7.1f} s wall, {r['detect_cpu_s']:6.1f} s CPU"
              f"   child total {r['total_s']:7.1f} s   peak RSS {r['peak_rss_mb']:7.1f} MB"
              f"   spans {r['spans']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
