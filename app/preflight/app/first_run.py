"""The first-run guide's facts (Qt-free): the sample document and whether the guide was
seen. The marker is a small file in the config folder, so a fresh settings file (or a
second window) never shows the guide again, and deleting the marker shows it once more."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path

from preflight.core import paths
from preflight.core.fsutil import atomic_write_text

log = logging.getLogger(__name__)

MARKER = "first-run-guide-seen"
SAMPLE = ("samples", "hr-offer-email.txt")


def sample_path() -> Path:
    """The sample HR e-mail shipped with the app (names, e-mail, phone, salary, an
    employee ID and a password in prose)."""
    return paths.resource_path(*SAMPLE)


def guide_seen() -> bool:
    return (paths.config_dir() / MARKER).exists()


def mark_guide_seen() -> None:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        atomic_write_text(paths.config_dir() / MARKER,
                          f"The first-run guide was shown on {stamp}. Delete this file to "
                          "see it again at the next start (or use Help → Show the guide).\n")
    except OSError as exc:   # a link or FIFO there, a read-only folder: shown again next time
        log.warning("could not remember that the guide was seen: %s", exc)
