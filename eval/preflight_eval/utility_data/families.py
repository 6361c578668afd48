"""Document families and the split by family (``data/utility/split.json``, version 2).

A split by document let the same wording sit on both sides: the 300 business documents
are recombinations of a few dozen paragraph templates, and e-mails of one mailing list
share footers, quoting styles and threads. Here every document gets a *family*, and a
whole family goes to one side, so that no paragraph or sentence wording (its values
masked) is in train + calibration and in test:

1. a key per kind: ``aclsum`` per paper; ``email`` per mailing list (``List-Id`` and
   the other list headers of the raw message; a message of no list by its sender), also
   joined to every message of the same sender address or the same thread (subject
   without its "Re:"/"[list]" prefixes); ``business`` one key for all (every document
   draws from one pool of shared paragraph templates: no template-disjoint split of
   them exists, measured: no assignment of templates to sides keeps a single test
   document); the new kinds their own (a case, a Debian package);
2. documents that share a masked unit — a paragraph, or a sentence of at least
   ``MIN_UNIT_WORDS`` lower-case words — are joined (union-find), whatever their key;
3. a family holding a frozen document (:mod:`.newkinds`) is on the test side (its other
   documents in ``test``); the other families fill ``test`` and then ``calibration`` in
   the order of a hash of their name, each as long as no kind exceeds its share of
   ``SHARES`` (a family larger than a kind's test share stays in train);
   the rest is ``train``.

    python -m preflight_eval.utility_data.families      # rewrite data/utility/split.json
"""

from __future__ import annotations

import argparse
import collections
import email
import email.policy
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from preflight.core.fsutil import atomic_write_text
from preflight_eval.utility_data.corpus import DATA_DIR, SEED, SPLIT_FILE, Document

VERSION = 2
SHARES = {"test": 0.20, "calibration": 0.10}        # of each kind's documents
MIN_UNIT_WORDS = 4
SCHEME = ("by family: aclsum per paper; e-mail per mailing list, joined by sender address "
          "and thread; business one family (shared paragraph templates); judgments per "
          "case, manuals per Debian package; documents sharing a masked paragraph or "
          f"sentence of >= {MIN_UNIT_WORDS} lower-case words joined; families holding a "
          "frozen document on the test side; the others by sha256('<seed>|family|<name>') "
          "order into test, then calibration, while no kind exceeds "
          + ", ".join(f"{int(v * 100)} % in {k}" for k, v in SHARES.items()) + "; rest train")


# ----------------------------------------------------------------- masked wording
def mask(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with the recorded values, digits and capitalized words masked."""
    for v in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(v, "\x00")
    text = re.sub(r"\d", "0", text)
    text = re.sub(r"\b[A-Z][\w'’.-]*", "\x01", text)
    return re.sub(r"\s+", " ", text).strip()


def units(doc: Document) -> set[str]:
    """The document's masked paragraphs and sentences that carry enough words to be a
    wording of their own (a greeting, a name or a bare URL is not)."""
    out = set()
    for para in re.split(r"\n\s*\n", doc.text):
        pieces = [para] + re.split(r"(?<=[.!?])\s+|\n", para)
        for piece in pieces:
            m = mask(piece, (t.value for t in doc.truth))
            if len(re.findall(r"\b[a-z]{2,}\b", m)) >= MIN_UNIT_WORDS:
                out.add(m)
    return out


# ----------------------------------------------------------------- e-mail keys
def _address(value: str) -> str:
    found = re.findall(r"[\w.+-]+@[\w.-]+", value or "")
    return found[0].lower() if found else ""


def thread_subject(subject: str) -> str:
    s = (subject or "").lower()
    while True:
        t = re.sub(r"^\s*(\[[^\]]*\]|(re|fw|fwd|aw)\s*(\[\d+\])?\s*:)\s*", "", s)
        if t == s:
            return re.sub(r"\s+", " ", s).strip()
        s = t


def email_keys(raw: str) -> list[str]:
    """The family keys of one raw message: its list, its sender, its thread."""
    msg = email.message_from_string(raw, policy=email.policy.compat32)
    keys = []
    list_id = re.search(r"<([^>]+)>", str(msg.get("List-Id", "")))
    mailing = msg.get("X-Mailing-List") or msg.get("Mailing-List") or ""
    post = _address(str(msg.get("List-Post", "")))
    if list_id:
        keys.append(f"list:{list_id.group(1).lower()}")
    elif _address(str(mailing)):
        keys.append(f"list:{_address(str(mailing))}")
    elif post:
        keys.append(f"list:{post}")
    sender = _address(str(msg.get("From", "")))
    if sender:
        keys.append(f"from:{sender}")
    subject = thread_subject(str(msg.get("Subject", "")))
    if len(subject.split()) >= 2:
        keys.append(f"thread:{subject}")
    return keys


def email_raw(cache: Path | None = None) -> dict[str, str]:
    """doc id → raw message of every SpamAssassin non-spam e-mail."""
    from preflight.core import paths
    from preflight_eval.utility_dataset import easy_ham

    return dict(easy_ham(cache or paths.install_root() / ".cache" / "spam-assassin"))


def kind_keys(doc: Document, raw_email: dict[str, str]) -> list[str]:
    if doc.kind == "email":
        return email_keys(raw_email.get(doc.doc_id, "")) or [doc.doc_id]
    if doc.kind == "business":
        return ["business:templates"]
    if doc.family:
        return [doc.family]
    return [doc.doc_id]


# ----------------------------------------------------------------- families
class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def families(docs: Sequence[Document], raw_email: dict[str, str]) -> dict[str, str]:
    """doc id → family name: the documents joined by a shared key or a shared unit,
    named by the most common key among them (ties: the smallest)."""
    uf = _UnionFind()
    keys_of: dict[str, list[str]] = {}
    for d in docs:
        keys_of[d.doc_id] = kind_keys(d, raw_email)
        for k in keys_of[d.doc_id]:
            uf.union("doc:" + d.doc_id, "key:" + k)
        for u in units(d):
            uf.union("doc:" + d.doc_id, "unit:" + u)
    members: dict[str, list[str]] = collections.defaultdict(list)
    for d in docs:
        members[uf.find("doc:" + d.doc_id)].append(d.doc_id)
    out = {}
    for ids in members.values():
        counts = collections.Counter(keys_of[i][0] for i in ids)
        name = min(counts, key=lambda k: (-counts[k], k))
        if len(counts) > 1:      # say that others were joined to it
            name += f" (+{len(counts) - 1} joined)"
        out.update({i: name for i in ids})
    return out


def _order(name: str, seed: int) -> bytes:
    return hashlib.sha256(f"{seed}|family|{name}".encode()).digest()


def assign(docs: Sequence[Document], family: dict[str, str], frozen: set[str],
           seed: int = SEED) -> dict[str, str]:
    """doc id → train / calibration / test / frozen, whole families at a time."""
    by_family: dict[str, list[Document]] = collections.defaultdict(list)
    for d in docs:
        by_family[family[d.doc_id]].append(d)
    total = collections.Counter(d.kind for d in docs if d.doc_id not in frozen)
    split: dict[str, str] = {}
    for name, members in by_family.items():
        if any(d.doc_id in frozen for d in members):
            split.update({d.doc_id: "frozen" if d.doc_id in frozen else "test" for d in members})
    taken = {s: collections.Counter(d.kind for d in docs if split.get(d.doc_id) == s)
             for s in SHARES}
    for side, share in SHARES.items():
        for name in sorted(by_family, key=lambda n: _order(n, seed)):
            members = by_family[name]
            if any(d.doc_id in split for d in members):
                continue
            size = collections.Counter(d.kind for d in members)
            if all(taken[side][k] + n <= share * total[k] for k, n in size.items()):
                taken[side].update(size)
                split.update({d.doc_id: side for d in members})
    return {d.doc_id: split.get(d.doc_id, "train") for d in docs}


def split_table(docs: Sequence[Document], family: dict[str, str], split: dict[str, str],
                seed: int = SEED) -> dict[str, Any]:
    names = ("train", "calibration", "test", "frozen")
    kinds = sorted({d.kind for d in docs})
    return {
        "version": VERSION,
        "scheme": SCHEME,
        "about": "Utility data set split BY FAMILY (eval/preflight_eval/utility_data/"
                 "families.py): no paragraph or sentence wording, values masked, is in "
                 "train + calibration and in test/frozen (tests/eval/"
                 "test_utility_split_families.py). 'frozen': the untouched test set of "
                 "test_frozen.json. The split by document that earlier bundles cite is "
                 "split-v1.json (the 'split' stored in rows written before this version).",
        "seed": seed,
        "counts": {s: {k: sum(1 for d in docs if d.kind == k and split[d.doc_id] == s)
                       for k in kinds} for s in names},
        "families": {s: len({family[d.doc_id] for d in docs if split[d.doc_id] == s})
                     for s in names},
        "splits": {s: sorted(d.doc_id for d in docs if split[d.doc_id] == s) for s in names},
        "family": {d.doc_id: family[d.doc_id] for d in sorted(docs, key=lambda d: d.doc_id)},
    }


def build(seed: int = SEED, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """The version-2 split table of the whole corpus and the frozen documents."""
    from preflight_eval.utility_data.generate import corpus_documents
    from preflight_eval.utility_data.newkinds import frozen_ids, load_newkinds

    docs = corpus_documents(data_dir, seed) + load_newkinds(data_dir)
    family = families(docs, email_raw())
    split = assign(docs, family, frozen_ids(data_dir), seed)
    return split_table(docs, family, split, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DATA_DIR))
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    table = build(args.seed, Path(args.out))
    atomic_write_text(Path(args.out) / SPLIT_FILE, json.dumps(table, indent=1,
                                                              ensure_ascii=False) + "\n",
                      mode=0o644)
    for name, counts in table["counts"].items():
        print(f"{name:12s} {table['families'][name]:4d} families  "
              + "  ".join(f"{k} {n}" for k, n in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
