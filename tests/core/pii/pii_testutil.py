"""Helpers shared by the recognizer tests."""

from __future__ import annotations


def run(recognizer, text: str) -> list[tuple[str, str]]:
    """(type, value) pairs a Presidio recognizer finds in ``text``, sorted by start."""
    results = sorted(recognizer.analyze(text, None, None), key=lambda r: (r.start, r.end))
    return [(r.entity_type, text[r.start:r.end]) for r in results]
