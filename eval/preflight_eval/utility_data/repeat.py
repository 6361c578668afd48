"""How much of E is the stand-in's own sampling: the same request, sent again.

    nice python -m preflight_eval.utility_data.repeat --time-limit 40     # send, resumably
    python -m preflight_eval.utility_data.repeat --report [--target cosine]   # read them

The target E of a row is the realized score of one sampled answer (the stand-in runs with
its server's default sampling, as a provider does): the cosine of the answer and the
document, discounted by the answer's unsupported facts (``--target cosine``: the cosine
alone). A second answer to
the very same request reads a different E; no regressor can predict that part, so it
sets a floor under Failed (the share of rows predicted more than 0.1 away) that the
features cannot lower. This script measures it.

It takes ``--rows`` rows of the generator's file (``<stand-in role>.jsonl.gz``) in a
seeded order, of every split and kind whose answer needs no restoring (the unsanitized
text, d_X, redaction, generalization: E is then computed from the answer as sent, so
the stored E and a new one compare like for like), rebuilds each row's request through
the product's send path from its stored payload — its sha256 must equal the stored one,
or the row is skipped and counted — and sends it ``--repeats`` more times. Each answer is
appended to ``repeats-<stand-in role>.jsonl.gz`` (one gzip member per answer; a rerun
continues where the last one stopped).

The report pools the answers of each request, over every row, per setting kind and per
kind of document: the within-request standard deviation σ of E (the pooled unbiased
variance), the share of answer pairs more than 0.1 apart, and the floor itself: the
share of answers more than 0.1 from their request's own mean, estimated without bias
from the pairs (two answers of one request differ by √2·(their distance to the mean) in
spread: the share of pairs more than 0.1·√2 apart), and under a normal spread,
2·Φ(−0.1/σ).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import logging
import math
import signal
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from preflight.core.types import SanitizedText
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.generate import (
    ProductSender, against_standin, standin_provider,
)
from preflight_eval.utility_data.settings import Setting
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.utility_data.repeat")

#: Kinds whose answer is not restored: their stored E is computed from the answer as sent.
PLAIN_KINDS = ("original", "dx", "redact", "generalize")
#: Distance from the prediction that counts as failed (Wasted $ or Wasted ε).
MARGIN = 0.1


def _order(row: dict[str, Any], seed: int) -> str:
    return hashlib.sha256(f"{seed}|{row['doc_id']}|{row['key']}".encode()).hexdigest()


def chosen_rows(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows with an answer that needed no restoring, in a seeded order."""
    usable = [r for r in rows if r["setting"]["kind"] in PLAIN_KINDS and not r.get("error")
              and r.get("answer") and r.get("answer") == r.get("answer_raw")
              and not r["setting"].get("corrected")]
    return sorted(usable, key=lambda r: _order(r, seed))[:n]


def originals(rows: list[dict[str, Any]]) -> dict[str, str]:
    return {r["doc_id"]: r["text"] for r in rows if r["setting"]["kind"] == "original"}


def _send_all(args: argparse.Namespace, url: str, detector: Any, tmp: Path) -> int:
    rows = read_rows(Path(args.data) / f"{args.cloud_role}.jsonl.gz")
    texts = originals(rows)
    out = Path(args.data) / f"repeats-{args.cloud_role}.jsonl.gz"
    writer = ShardWriter(out)
    have: dict[tuple[str, str], int] = {}
    for r in read_rows(out):
        have[(r["doc_id"], r["key"])] = have.get((r["doc_id"], r["key"]), 0) + 1
    base = url.rstrip("/")
    sender = ProductSender(standin_provider(base if base.endswith("/v1") else base + "/v1",
                                            args.cloud_role), detector, tmp / "audit.sqlite3")
    deadline = time.monotonic() + args.time_limit * 60
    spans: dict[str, Any] = {}
    for row in chosen_rows(rows, args.rows, args.seed):
        key = (row["doc_id"], row["key"])
        original = texts[row["doc_id"]]
        while have.get(key, 0) < args.repeats:
            if time.monotonic() > deadline:
                log.warning("time limit reached; rerun the same command to resume")
                return 0
            if row["doc_id"] not in spans:
                spans[row["doc_id"]] = detector.detect(original)
            setting = Setting(**row["setting"])
            sanitized = SanitizedText(row["payload"], setting.method)
            plan = sender.plan(original, sanitized, spans[row["doc_id"]], None, setting)
            sha = hashlib.sha256(plan.payload).hexdigest()
            entry: dict[str, Any] = {
                "doc_id": row["doc_id"], "key": row["key"], "repeat": have.get(key, 0) + 1,
                "request_sha256": sha, "same_request": sha == row["request_sha256"],
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            if not entry["same_request"]:
                log.warning("%s %s: the rebuilt request differs from the stored one; "
                            "recorded, not sent", *key)
                writer.append(entry)
                have[key] = args.repeats
                break
            t0 = time.monotonic()
            result = sender.send(plan)
            entry.update(answer=result.answer_raw, finish_reason=result.finish_reason,
                         seconds=round(time.monotonic() - t0, 2))
            writer.append(entry)
            have[key] = have.get(key, 0) + 1
            log.info("%s %s repeat %d: %.0f s", *key, entry["repeat"], entry["seconds"])
    log.info("done: every chosen row has %d repeats", args.repeats)
    return 0


def floor_report(groups: list[list[float]]) -> dict[str, Any]:
    """The spread of E within requests (each group: the E of one request's answers)."""
    groups = [g for g in groups if len(g) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return {"requests": 0}
    var = sum(sum((e - statistics.fmean(g)) ** 2 for e in g) for g in groups) / dof
    pairs = [abs(a - b) for g in groups for a, b in itertools.combinations(g, 2)]
    sigma = math.sqrt(var)
    return {
        "requests": len(groups), "answers": sum(len(g) for g in groups),
        "sigma": round(sigma, 4),
        "pairs": len(pairs),
        "pairs_apart": round(sum(d > MARGIN for d in pairs) / len(pairs), 4),
        "floor_pairs": round(sum(d > MARGIN * math.sqrt(2) for d in pairs) / len(pairs), 4),
        "floor_normal": round(math.erfc(MARGIN / sigma / math.sqrt(2)), 4) if sigma else 0.0,
    }


def report_groups(row: dict[str, Any]) -> tuple[str, ...]:
    """The report's lines a stored row counts in: all, its setting kind, its document kind."""
    return ("all", row["setting"]["kind"], f"{row['doc_kind']} documents")


def table_order(groups: Any) -> list[str]:
    """All first, then the setting kinds, then the kinds of document, each sorted."""
    documents = sorted(g for g in groups if g.endswith(" documents"))
    return ["all", *sorted(set(groups) - {"all", *documents}), *documents]


def report(args: argparse.Namespace) -> int:
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.utility.excerpt import original_excerpt

    rows = read_rows(Path(args.data) / f"{args.cloud_role}.jsonl.gz")
    repeats = read_rows(Path(args.data) / f"repeats-{args.cloud_role}.jsonl.gz")
    if not repeats:
        print("no repeats yet: run python -m preflight_eval.utility_data.repeat", file=sys.stderr)
        return 1
    texts, stored = originals(rows), {(r["doc_id"], r["key"]): r for r in rows}
    services = build_services(Settings())
    embedder = services.embedder()
    detector = None
    if args.target == "faithful":
        from preflight_eval.utility_data.features import faithful_fields

        detector = services.detector()
        detector.load()

    def score(key: tuple[str, str], answer: str, excerpt: str) -> float:
        cosine = embedder.similarity(excerpt, answer)
        if detector is None:
            return cosine
        row = stored[key]
        payload = None if row["setting"]["kind"] == "original" else row["payload"]
        return faithful_fields(texts[key[0]], answer, cosine, detector, payload)["target"]

    answers: dict[tuple[str, str], list[str]] = {}
    skipped = 0
    for r in repeats:
        if not r.get("same_request"):
            skipped += 1
        elif r.get("answer"):
            answers.setdefault((r["doc_id"], r["key"]), []).append(r["answer"])
    by_kind: dict[str, list[list[float]]] = {}
    for key, more in answers.items():
        excerpt = original_excerpt(texts[key[0]])
        group = [score(key, a, excerpt) for a in [stored[key]["answer"], *more]]
        for kind in report_groups(stored[key]):
            by_kind.setdefault(kind, []).append(group)
    print(f"stand-in {args.cloud_role}, E = the {args.target} score: repeated requests "
          f"(rebuilt requests that differed from the stored one, not sent: {skipped})")
    print("| rows | requests | answers | σ of E within a request | pairs > 0.1 apart | "
          "floor of Failed (pairs) | floor (normal) |")
    print("|---|---|---|---|---|---|---|")
    for kind in table_order(by_kind):
        f = floor_report(by_kind[kind])
        if f["requests"]:
            print(f"| {kind} | {f['requests']} | {f['answers']} | {f['sigma']:.3f} | "
                  f"{100 * f['pairs_apart']:.1f} % | {100 * f['floor_pairs']:.1f} % | "
                  f"{100 * f['floor_normal']:.1f} % |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    ap.add_argument("--rows", type=int, default=60, help="rows whose request is repeated")
    ap.add_argument("--repeats", type=int, default=2, help="new answers per request")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=30.0, help="minutes; rerun resumes")
    ap.add_argument("--n-threads", type=int, default=1, help="llama.cpp server threads")
    ap.add_argument("--report", action="store_true", help="print the floor from the answers")
    ap.add_argument("--target", choices=("faithful", "cosine"), default="faithful",
                    help="--report: E as the product's realized score (the cosine "
                         "discounted by unsupported facts) or the cosine alone")
    args = ap.parse_args(argv)
    if args.report:
        return report(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    services = build_services(Settings())
    detector = services.detector()
    detector.load()
    if detector.warnings:
        log.error("the detector is degraded: %s", " ".join(detector.warnings))
        return 1
    with tempfile.TemporaryDirectory(prefix="pf-utility-repeat-") as tmp:
        return against_standin(services.models.path(args.cloud_role), args.n_threads,
                               Path(tmp), lambda url: _send_all(args, url, detector, Path(tmp)))


if __name__ == "__main__":
    raise SystemExit(main())
