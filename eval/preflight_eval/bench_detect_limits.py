"""Time and peak memory of detecting PII in one long document (about 1 MB); with
``--identifiers``, how the send pipeline scales on a document that is mostly identifiers.

Run:  python -m preflight_eval.bench_detect_limits [--mb 1.0] [--ner PATH] [--json]
      python -m preflight_eval.bench_detect_limits --identifiers 5000,20000,70000

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

# --identifiers: one e-mail address per line (70,000 of them make 0.96 MB, under the
# 1 MB document limit: the document that had once not been sent after 20 minutes). The
# child runs what `preflight send` runs before asking: detection (the installed NER
# model), sanitization under the default policy, and the plan (the re-scan of the exact
# request body, which detects it again, its features and its token count). CPU seconds
# per stage; the growth exponent between two sizes is log(t2/t1) / log(n2/n1): 1 is
# linear, 2 quadratic.
_IDS_CHILD = r"""
import json, os, sys, time
from preflight.app.services import build_services
from preflight.core.config import ProviderSettings, load_settings, save_settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.tasks import SUMMARIZE
n = int(sys.argv[1])
text = "\n".join(f"u{i}@x{i % 97}.io" for i in range(n))
settings = load_settings()
settings.providers.append(ProviderSettings("loop", "http://127.0.0.1:9/v1", "m"))
save_settings(settings)
services = build_services()
session = services.send_session()
detector = services.detector()
detector.detect("Jane Roe wrote to jane.roe@example.com.")
policy = services.policy(None)
params = SanitizeParams(seed=1)
out = {"n": n, "chars": len(text)}
def stage(name, fn):
    c, w = time.process_time(), time.perf_counter()
    result = fn()
    out[name] = {"cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - w}
    return result
spans = stage("detect", lambda: detector.detect(text))
sanitized, vault = stage("sanitize", lambda: services.sanitize(policy, text, spans, params))
plan = stage("plan", lambda: session.prepare_send(
    text, "loop", policy.name, params, SUMMARIZE, spans=spans, sanitized=sanitized,
    vault=vault))
out.update(spans=len(spans), findings=len(plan.findings),
           left=sum(1 for s in spans if text[s.start:s.end] in sanitized.text))
print(json.dumps(out))
"""
IDS_STAGES = ("detect", "sanitize", "plan")


def measure_identifiers(n: int) -> dict:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, PREFLIGHT_HOME=home)
        env["PREFLIGHT_ORG_POLICY"] = str(Path(home) / "no-company-policy.toml")
        proc = subprocess.run([sys.executable, "-c", _IDS_CHILD, str(n)], capture_output=True,
                              text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the identifiers child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def identifiers_report(sizes: list[int], as_json: bool) -> int:
    import math

    runs = [measure_identifiers(n) for n in sizes]
    for prev, run in zip(runs, runs[1:]):
        run["growth_exponent"] = {
            st: round(math.log(max(run[st]["cpu_s"], 1e-3) / max(prev[st]["cpu_s"], 1e-3))
                      / math.log(run["n"] / prev["n"]), 2) for st in IDS_STAGES}
    summary = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2),
               "runs": runs}
    if as_json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{summary['cpus']} CPUs, load average {summary['load_average_1min']}; CPU s "
          "(wall s) per stage; growth exponent vs the previous size (1 linear, 2 quadratic)")
    for run in runs:
        cells = "  ".join(f"{st} {run[st]['cpu_s']:7.1f} ({run[st]['wall_s']:7.1f})"
                          for st in IDS_STAGES)
        grow = run.get("growth_exponent")
        tail = ("  exponent " + " ".join(f"{st} {grow[st]:.2f}" for st in IDS_STAGES)
                if grow else "")
        print(f"{run['n']:>7,} addresses ({run['chars']:>9,} chars): {cells}   spans "
              f"{run['spans']}, left {run['left']}, findings {run['findings']}{tail}")
    return 0


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
    ap.add_argument("--identifiers", metavar="N,N,...",
                    help="instead: documents of N e-mail addresses through detect, sanitize "
                         "and the plan's re-scan, with CPU time and growth per stage")
    args = ap.parse_args(argv)
    if args.identifiers:
        return identifiers_report([int(n) for n in args.identifiers.split(",")], args.json)

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
