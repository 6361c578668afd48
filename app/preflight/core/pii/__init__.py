"""PII detection: Presidio + spaCy with Preflight's own recognizers.

``Detector`` is the protocol the rest of the core depends on; ``PiiDetector`` (in
``detector.py``) is the real implementation.
"""

from __future__ import annotations

import os
import sys
from typing import Protocol

from preflight.core.types import Span


def _import_presidio_lean() -> None:
    """Import Presidio without the parts Preflight never uses.

    Presidio's package import pulls in its Hugging Face engine (``from transformers import
    pipeline``, ~4 s of imports) and probes for CUDA through torch, even when only the
    spaCy engine is used. Detection is on the CLI's and the window's start-up path, so:
    the device is fixed to the CPU (Presidio's documented PRESIDIO_DEVICE variable), and
    ``transformers`` is hidden while Presidio imports (it then takes its documented
    "transformers not installed" branch); it is importable again right after, for
    sentence-transformers.
    """
    if "presidio_analyzer" in sys.modules:
        return
    os.environ.setdefault("PRESIDIO_DEVICE", "cpu")
    hide = "transformers" not in sys.modules
    if hide:
        sys.modules["transformers"] = None  # type: ignore[assignment]
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        if hide and sys.modules.get("transformers", 0) is None:
            del sys.modules["transformers"]


_import_presidio_lean()


class Detector(Protocol):
    def detect(self, text: str) -> list[Span]:
        """Non-overlapping spans sorted by start (overlaps already resolved)."""
        ...
