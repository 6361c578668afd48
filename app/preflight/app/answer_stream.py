"""A streamed answer as the window shows it: restored for the answer pane, and as it came
back for the Raw tab (Qt-free; the window's doorway feeds the core's stream restorer
through :class:`TapRestorer`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class AnswerChunk:
    """A piece of a streamed answer: as the window shows it, and as it came back."""

    restored: str                    # text to append to the restored view
    raw: str                         # text to append to the raw view


class TapRestorer:
    """The core's stream restorer that also reports the raw deltas (for the Raw tab)."""

    def __init__(self, vault: Any, on_raw: Callable[[str], None] | None) -> None:
        from preflight.core.sanitize.vault import StreamRestorer

        self._inner = StreamRestorer(vault) if vault is not None else None
        self._on_raw = on_raw

    def feed(self, chunk: str) -> str:
        if self._on_raw is not None:
            self._on_raw(chunk)
        return self._inner.feed(chunk) if self._inner is not None else chunk

    def flush(self) -> str:
        return self._inner.flush() if self._inner is not None else ""

    def notes(self) -> list[str]:
        return self._inner.notes() if self._inner is not None else []
