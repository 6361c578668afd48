"""The one interface every sanitization mechanism implements, and their registry.

A mechanism is a strategy object: ``sanitize(text, spans, params) -> SanitizedText``.
Operators (redact, mask, placeholder, pseudonym, generalize) use the spans; d_X uses
them only when its scope is "pii". Mechanisms register themselves by name so the CLI
and the window can list and build them without knowing the classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from preflight.core.errors import ConfigError
from preflight.core.types import SanitizedText, Span


@dataclass(frozen=True)
class SanitizeParams:
    seed: int | None = None
    epsilon: float | None = None          # d_X only
    scope: str = "all"                    # d_X only: "all" tokens or detected "pii" spans
    extra: dict[str, Any] = field(default_factory=dict)


class Mechanism(Protocol):
    name: str

    def sanitize(
        self, text: str, spans: Sequence[Span], params: SanitizeParams
    ) -> SanitizedText: ...


MechanismFactory = Callable[..., Mechanism]
_REGISTRY: dict[str, MechanismFactory] = {}


def register(name: str) -> Callable[[MechanismFactory], MechanismFactory]:
    def deco(factory: MechanismFactory) -> MechanismFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def mechanism_names() -> list[str]:
    _load_builtin()
    return list(_REGISTRY)


def create_mechanism(name: str, **collaborators: Any) -> Mechanism:
    """Build mechanism ``name``; collaborators (vault, token space...) are passed through."""
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"Unknown sanitization method '{name}'.",
            f"Choose one of: {', '.join(_REGISTRY)}.",
        ) from None
    return factory(**collaborators)


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators (dx loads no model at import).
    from preflight.core.sanitize import dx, operators  # noqa: F401
