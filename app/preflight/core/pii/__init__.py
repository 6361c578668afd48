"""PII detection: Presidio + spaCy with Preflight's own recognizers.

``Detector`` is the protocol the rest of the core depends on; ``PiiDetector`` (in
``detector.py``) is the real implementation. Importing this package has no side effects
and does not import Presidio: that happens when a detector builds its engine (see
:mod:`preflight.core.pii.presidio_loader`).
"""

from __future__ import annotations

from typing import Protocol

from preflight.core.types import Span


class Detector(Protocol):
    def detect(self, text: str) -> list[Span]:
        """Non-overlapping spans sorted by start (overlaps already resolved)."""
        ...
