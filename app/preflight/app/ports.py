"""What fills the core's ports, and the lazy stand-in the composition root hands out.

:class:`Ports` names, for each heavy backend the composition root builds, the factory
that builds it; ``None`` (the default, and what the product uses) means the real one from
``preflight.runtime`` over the installed model files. Tests pass fakes here — each one
checked against the core protocol it stands in for (``tests/qt/ports.py``) — and drive
the real application layer over them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Ports:
    """Factories of the heavy backends (each ``None``: the runtime's real one).

    ``models(settings)`` the model manager (the core's ``ModelLocator``, plus status and
    install); ``detector(detection, floor)`` a ``Detector``; ``slm()`` a
    ``LanguageModel``; ``embedder()`` an ``Embedder``; ``token_space()`` a ``TokenSpace``
    and ``attack_prior(space)`` the attacker's public-corpus prior over it;
    ``tokenizer()`` a ``Tokenizer`` (cost estimates); ``audit_sink(central)`` the central
    audit store's client.
    """

    models: Callable[[Any], Any] | None = None
    detector: Callable[[Any, Any], Any] | None = None
    slm: Callable[[], Any] | None = None
    embedder: Callable[[], Any] | None = None
    token_space: Callable[[], Any] | None = None
    attack_prior: Callable[[Any], Any] | None = None
    tokenizer: Callable[[], Any] | None = None
    audit_sink: Callable[[Any], Any] | None = None


class Deferred:
    """A stand-in that builds the real object on first attribute access (thread-safe)."""

    def __init__(self, build: Callable[[], Any], what: str) -> None:
        self._build, self._what, self._obj = build, what, None
        self._lock = threading.Lock()

    def resolve(self) -> Any:
        with self._lock:
            if self._obj is None:
                self._obj = self._build()
            return self._obj

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        return f"Deferred({self._what})"


@dataclass(frozen=True)
class SlmChoice:
    """The assessor SLM in use: its manifest role and name, and why it is not the one
    the settings chose (empty when it is)."""

    role: str
    name: str
    warning: str = ""
