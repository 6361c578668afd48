"""One assessment in-process vs through a company-hosted assessor on loopback (medians).

    python -m preflight_eval.bench_company_assessor [--runs 5] [--tokens 500] [--json out]

Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the default assessor SLM (the same
GGUF the in-process assessor uses, same context and thread count) and, in the same
process, times a full refined assessment of an ACLSum document sanitized by the
"identifiers" policy — the SLM's answer and perplexity on the original and on the
sanitized text, the embeddings and the regressor, with a cold per-document cache — once
with the in-process :class:`LocalSLM`, once with :class:`RemoteSLM` (through the
fallback wrapper the app uses), alternating. It also prints both perplexities of both
texts and the relative difference (the tolerance the real tests use).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.utility.assess import UtilityAssessor

from preflight_eval.bench_utility import bench_document
from preflight_eval.utility_common import local_cloud_server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=500)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.runtime.remote_fallback import FallbackSLM
    from preflight.runtime.remote_slm import RemoteSLM, bos_text
    from preflight.runtime.slm import LocalSLM

    services = build_services(Settings())
    path = services.models.path("slm")
    local = LocalSLM(path, n_threads=args.threads)
    embedder = services.embedder()
    embedder.load()
    doc = bench_document(args.tokens, local.count_tokens)
    n_tokens = local.count_tokens(doc)
    spans = services.detector().detect(doc)
    sanitized, _ = services.sanitize("identifiers", doc, spans, SanitizeParams(seed=1))
    services.release("detector")
    texts = {"original": doc, "sanitized": sanitized.text}

    with local_cloud_server(path, n_ctx=4096, n_threads=args.threads) as base:
        remote = FallbackSLM(RemoteSLM(base, score_prefix=bos_text(path)), local, base)
        times: dict[str, list[float]] = {"in_process": [], "loopback_server": []}
        ppl = {name: {"in_process": local.perplexity(t), "loopback_server":
                      remote.perplexity(t)} for name, t in texts.items()}
        for _ in range(args.runs):
            for name, slm in (("in_process", local), ("loopback_server", remote)):
                assessor = UtilityAssessor(slm, embedder, services.predictor())
                t = time.perf_counter()
                result = assessor.refine(doc, sanitized, spans)
                times[name].append(time.perf_counter() - t)
        place = remote.place()
    local.close()
    out = {
        "document_tokens": n_tokens, "sanitized_changes": len(sanitized.changes),
        "runs": args.runs, "threads": args.threads,
        "median_s": {k: round(statistics.median(v), 2) for k, v in times.items()},
        "runs_s": {k: [round(x, 2) for x in v] for k, v in times.items()},
        "perplexity": {name: {**{k: round(v, 3) for k, v in pair.items()},
                              "relative_difference": round(abs(
                                  pair["loopback_server"] / pair["in_process"] - 1), 4)}
                       for name, pair in ppl.items()},
        "assessor": place.to_json(),
        "predicted_last": round(result.best, 4),
    }
    json.dump(out, sys.stdout, indent=2)
    print()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
