"""CLI cold start and peak memory: each command in a fresh process, median of N runs.

Baseline, measured in the same run: a bare `python -c pass` start, so the ratio column
stays comparable on a noisy machine.

    .venv/bin/python -m preflight_eval.bench_cli [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SAMPLE = (
    "Dear Ms. Carter,\n\nYour appointment with Dr. Alan Reyes is confirmed for March 3. "
    "Please call 415-555-0132 or write to emily.carter90@example.com if anything changes. "
    "Our office is at 482 Maple Street, Springfield, IL 62704.\n\nBest regards,\nJohn Miller\n"
)


def _run(cmd: list[str], stdin: bytes | None) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MB) of one child process (its own rusage via wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    if stdin:
        proc.stdin.write(stdin)
    proc.stdin.close()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode()[-500:]}")
    return elapsed, usage.ru_maxrss / 1024


def measure(cmd: list[str], runs: int, stdin: bytes | None = None) -> tuple[float, float]:
    results = [_run(cmd, stdin) for _ in range(runs)]
    return statistics.median(t for t, _ in results), max(m for _, m in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as home:
        os.environ["PREFLIGHT_HOME"] = home
        rows = [
            ("python -c pass (baseline)", [py, "-c", "pass"], None),
            ("preflight --version", [py, "-m", "preflight", "--version"], None),
            ("preflight info --json", [py, "-m", "preflight", "info", "--json"], None),
            ("preflight detect - --json (spaCy + Presidio load)",
             [py, "-m", "preflight", "detect", "-", "--json"], SAMPLE.encode()),
            ("preflight sanitize - --method placeholder --json",
             [py, "-m", "preflight", "sanitize", "-", "--method", "placeholder", "--json"],
             SAMPLE.encode()),
        ]
        base = None
        print(f"{'command':55s} {'median s':>9s} {'x baseline':>10s} {'peak RSS MB':>12s}")
        for label, cmd, stdin in rows:
            med, peak = measure(cmd, args.runs, stdin)
            base = base or med
            print(f"{label:55s} {med:9.2f} {med / base:10.1f} {peak:12.0f}")


if __name__ == "__main__":
    main()
