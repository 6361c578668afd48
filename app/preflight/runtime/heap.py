"""Hand freed memory back to the operating system (glibc; elsewhere a no-op).

One-shot commands drop big models between steps (`preflight assess` closes the SLM
before the sentence embedder loads). glibc keeps what they freed inside the process, and
the large buffers llama.cpp frees raise glibc's threshold for serving blocks from their own
mappings to 32 MiB, so torch's activations then come from a heap that only grows.
:func:`return_freed_memory` trims every arena and fixes the threshold at 1 MiB, which
took the 5,000-word `preflight assess` from ~1,610 to ~1,440 MB peak
(``python -m preflight_eval.bench_assess_limits``)."""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

_M_MMAP_THRESHOLD = -3        # mallopt parameter number (malloc.h)
MMAP_THRESHOLD_BYTES = 1 << 20


def return_freed_memory() -> bool:
    """Trim glibc's arenas and keep blocks of 1 MiB or more in their own mappings.
    False where there is no glibc (macOS, Windows, musl): nothing to do there."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt, malloc_trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    if not mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES):
        log.debug("mallopt(M_MMAP_THRESHOLD) refused")
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim(0)
    return True
