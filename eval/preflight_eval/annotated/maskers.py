"""What each system masks in a document, as :class:`Masked` character ranges of the original.

- The product: the composition root's detector (``Services.make_detector()``, the user's
  default detection settings) and the policy mechanism it builds. A character is masked
  when a change of the sanitized text covers it — a span the policy keeps is not masked,
  and a word the replacement still carries (the year a generalized date keeps) is not
  masked either.
- Vanilla Presidio: ``AnalyzerEngine`` with its default recognizers and NER configuration
  over the same spaCy model, its default score threshold, every returned span masked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence

from preflight_eval.annotated.tab_metrics import Masked

_WORD = re.compile(r"\w+")


def disjoint(ranges: Iterable[Masked]) -> list[Masked]:
    """Overlapping ranges cut so each character is masked once (the longer range first)."""
    out: list[Masked] = []
    for m in sorted(ranges, key=lambda m: (m.start, -(m.end - m.start))):
        start = max(m.start, out[-1].end) if out else m.start
        if start < m.end:
            out.append(Masked(start, m.end, m.type))
    return out


def masks_from_changes(text: str, sanitized) -> list[Masked]:  # noqa: ANN001
    """The characters of ``text`` a :class:`SanitizedText`'s changes replaced, less the
    words its replacement still carries."""
    out = []
    for c in sanitized.changes:
        kept = {w.casefold() for w in _WORD.findall(c.replacement)}
        cursor = c.source_start
        for w in _WORD.finditer(text, c.source_start, c.source_end):
            if w.group().casefold() in kept:
                if cursor < w.start():
                    out.append(Masked(cursor, w.start(), c.type))
                cursor = w.end()
        if cursor < c.source_end:
            out.append(Masked(cursor, c.source_end, c.type))
    return out


class ProductMasker:
    """The product's detector once per document, then each policy's sanitization."""

    def __init__(self, services, detector=None) -> None:  # noqa: ANN001
        self.services = services
        self.detector = detector if detector is not None else services.make_detector()
        self.seconds = 0.0

    def detect(self, texts: Sequence[str]) -> list[list]:
        self.detector.load()
        self.detector.detect("Warm up, Mr Smith.")
        out = []
        for text in texts:
            t0 = time.perf_counter()
            out.append(self.detector.detect(text))
            self.seconds += time.perf_counter() - t0
        return out

    def mask(self, policy: str, text: str, spans) -> list[Masked]:  # noqa: ANN001
        from preflight.core.sanitize.base import SanitizeParams

        sanitized, _ = self.services.sanitize(policy, text, spans, SanitizeParams(seed=0))
        return masks_from_changes(text, sanitized)


def vanilla_analyzer(ner_path: str):  # noqa: ANN201
    from preflight_eval.eval_pii import vanilla_analyzer as build

    return build(ner_path)


class VanillaMasker:
    """Vanilla Presidio over the product's spaCy model; every span it returns is masked."""

    def __init__(self, ner_path: str) -> None:
        self.analyzer = vanilla_analyzer(ner_path)
        self.seconds = 0.0

    def masks(self, texts: Sequence[str]) -> list[list[Masked]]:
        self.analyzer.analyze("Warm up, Mr Smith.", language="en")
        out = []
        for text in texts:
            t0 = time.perf_counter()
            results = self.analyzer.analyze(text, language="en")
            self.seconds += time.perf_counter() - t0
            out.append(disjoint(Masked(r.start, r.end, r.entity_type) for r in results))
        return out
