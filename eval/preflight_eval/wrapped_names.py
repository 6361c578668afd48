"""Names that the fixed-width wrap of e-mail prose broke across two lines.

Run:  python -m preflight_eval.wrapped_names [--messages 250]

Detects the first ``--messages`` messages of the SpamAssassin e-mail corpus
(:func:`~preflight_eval.utility_data.corpus.email_corpus`) twice with the composition
root's detector: as shipped, where a model span that is one line break inside wrapped
prose stays whole (``detector._wrapped_name``), and with that rule switched off (every
model span cut at its first line, as before session 18). For each person span that runs
across a line break it prints the value and whether the word opening the second line was
covered without the rule, i.e. whether the rule is what keeps it from being sent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from preflight_eval.utility_data.corpus import email_corpus

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _detector() -> Any:
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    detector = build_services(Settings()).detector()
    detector.load()
    return detector


def wrapped_names(texts: list[str]) -> list[tuple[int, str, bool]]:
    """(message, value, second line covered without the rule) for each wrapped name."""
    from preflight.core.pii import detector as module

    shipped, plain = _detector(), _detector()
    rule = module._wrapped_name
    out = []
    for i, text in enumerate(texts):
        found = [s for s in shipped.detect(text)
                 if s.type == "PERSON" and "\n" in text[s.start:s.end]]
        if not found:
            continue
        module._wrapped_name = lambda *_a, **_k: False
        try:
            without = plain.detect(text)
        finally:
            module._wrapped_name = rule
        for s in found:
            second = text.index("\n", s.start) + 1
            word_end = second + len(text[second:s.end].split()[0])
            covered = any(o.start <= second and word_end <= o.end for o in without)
            out.append((i, text[s.start:s.end], covered))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0, help="the corpus' order")
    args = ap.parse_args(argv)
    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-wrapped-")
    texts = [d.text for d in email_corpus(seed=args.seed)[:args.messages]]
    if not texts:
        print("no e-mail corpus on this machine", file=sys.stderr)
        return 1
    rows = wrapped_names(texts)
    sent = sum(not covered for _, _, covered in rows)
    print(f"{len(texts)} messages: {len(rows)} person spans across a line break kept whole; "
          f"the second line's word was sent without the rule in {sent}")
    for i, value, covered in rows:
        print(f"  message {i}: {value!r}" + ("" if covered else "  (was sent)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
