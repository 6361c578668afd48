"""Measure, choose and write the utility prediction's scope: which documents lie inside
what it was measured on (:mod:`preflight.core.utility.scope`).

Run:  python -m preflight_eval.utility_scope --cache /tmp/scope_emb.npz [--write] [--json F]

- Training documents: every document of the shipped regressor's train and calibration
  splits (``split-v1.json``), its text from the stored unsanitized sends
  (``cloud_qwen15.jsonl.gz``).
- Methods (``VARIANTS``): the length range (a document with fewer words than the shortest
  training document or more than the longest — the one the product ships), and distances
  of the document's sentence embedding (the excerpt the features read, embedded by the
  shipped similarity model) from the training documents': one minus the mean cosine to
  the ``k`` nearest, the Mahalanobis distance in the first principal components (Ledoit-
  Wolf covariance), the local outlier factor. An embedding method's threshold is the
  ``--percentile`` (98th) of the training documents' OUT-OF-FOLD scores (folds by family:
  each family scored by parameters fitted on the others); the length range's bounds are
  the training documents' shortest and longest. The out-of-fold column shows each rule on
  families it did not see; nothing is tuned on the checks.
- Checks, reported for every method: the documents of the v1 test split (kinds trained
  on, documents not) should be inside; real text of kinds never trained on — Debian's
  licence texts, package changelogs, NEWS.Debian files and copyright files of this
  machine, read whole — outside. Package READMEs and manual pages are NOT used: the frozen
  test set (``test_frozen.json``: judgments, manual pages, READMEs of this machine) is not
  read.
- Choice rule, written before the checks were read: the method whose out-of-fold in-kind
  rate is ≥ 95 % and whose check in-kind rate is ≥ 95 %, with the highest out-of-kind
  rate; shipped only if that rate is ≥ 50 %. Both check sets were read for every method:
  a development reading, not a test.
- ``--cache F``: the embeddings of all three sets in an ``.npz`` (written when missing,
  read otherwise), so reruns do not re-embed.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from preflight.core import paths
from preflight.core.utility.excerpt import original_excerpt
from preflight.core.utility.features import word_count
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.shards import read_rows

MEASURED_ON = ("summaries of English research papers, mailing-list e-mails and business "
               "documents by one stand-in cloud model (Qwen2.5-Coder-1.5B)")
LICENCES = Path("/usr/share/common-licenses")
DOCS = Path("/usr/share/doc")
KINDS = ("aclsum", "spam", "business")


def corpus_texts() -> dict[str, tuple[str, str]]:
    """doc_id → (text, sub-kind) of every document with an unsanitized send."""
    out: dict[str, tuple[str, str]] = {}
    for r in read_rows(DATA_DIR / "cloud_qwen15.jsonl.gz"):
        if r["setting"]["kind"] == "original" and r.get("text"):
            out.setdefault(r["doc_id"], (r["text"], r.get("subkind") or r["doc_kind"]))
    return out


def _read(p: Path, limit: int = 200_000) -> str:
    opener: Callable[..., Any] = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8", errors="replace") as f:
        return f.read(limit)


def outside_texts(per_source: int) -> dict[str, str]:
    """Real text of kinds never trained on (≥ 150 words each): Debian's licences, then up to
    ``per_source`` package changelogs, NEWS.Debian files and copyright files."""
    out: dict[str, str] = {}
    for p in sorted(LICENCES.iterdir()):
        if p.is_file() and not p.is_symlink():
            out[f"licence:{p.name}"] = _read(p)
    for tag, pattern in (("changelog", "*/changelog.Debian.gz"), ("news", "*/NEWS.Debian.gz"),
                         ("copyright", "*/copyright")):
        n = 0
        for p in sorted(DOCS.glob(pattern)):
            if n >= per_source:
                break
            if p.is_symlink() or not p.is_file():
                continue
            text = _read(p)
            if len(text.split()) >= 150 and text not in out.values():
                out[f"{tag}:{p.parent.name}"] = text
                n += 1
    return out


def embed(embedder: Any, texts: list[str]) -> np.ndarray:
    vecs = np.asarray(embedder.embed([original_excerpt(t) for t in texts]), dtype=np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def load_sets(cache: Path | None, per_source: int) -> dict[str, Any]:
    """ids, kinds/families, word counts and unit embeddings of the training, test and
    outside sets (the embeddings from ``cache`` when it holds them)."""
    v1 = json.loads((DATA_DIR / "split-v1.json").read_text())["splits"]
    family = json.loads((DATA_DIR / "split.json").read_text())["family"]
    texts = corpus_texts()
    train = [d for d in v1["train"] + v1["calibration"] if d in texts]
    test = [d for d in v1["test"] if d in texts]
    # the business documents are one family in split.json (a shared template pool): their
    # sub-kind (memo, minutes, ...) is the family here
    fams = [texts[d][1] if texts[d][1] in ("complaint", "hr_note", "memo", "minutes")
            else family.get(d, d) for d in train]
    others = outside_texts(per_source)
    sets: dict[str, Any] = {"train_ids": train, "train_fams": fams, "test_ids": test,
                            "out_ids": list(others)}
    for key, group in (("train", [texts[d][0] for d in train]),
                       ("test", [texts[d][0] for d in test]), ("out", list(others.values()))):
        sets[f"{key}_words"] = np.array([word_count(t) for t in group], dtype=np.float64)
    if cache is not None and cache.is_file():
        with np.load(cache, allow_pickle=False) as z:
            if [z[f"{k}_ids"].tolist() for k in ("train", "test", "out")] == \
                    [sets[f"{k}_ids"] for k in ("train", "test", "out")]:
                sets.update({f"{k}_vecs": z[f"{k}_vecs"] for k in ("train", "test", "out")})
                return sets
    from preflight.app.services import build_services
    embedder = build_services().embedder()
    sets["train_vecs"] = embed(embedder, [texts[d][0] for d in train])
    sets["test_vecs"] = embed(embedder, [texts[d][0] for d in test])
    sets["out_vecs"] = embed(embedder, list(others.values()))
    if cache is not None:
        np.savez_compressed(cache, **{k: np.asarray(v) for k, v in sets.items()})
    return sets


def kind_of(doc_id: str) -> str:
    k = doc_id.split(":")[0]
    return k if k in ("aclsum", "spam") else "business"


# -- methods: fit on the training documents, score any ----------------------------------
VARIANTS: dict[str, tuple[str, dict[str, int]]] = {
    "length range (shipped)": ("length", {}),
    "knn-1": ("knn", {"k": 1}),
    "knn-10": ("knn", {"k": 10}),
    "mahalanobis-pca20": ("mahalanobis", {"dims": 20}),
    "mahalanobis-pca50": ("mahalanobis", {"dims": 50}),
    "lof-20": ("lof", {"k": 20}),
}


def _data(method: str, sets: dict[str, Any], part: str) -> np.ndarray:
    return sets[f"{part}_words"] if method == "length" else sets[f"{part}_vecs"]


def fit(method: str, x: np.ndarray, opts: dict[str, int]) -> dict[str, Any]:
    """Parameters fitted on ``x``: word counts (length) or unit embeddings (the rest)."""
    if method == "length":
        return {"shortest": float(x.min()), "longest": float(x.max())}
    if method == "knn":
        return {"vectors": x.astype(np.float32), "k": opts["k"]}
    if method == "mahalanobis":
        from sklearn.covariance import LedoitWolf
        from sklearn.decomposition import PCA

        pca = PCA(n_components=opts["dims"], random_state=0).fit(x)
        return {"pca": pca, "cov": LedoitWolf().fit(pca.transform(x))}
    if method == "lof":
        from sklearn.neighbors import LocalOutlierFactor

        return {"lof": LocalOutlierFactor(n_neighbors=opts["k"], novelty=True).fit(x)}
    raise ValueError(method)


def scores(method: str, params: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """Distance from the training documents (higher: farther; the length range's is the
    log-ratio outside it, 0 inside)."""
    if method == "length":
        w = np.maximum(x, 1.0)
        return np.maximum(0.0, np.maximum(np.log(params["shortest"] / w),
                                          np.log(w / params["longest"])))
    if method == "knn":
        sims = x @ params["vectors"].T
        return 1.0 - (-np.sort(-sims, axis=1)[:, :params["k"]]).mean(axis=1)
    if method == "mahalanobis":
        return np.sqrt(params["cov"].mahalanobis(params["pca"].transform(x)))
    return -params["lof"].score_samples(x)


def out_of_fold(method: str, opts: dict[str, int], x: np.ndarray, fams: list[str],
                folds: int) -> np.ndarray:
    """Each training document's score from parameters fitted without its family."""
    from sklearn.model_selection import GroupKFold

    out = np.zeros(len(x))
    for fit_idx, held_idx in GroupKFold(n_splits=folds).split(x, groups=fams):
        out[held_idx] = scores(method, fit(method, x[fit_idx], opts), x[held_idx])
    return out


def measure(sets: dict[str, Any], percentile: float, folds: int) -> dict[str, Any]:
    fams = list(sets["train_fams"])
    train_kinds = [kind_of(d) for d in sets["train_ids"]]
    test_kinds = [kind_of(d) for d in sets["test_ids"]]
    out_src = [i.split(":")[0] for i in sets["out_ids"]]
    table: dict[str, Any] = {}
    for name, (method, opts) in VARIANTS.items():
        train = _data(method, sets, "train")
        oof = out_of_fold(method, opts, train, fams, folds)
        threshold = 0.0 if method == "length" else float(np.percentile(oof, percentile))
        params = fit(method, train, opts)
        test_s = scores(method, params, _data(method, sets, "test"))
        out_s = scores(method, params, _data(method, sets, "out"))

        def share(s: np.ndarray, labels: list[str], inside: bool) -> dict[str, float]:
            hit = s <= threshold if inside else s > threshold
            res = {"all": float(hit.mean())}
            for lab in sorted(set(labels)):
                res[lab] = float(hit[np.asarray(labels) == lab].mean())
            return res

        table[name] = {"method": method, "opts": opts, "threshold": threshold,
                       "oof_inside": share(oof, train_kinds, True),
                       "test_inside": share(test_s, test_kinds, True),
                       "out_outside": share(out_s, out_src, False),
                       "n": {"train": len(train), "test": len(test_s), "out": len(out_s)}}
    return table


def choose(table: dict[str, Any]) -> str | None:
    """The rule fixed before the checks were read: out-of-fold and check in-kind rates
    both ≥ 95 %, then the highest out-of-kind rate; None unless that rate is ≥ 50 %."""
    ok = [n for n, r in table.items()
          if r["oof_inside"]["all"] >= 0.95 and r["test_inside"]["all"] >= 0.95]
    best = max(ok, key=lambda n: table[n]["out_outside"]["all"], default=None)
    return best if best is not None and table[best]["out_outside"]["all"] >= 0.5 else None


def print_table(table: dict[str, Any], percentile: float) -> None:
    n = next(iter(table.values()))["n"]
    print(f"{n['train']} training documents (an embedding method's threshold: the "
          f"{percentile:g}th percentile of their out-of-fold scores); checks: {n['test']} "
          f"v1 test-split documents, {n['out']} out-of-kind texts")
    print("| method | out-of-fold inside | test inside: all / aclsum / spam / business "
          "| out-of-kind outside: all / licence / changelog / news / copyright |")
    print("|---|---|---|---|")
    pct = lambda r, k: f"{100 * r[k]:.0f}" if k in r else "–"   # noqa: E731
    for name, r in table.items():
        t, o = r["test_inside"], r["out_outside"]
        print(f"| {name} | {pct(r['oof_inside'], 'all')} % "
              f"| {pct(t, 'all')} / {pct(t, 'aclsum')} / {pct(t, 'spam')} / "
              f"{pct(t, 'business')} % | {pct(o, 'all')} / {pct(o, 'licence')} / "
              f"{pct(o, 'changelog')} / {pct(o, 'news')} / {pct(o, 'copyright')} % |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=None, help="embeddings .npz (written when missing)")
    ap.add_argument("--percentile", type=float, default=98.0)
    ap.add_argument("--folds", type=int, default=10, help="out-of-fold splits by family")
    ap.add_argument("--outside", type=int, default=100,
                    help="changelogs, NEWS and copyright files each (besides the licences)")
    ap.add_argument("--write", action="store_true",
                    help="write resources/utility/scope.json (the length range) if chosen")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from preflight.core.utility.scope import SCOPE_FILE, MeasuredScope

    sets = load_sets(Path(args.cache) if args.cache else None, args.outside)
    table = measure(sets, args.percentile, args.folds)
    print_table(table, args.percentile)
    chosen = choose(table)
    print(f"chosen: {chosen or 'none (no method keeps ≥ 95 % inside and flags ≥ 50 %)'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"table": table, "chosen": chosen}, indent=1))
    if args.write and chosen is not None and table[chosen]["method"] == "length":
        r, words = table[chosen], sets["train_words"]
        meta = {"documents": len(words), "test_inside": round(r["test_inside"]["all"], 3),
                "out_of_kind_outside": round(r["out_outside"]["all"], 3),
                "command": "python -m preflight_eval.utility_scope --write"}
        path = paths.resource_path("utility", SCOPE_FILE)
        before = MeasuredScope.load(path)      # the frozen reading's entry stays
        if before is not None and "unseen" in before.meta:
            meta["unseen"] = before.meta["unseen"]
        MeasuredScope(int(words.min()), int(words.max()), MEASURED_ON,
                      meta=meta).save(path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
