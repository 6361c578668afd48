"""Import Presidio without the machine-learning stack it never uses here.

Importing ``presidio_analyzer`` imports all of it, including its Hugging Face NER engine
and recognizer, which run ``from transformers import pipeline`` and ``import torch`` (about
4 s, several hundred MB) and later probe for CUDA, although Preflight uses only the spaCy
engine. Both imports are optional in Presidio: on ImportError it takes its documented
"not installed" branch.

:func:`import_presidio` imports Presidio with those two packages reported missing *to
the importing thread only, and only while Presidio itself imports*: a finder on
``sys.meta_path`` for the duration of the import, removed in ``finally``. Nothing is
written into ``sys.modules`` or the environment, other threads (a sentence-transformers
model loading in the window) see the real packages, and when ``transformers``/``torch``
are already imported Presidio simply uses them. Called when the detection engine is built
(and by the recognizers package), never at ``preflight.core.pii`` import time.

One lasting consequence, harmless here: thinc (spaCy's ML layer) is first imported inside
Presidio's import, so it records torch as absent and spaCy pipelines in this process run
without PyTorch layers (en_core_web_sm has none). Hiding torch saves 3–8 s of cold start
on a 2-core machine (measured: 5.4–9.2 s vs 12.8–13.4 s to the first detection).
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import threading

#: Optional Presidio dependencies Preflight never uses (top-level package names).
UNUSED_OPTIONAL = ("transformers", "torch")

_lock = threading.Lock()


class _HideInThread(importlib.abc.MetaPathFinder):
    """Reports ``names`` as not installed to one thread."""

    def __init__(self, names: frozenset[str], thread: int) -> None:
        self.names = names
        self.thread = thread

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 (importlib API)
        if threading.get_ident() == self.thread and fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def import_presidio() -> None:
    """Import ``presidio_analyzer`` (once) without its unused transformers/torch parts."""
    if "presidio_analyzer" in sys.modules:
        return
    with _lock:
        if "presidio_analyzer" in sys.modules:
            return
        hidden = frozenset(n for n in UNUSED_OPTIONAL if n not in sys.modules)
        finder = _HideInThread(hidden, threading.get_ident())
        sys.meta_path.insert(0, finder)
        try:
            importlib.import_module("presidio_analyzer")
        finally:
            sys.meta_path.remove(finder)
