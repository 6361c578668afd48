"""Speed and memory of the utility assessor on this machine (medians).

    python -m preflight_eval.bench_utility [--runs 5] [--json out.json]

Measures, on a ~500-token document (ACLSum abstract + introduction), with the default
SLM (SmolLM2-135M Q4_1), all-mpnet-base-v2 and the shipped regressor:

* fast prediction: ``DxPrepared.at(ε)`` + fast features + regressor (target ≤ 50 ms), and
  the features + regressor part alone;
* refined prediction at one ε with the SLM's answer on the original already cached
  (target ≤ 5 s);
* "Find best ε" as the product runs it (the instant curve alone; target ≤ 10 s) from a
  cold cache (a new assessor, the embedder's cache emptied) and again warm, at the shipped
  default minimum utility, beside the search with local-model checks it replaced
  (``preflight_eval.refined_search``), cold, on the same preparations, with the ratio;
* where a refined step's time goes: the SLM's answer, its perplexity pass, the
  embeddings (the same calls, timed through the assessor's own collaborators); and the
  same step's embeddings with torch on one thread or every core, windows one at a time
  or two per batch (two more copies of the embedder, loaded after the peak memory);
* peak resident memory of the process with every model loaded.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS
from preflight.core.utility.assess import UtilityAssessor
from preflight.core.utility.excerpt import excerpts
from preflight.core.utility.recommend import prepared_range, recommend
from preflight_eval.refined_search import recommend_refined


def bench_document(target_tokens: int, count_tokens) -> str:
    import aclsum

    from preflight_eval.utility_dataset import _detok

    path = Path(aclsum.__file__).parent / "dataset" / "test.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        sents = [_detok(s) for s in rec["sentences"]["abstract"] + rec["sentences"]["introduction"]]
        text = ""
        for s in sents:
            candidate = (text + " " + s).strip()
            if count_tokens(candidate) > target_tokens:
                break
            text = candidate
        if count_tokens(text) >= target_tokens * 0.9:
            return text
    raise SystemExit("no ACLSum document is long enough")


class _Timed:
    """Delegates to ``inner`` and adds up the seconds spent in the ``timed`` methods."""

    def __init__(self, inner, timed: tuple[str, ...]) -> None:
        self._inner, self._timed = inner, timed
        self.seconds: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str):
        attr = getattr(self._inner, name)
        if name not in self._timed:
            return attr

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - t
        return timed


def _embedding_grid(model_dir: Path, texts: list[list[str]]) -> dict[str, Any]:
    """A refined step's embeddings (the sanitized excerpt and the SLM's answer, as the
    refined runs above made them) timed with torch on one thread and on every core, and
    with windows one at a time or two per batch, in this process (medians over the
    runs; nothing cached). Run after the peak memory is taken: two more model copies."""
    import torch

    from preflight.runtime.embedder import SentenceEmbedder

    embedders = {b: SentenceEmbedder(model_dir, batch_size=b, cache_size=0) for b in (1, 2)}
    default_threads = torch.get_num_threads()
    grid: dict[str, Any] = {}
    for threads in sorted({1, default_threads}):
        torch.set_num_threads(threads)
        for batch, emb in embedders.items():
            emb.load()
            seconds = []
            for pair in texts:
                t = time.perf_counter()
                emb.embed(pair)
                seconds.append(time.perf_counter() - t)
            grid[f"torch_threads_{threads}_batch_{batch}"] = round(statistics.median(seconds), 3)
    torch.set_num_threads(default_threads)
    first = f"torch_threads_{default_threads}"
    grid["embeddings_batch_of_2_over_1"] = round(grid[f"{first}_batch_2"]
                                                 / grid[f"{first}_batch_1"], 2)
    grid["one_thread_over_default"] = round(grid["torch_threads_1_batch_1"]
                                            / grid[f"{first}_batch_1"], 2)
    return grid


def _forget_embeddings(embedder) -> None:
    """Empty the embedder's cache of texts it has embedded (a cold run starts without)."""
    cache = getattr(getattr(embedder, "_inner", embedder), "_cache", None)
    if cache is not None:
        cache.clear()


def _ms(values: list[float]) -> float:
    return round(1000 * statistics.median(values), 2)


def _cold_assessor(embedder: Any, slm: Any, predictor: Any) -> UtilityAssessor:
    """A new assessor over an embedder whose cache was emptied: as in a new process."""
    _forget_embeddings(embedder)
    return UtilityAssessor(slm, embedder, predictor)


def _timed_search(search: Any, times: list[float], doc: str, prep: Any, assessor: Any,
                  min_utility: float, spans: list) -> Any:
    """``search(...)``'s result; its seconds appended to ``times``."""
    t = time.perf_counter()
    rec = search(doc, prep, assessor, min_utility, spans=spans)
    times.append(time.perf_counter() - t)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="refined/recommend repetitions")
    ap.add_argument("--fast-runs", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=500)
    ap.add_argument("--min-utility", type=float, default=None,
                    help="default: the minimum derived from the training data (Settings' default)")
    ap.add_argument("--slm-role", default=None,
                    help="manifest role of the assessor's SLM (default: the app's default)")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch's threads for the embedder (default: the product's choice, "
                         "one if llama.cpp was built with OpenMP, else one per core); e.g. 2 "
                         "beside an OpenMP build to measure what sharing libgomp costs")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from preflight.app.services import build_services
    from preflight.core.config import Settings

    load_start = round(os.getloadavg()[0], 2)
    t0 = time.perf_counter()
    settings = Settings()
    if args.min_utility is None:
        args.min_utility = settings.policy.min_utility
    services = build_services(settings)
    if args.slm_role:
        from preflight.runtime.slm import LocalSLM

        slm = LocalSLM(services.models.path(args.slm_role), n_threads=2)
    else:
        slm = services.slm()
    slm.load()
    if args.torch_threads is None:
        embedder = services.embedder()
    else:
        from preflight.runtime.embedder import SentenceEmbedder

        embedder = SentenceEmbedder(services.models.path("similarity"),
                                    torch_threads=args.torch_threads)
    embedder.load()
    timed_slm = _Timed(slm, ("run", "perplexity"))
    timed_embedder = _Timed(embedder, ("embed", "similarity"))
    if args.slm_role:     # that SLM's features need the regressor fitted on them
        from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

        predictor = UtilityPredictor.load(shipped_bundle_path(args.slm_role))
    else:
        predictor = services.predictor()
    assessor = UtilityAssessor(timed_slm, timed_embedder, predictor)
    detector = services.detector()
    mech = services.dx()
    load_s = time.perf_counter() - t0

    doc = bench_document(args.tokens, slm.count_tokens)
    n_tokens = slm.count_tokens(doc)
    spans = detector.detect(doc)
    t = time.perf_counter()
    prepared = mech.prepare(doc, spans, SanitizeParams(seed=1, scope="all"))
    prepare_s = time.perf_counter() - t
    lo, hi = prepared_range(prepared)
    grid = [math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * i / (args.fast_runs - 1))
            for i in range(args.fast_runs)]

    fast_total, fast_model = [], []
    for eps in grid:
        t = time.perf_counter()
        san = prepared.at(eps)
        t_mid = time.perf_counter()
        assessor.fast(doc, san, spans)
        t_end = time.perf_counter()
        fast_total.append(t_end - t)
        fast_model.append(t_end - t_mid)

    t = time.perf_counter()
    assessor.original_answer(doc)
    original_s = time.perf_counter() - t
    timed_slm.seconds.clear()
    timed_embedder.seconds.clear()
    refined, embedded = [], []
    for i in range(args.runs):
        eps = math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * (i + 0.5) / args.runs)
        t = time.perf_counter()
        san = prepared.at(eps)
        res = assessor.refine(doc, san, spans)
        refined.append(time.perf_counter() - t)
        embedded.append([excerpts(doc, san).sanitized, res.slm_answer or ""])

    parts = {"slm_answer": timed_slm.seconds["run"],
             "slm_perplexity": timed_slm.seconds["perplexity"],
             "embeddings": sum(timed_embedder.seconds.values())}
    split = {k: round(100 * v / sum(refined), 1) for k, v in parts.items()}
    # "Find best ε" as the product runs it (the instant curve alone, no local model) cold
    # (nothing read yet: a fresh assessor, the embedder's cache emptied, as in a new
    # process) and warm (the window's usual path: the document's predictions already made)
    # on the same d_X preparations, and, as the baseline in the same process, the search
    # that checked candidates with the local model (preflight_eval.refined_search, the
    # product's before issue 47), cold, on the same preparations.
    recs, decisions, warm_times, refined_times, refined_calls = [], [], [], [], []
    for i in range(max(1, args.runs // 2)):
        prep = mech.prepare(doc, spans, SanitizeParams(seed=100 + i, scope="all"))
        cold = _cold_assessor(embedder, slm, assessor.predictor)
        rec = _timed_search(recommend, recs, doc, prep, cold, args.min_utility, spans)
        decisions.append(rec.decision)
        _timed_search(recommend, warm_times, doc, prep, cold, args.min_utility, spans)
        cold = _cold_assessor(embedder, slm, assessor.predictor)
        rec = _timed_search(recommend_refined, refined_times, doc, prep, cold,
                            args.min_utility, spans)
        refined_calls.append(rec.slm_calls)

    import torch

    from preflight.runtime.llama_open import built_with_openmp

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    embedding_grid = _embedding_grid(services.models.path("similarity"), embedded)
    result = {
        "slm_role": args.slm_role or "slm (default)",
        "answer_tokens": ASSESSOR_ANSWER_TOKENS,
        "torch_threads": torch.get_num_threads(),
        "llama_cpp_openmp": built_with_openmp(),
        "document_tokens": n_tokens,
        "pii_spans": len(spans),
        "load_all_models_s": round(load_s, 2),
        "dx_prepare_s": round(prepare_s, 3),
        "fast_prediction_ms": {"median_incl_sanitize": _ms(fast_total),
                               "median_features_and_regressor": _ms(fast_model),
                               "runs": len(grid), "target": 50},
        "slm_on_original_s": round(original_s, 2),
        "refined_prediction_s": {"median": round(statistics.median(refined), 2),
                                 "runs": len(refined), "target": 5,
                                 "share_pct": split},
        "recommendation_s": {"median": round(statistics.median(recs), 2),
                             "decisions": decisions, "target": 10,
                             "min_utility": args.min_utility,
                             "note": "cold: nothing read yet (new assessor, embedder "
                                     "cache emptied); the instant curve alone"},
        "recommendation_warm_s": {"median": round(statistics.median(warm_times), 2),
                                  "target": 10,
                                  "note": "the same preparations, searched again"},
        "recommendation_cold_over_warm": round(statistics.median(recs)
                                               / statistics.median(warm_times), 2),
        "recommendation_refined_cold_s": {
            "median": round(statistics.median(refined_times), 2),
            "slm_calls": refined_calls,
            "ratio_product_over_refined": round(statistics.median(recs)
                                                / statistics.median(refined_times), 3),
            "note": "the search with local-model checks (before issue 47), cold, on the "
                    "same preparations"},
        "load_average_1min": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
        "peak_rss_mb": round(peak_mb, 1),
        "refined_step_embeddings_s": embedding_grid,
    }
    print(json.dumps(result, indent=2))
    print(f"Find best ε: cold {result['recommendation_s']['median']} s, warm "
          f"{result['recommendation_warm_s']['median']} s, cold/warm "
          f"{result['recommendation_cold_over_warm']}; with local-model checks (before "
          f"issue 47) cold {result['recommendation_refined_cold_s']['median']} s "
          f"(SLM calls {refined_calls}), ratio "
          f"{result['recommendation_refined_cold_s']['ratio_product_over_refined']} "
          f"(same {len(recs)} preparation(s); load {load_start} → "
          f"{result['load_average_1min']['end']})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    slm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
