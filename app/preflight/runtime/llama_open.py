"""One way to construct a ``llama_cpp.Llama``, serialized across threads.

llama-cpp-python silences llama.cpp while it loads a model (``verbose=False``) by
redirecting the *process-wide* file descriptors 1 and 2 to ``/dev/null`` and restoring
them afterwards. Two loads overlapping in two threads (the window loads the SLM, the
d_X token space and the tokenizer on different worker lanes) restore each other's saved
descriptors in the wrong order and leave stdout and stderr pointing at ``/dev/null`` for
the rest of the process: every later log line and printed result silently vanishes.
Every construction therefore goes through this one lock.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from contextlib import nullcontext
from pathlib import Path
from typing import Any

_LOAD_LOCK = threading.Lock()


def open_llama(model_path: Path | str, *, quiet_stderr: bool = False, **kwargs: Any) -> Any:
    """``llama_cpp.Llama(model_path, verbose=False, **kwargs)``, one at a time.

    ``quiet_stderr`` also hides what llama.cpp itself prints while loading (e.g. the
    meaningless context-size warning of a vocabulary-only load)."""
    import llama_cpp

    quiet: Any = nullcontext()
    if quiet_stderr:
        try:
            from llama_cpp._utils import suppress_stdout_stderr

            quiet = suppress_stdout_stderr(disable=False)
        except ImportError:  # pragma: no cover - private helper moved
            pass
    with _LOAD_LOCK, quiet:
        llama = llama_cpp.Llama(model_path=str(model_path), verbose=False, **kwargs)
    # Closed before interpreter shutdown if still alive: llama-cpp's own __del__ fails
    # noisily ("Exception ignored … 'NoneType' object is not callable") once its module
    # globals are gone. A weak reference, so a released model is still freed at once.
    atexit.register(_close_if_alive, weakref.ref(llama))
    return llama


def _close_if_alive(ref: "weakref.ref[Any]") -> None:
    obj = ref()
    if obj is not None:
        try:
            obj.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


def built_with_openmp() -> bool:
    """Whether the installed llama.cpp runs its threads on OpenMP (libgomp).

    ``setup.sh`` builds it without (``-DGGML_OPENMP=OFF``: ggml's own thread pool); a
    wheel built elsewhere may not be. False when llama-cpp-python is not installed."""
    try:
        import llama_cpp
    except ImportError:
        return False
    return b"OPENMP = 1" in llama_cpp.llama_print_system_info()
