"""Detection speed per 1,000 words (median after warm-up) and peak memory, Preflight's
detector beside vanilla Presidio in the same process, on the same text.

Run:  python -m preflight_eval.bench_detect [--runs 15] [--ner PATH]

Also measures the window's live-preview path: the same 1,000 words cut into paragraphs of
about 60 words, one paragraph edited per run, ``detect_incremental`` timed (only the
edited paragraph is analyzed again).

The text is the first 1,000 words of the held-out PII evaluation set (real paper text
with inserted fictional PII, see pii_corpus.py). Peak memory is the process's maximum
resident set size (resource.getrusage), read after each detector has loaded and run;
vanilla loads second, so its figure includes ours.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def thousand_words() -> str:
    from preflight_eval.pii_corpus import build_split

    text = "\n".join(d.text for d in build_split("heldout", n_docs=8))
    words = text.split(" ")
    return " ".join(words[:1000])


def time_runs(fn, text: str, runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds per run (CPU time is less disturbed by other processes
    sharing the cores)."""
    fn(text)  # warm-up (lazy loading, regex caches)
    fn(text)
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn(text)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def incremental_runs(detector, text: str, runs: int) -> list[float]:
    """Seconds per ``detect_incremental`` call after a one-word edit in one paragraph."""
    words = text.split()
    paras = [" ".join(words[i:i + 60]) for i in range(0, len(words), 60)]
    detector.detect_incremental("\n\n".join(paras))
    times = []
    for i in range(runs):
        k = i % len(paras)
        paras[k] = paras[k] + (" too" if i % 2 == 0 else " also")
        edited = "\n\n".join(paras)
        t0 = time.perf_counter()
        detector.detect_incremental(edited)
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from preflight.core.pii.detector import PiiDetector
    from preflight_eval.eval_pii import resolve_ner_path, vanilla_analyzer

    ner = resolve_ner_path(args.ner)
    text = thousand_words()
    n_words = len(text.split())
    base_mb = peak_rss_mb()

    t0 = time.perf_counter()
    ours = PiiDetector(nlp_model_path=ner)
    ours.load()
    load_ours = time.perf_counter() - t0
    ours_times, ours_cpu = time_runs(ours.detect, text, args.runs)
    ours_mb = peak_rss_mb()
    edit_times = incremental_runs(ours, text, args.runs)

    t0 = time.perf_counter()
    vanilla = vanilla_analyzer(ner)
    vanilla.analyze("warm up", language="en")
    load_vanilla = time.perf_counter() - t0
    vanilla_times, vanilla_cpu = time_runs(lambda t: vanilla.analyze(t, language="en"), text,
                                           args.runs)
    both_mb = peak_rss_mb()

    per_k = 1000 / n_words
    result = {
        "words": n_words,
        "runs": args.runs,
        "ours_ms_per_1000_words_median": round(statistics.median(ours_times) * 1000 * per_k, 1),
        "ours_ms_min": round(min(ours_times) * 1000 * per_k, 1),
        "ours_cpu_ms_median": round(statistics.median(ours_cpu) * 1000 * per_k, 1),
        "ours_incremental_ms_per_edit_median": round(statistics.median(edit_times) * 1000, 1),
        "vanilla_ms_per_1000_words_median": round(
            statistics.median(vanilla_times) * 1000 * per_k, 1),
        "vanilla_ms_min": round(min(vanilla_times) * 1000 * per_k, 1),
        "vanilla_cpu_ms_median": round(statistics.median(vanilla_cpu) * 1000 * per_k, 1),
        "ratio_ours_to_vanilla_cpu": round(statistics.median(ours_cpu)
                                           / statistics.median(vanilla_cpu), 2),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "ours_load_s": round(load_ours, 2),
        "vanilla_load_s": round(load_vanilla, 2),
        "peak_rss_mb_before": round(base_mb, 1),
        "peak_rss_mb_after_ours": round(ours_mb, 1),
        "peak_rss_mb_after_vanilla": round(both_mb, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:36} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
