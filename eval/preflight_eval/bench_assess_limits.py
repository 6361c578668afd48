"""Wall time and peak memory of `preflight assess` on a 5,000-word document (cold start).

    python -m preflight_eval.bench_assess_limits [--words 5000] [--method dx --epsilon 30]
                                                [--via cli|direct] [--seed 0] [--json out.json]

Builds a deterministic document of ``--words`` words (business prose with names, e-mail
addresses and phone numbers, so detection has work), then runs the assessment in a fresh
child process and reports the child's wall time and peak resident memory (``wait4``'s
``ru_maxrss``), with the conditions: CPU count, models folder, method.

``--via cli`` (default) runs ``python -m preflight assess FILE --json``: exactly
what a user runs. ``--via direct`` runs the same steps (detect, sanitize, refine) with the
real models composed here, for trees where the CLI is not wired to the models yet.
Targets (issue 10): ≤ 60 s and ≤ 1.5 GB on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 60.0
TARGET_RSS_MB = 1536.0

_FIRST = ("Maria", "Peter", "Aisha", "Lukas", "Chen", "Sofia", "Omar", "Ingrid", "Rahul", "Elena")
_LAST = ("Lopez", "Novak", "Haddad", "Berg", "Wang", "Rossi", "Khan", "Larsen", "Mehta", "Ivanova")
_SUBJECTS = ("the procurement team", "our finance department", "the regional office",
             "the steering committee", "the support desk", "the warehouse crew")
_VERBS = ("reviewed", "postponed", "approved", "questioned", "summarized", "escalated")
_OBJECTS = ("the quarterly budget", "the supplier contract", "the migration plan",
            "the audit findings", "the hiring schedule", "the customer complaints",
            "the travel policy", "the safety inspection report")
_TAILS = ("before the end of the month", "after a long discussion", "without objections",
          "pending legal advice", "to reduce operating costs", "at the board's request")


def build_document(words: int, seed: int = 7) -> str:
    """About ``words`` words of plausible business prose with PII in every paragraph."""
    rnd = random.Random(seed)
    out: list[str] = []
    count = 0
    while count < words:
        para = []
        for _ in range(rnd.randint(4, 7)):
            first, last = rnd.choice(_FIRST), rnd.choice(_LAST)
            sentence = (f"{first} {last} said that {rnd.choice(_SUBJECTS)} "
                        f"{rnd.choice(_VERBS)} {rnd.choice(_OBJECTS)} {rnd.choice(_TAILS)}.")
            if rnd.random() < 0.25:
                sentence += (f" Contact {first.lower()}.{last.lower()}@example.com or call "
                             f"+1 415-555-{rnd.randint(1000, 9999)}.")
            para.append(sentence)
            count += len(sentence.split())
        out.append(" ".join(para))
    return "\n\n".join(out) + "\n"


def _child_direct(path: str, method: str, epsilon: float | None, seed: int) -> int:
    """The steps of `preflight assess`, with the real models composed here."""
    from preflight.core.pii.detector import PiiDetector
    from preflight.core.sanitize.base import SanitizeParams, create_mechanism
    from preflight.core.textio import read_document
    from preflight.core.utility.assess import UtilityAssessor
    from preflight.runtime.embedder import SentenceEmbedder
    from preflight.runtime.slm import LocalSLM

    phases: dict[str, float] = {}
    t = time.monotonic()

    def lap(name: str) -> None:
        nonlocal t
        now = time.monotonic()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        phases[name] = f"{now - t:.1f} s, peak RSS so far {peak:.0f} MB"
        t = now

    text = read_document(path)
    spans = PiiDetector().detect(text)
    lap("detect (incl. loading spaCy)")
    sanitized = create_mechanism(method).sanitize(
        text, spans, SanitizeParams(seed=seed, epsilon=epsilon))
    lap(f"sanitize ({method})")
    with LocalSLM() as slm:
        result = UtilityAssessor(slm, SentenceEmbedder()).refine(text, sanitized, spans)
    lap("refine (SLM + embedder, incl. loading)")
    json.dump(result.to_json(), sys.stdout)
    print("PHASES " + json.dumps(phases), file=sys.stderr)
    return 0


def run_child(cmd: list[str], env: dict[str, str]) -> dict:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        # wait4, not wait(): it returns this child's own rusage (ru_maxrss in KiB on Linux).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"exit_code": code, "wall_s": round(wall, 1),
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                "peak_rss_mb": round(usage.ru_maxrss / 1024),
                "stdout": out.read().decode("utf-8", "replace"),
                "stderr": err.read().decode("utf-8", "replace")[-2000:]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--words", type=int, default=5000)
    p.add_argument("--method", default="dx")
    p.add_argument("--epsilon", type=float, default=30.0)
    p.add_argument("--via", choices=("cli", "direct"), default="cli")
    p.add_argument("--seed", type=int, default=0,
                   help="d_X noise seed (fixed, so runs before/after a change predict alike)")
    p.add_argument("--json", metavar="FILE", help="also write the numbers here")
    p.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child_direct(args.child, args.method,
                             args.epsilon if args.method == "dx" else None, args.seed)

    doc = build_document(args.words)
    with tempfile.TemporaryDirectory(prefix="pf-bench-") as tmp:
        path = Path(tmp) / "doc.txt"
        path.write_text(doc, encoding="utf-8")
        env = dict(os.environ)
        env.setdefault("PREFLIGHT_HOME", str(Path(tmp) / "home"))   # cold: empty caches
        eps = ["--epsilon", str(args.epsilon)] if args.method == "dx" else []
        if args.via == "cli":
            cmd = [sys.executable, "-m", "preflight", "assess", str(path),
                   "--method", args.method, *eps, "--seed", str(args.seed), "--json"]
        else:
            cmd = [sys.executable, "-m", "preflight_eval.bench_assess_limits", "--child",
                   str(path), "--method", args.method, *eps, "--seed", str(args.seed)]
        res = run_child(cmd, env)
    report = {
        "words": len(doc.split()), "method": args.method,
        "epsilon": args.epsilon if args.method == "dx" else None, "seed": args.seed,
        "via": args.via,
        "cpus": os.cpu_count(), "models_dir": os.environ.get("PREFLIGHT_MODELS_DIR", "(default)"),
        "cold_start": True, "exit_code": res["exit_code"], "wall_s": res["wall_s"],
        "cpu_s": res["cpu_s"], "peak_rss_mb": res["peak_rss_mb"],
        "load_average_1min": round(os.getloadavg()[0], 1),
        "within_targets": res["exit_code"] == 0 and res["wall_s"] <= TARGET_SECONDS
        and res["peak_rss_mb"] <= TARGET_RSS_MB,
    }
    if res["exit_code"] == 0:
        try:
            out = json.loads(res["stdout"])
            report["predicted_utility"] = out.get("predicted_utility")
            report["notes"] = out.get("notes")
        except ValueError:
            pass
    for line in res["stderr"].splitlines():
        if line.startswith("PHASES "):
            report["phases_s"] = json.loads(line[len("PHASES "):])
    if res["exit_code"] != 0:
        report["stderr_tail"] = res["stderr"].strip().splitlines()[-3:]
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0 if report["within_targets"] else 1


if __name__ == "__main__":
    sys.exit(main())
