"""The attacker's prior over input tokens: unigram frequencies of a public corpus.

The optimal context-free attack (``reconstruction-attacks.txt``, Theorem 1) weighs every
candidate input token x by prior(x) · P(y | x, ε). The prior is the frequency of x in
public English text the attacker can read as well as we can (the "shadow data set"):
ACL abstracts and introductions (PyPI ``aclsum``) and SpamAssassin non-spam e-mails,
tokenized with the d_X token space itself. The counts are built once per token space by
``python -m preflight_eval.build_dx_prior`` into ``resources/privacy/`` (committed; the
documents of the utility data set's test split are left out, so evaluating on them is
fair), and read here through :class:`TokenPrior`.

Within a word-boundary class (the attacker sees the class of every released token) the
prior is renormalized over the class's members: P(x | class) ∝ count(x) + α, with the
paper's small additive constant α so that a token the corpus never shows keeps a
non-zero weight.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import numpy as np

from preflight.core import paths
from preflight.core.errors import ConfigError
from preflight.core.fsutil import atomic_write_bytes, atomic_write_text
from preflight.core.ports import TokenSpace

ALPHA = 0.1          # additive smoothing per token (counts are integers)


class TokenPrior(Protocol):
    """What the attack needs from a prior."""

    name: str

    def counts(self) -> np.ndarray:
        """(V,) non-negative corpus counts of every token id of the space."""
        ...


class CountsPrior:
    """A prior given by token counts (V,), e.g. loaded from the committed resource."""

    def __init__(self, counts: np.ndarray, name: str, tokens: int | None = None) -> None:
        self._counts = np.asarray(counts, dtype=np.float64)
        self.name = name
        self.tokens = int(self._counts.sum()) if tokens is None else int(tokens)

    def counts(self) -> np.ndarray:
        return self._counts


def class_log_prior(prior: TokenPrior, members: np.ndarray) -> np.ndarray:
    """log P(x | class) for the class's member ids (smoothed, normalized)."""
    c = prior.counts()[members] + ALPHA
    return np.log(c) - np.log(c.sum())


def prior_path(space: TokenSpace) -> Path:
    return paths.resource_path("privacy", f"dx_prior_{space.key}.npz")


def load_prior(space: TokenSpace) -> CountsPrior:
    """The committed prior of ``space`` (one file per token space)."""
    f = prior_path(space)
    if not f.is_file():
        raise ConfigError(
            f"No attack prior for the embedding {space.name}.",
            "Run `python -m preflight_eval.build_dx_prior` to build it from the public corpus.",
        )
    try:
        with np.load(f, allow_pickle=False) as z:
            ids, cnt = z["ids"], z["counts"]
            meta = json.loads(str(z["meta"]))
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"The attack prior {f.name} is unreadable ({exc}).",
                          "Rebuild it: `python -m preflight_eval.build_dx_prior`.") from None
    V = int(space.matrix.shape[0])
    if ids.size and int(ids.max()) >= V:
        raise ConfigError(f"The attack prior {f.name} does not match the embedding.",
                          "Rebuild it: `python -m preflight_eval.build_dx_prior`.")
    counts = np.zeros(V, dtype=np.float64)
    counts[ids] = cnt
    return CountsPrior(counts, meta.get("name", f.name), meta.get("tokens"))


def count_tokens(space: TokenSpace, texts: Iterable[str]) -> tuple[Counter, int, int]:
    """Token id counts of ``texts`` under ``space`` (and how many documents, tokens)."""
    counts: Counter = Counter()
    docs = 0
    for text in texts:
        counts.update(space.tokenize(text).ids.tolist())
        docs += 1
    return counts, docs, sum(counts.values())


def write_prior(space: TokenSpace, counts: Counter, meta: dict, dest: Path | None = None) -> Path:
    """Store counts as a compact npz (ids, counts, meta) + a readable json beside it."""
    import io

    f = dest or prior_path(space)
    ids = np.asarray(sorted(counts), dtype=np.int32)
    cnt = np.asarray([counts[i] for i in ids.tolist()], dtype=np.int32)
    meta = dict(meta, embedding=space.name, embedding_sha256=space.key,
                distinct=len(ids), tokens=int(cnt.sum()))
    buf = io.BytesIO()
    np.savez_compressed(buf, ids=ids, counts=cnt, meta=np.asarray(json.dumps(meta)))
    atomic_write_bytes(f, buf.getvalue())
    atomic_write_text(f.with_suffix(".json"), json.dumps(meta, indent=1) + "\n")
    return f
