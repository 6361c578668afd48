"""How far a detection is, and its Cancel: :class:`DetectionSteps`."""

from __future__ import annotations

import threading
from collections.abc import Callable

from preflight.core.errors import Cancelled

Progress = Callable[[float, str], None]


class DetectionSteps:
    """Progress and cancellation of one detection, counted in detection windows (the
    whole-document passes after them take a small part of the time). Reports when the
    share moves by a percent or more: a 1 MB paste has hundreds of windows, and a report
    may cross to another process."""

    def __init__(self, progress: Progress | None,
                 cancel: threading.Event | None) -> None:
        """``cancel``: a :class:`threading.Event`, or anything with ``is_set()`` (the
        detector's child process reads its parent's Cancel from shared memory)."""
        self.progress, self.cancel = progress, cancel
        self.total, self.done, self._said = 0, 0, -1

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._check()

    def step(self) -> None:
        self._check()
        if self.progress is not None and self.total:
            percent = 100 * self.done // self.total
            if percent != self._said:
                self._said = percent
                self.progress(self.done / self.total,
                              f"Looking for personal data: {self.done:,} of "
                              f"{self.total:,} passages read")
        self.done += 1

    def _check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled("Detection stopped by you.",
                            "Nothing was detected, so nothing can be sent yet.")
