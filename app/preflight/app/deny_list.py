"""The deny-list as the window edits it (Qt-free): for good, or for the open document only.

"Always protect" saves a keyed hash of the value, never the value
(:mod:`preflight.core.pii.deny_store`); "this document only" holds the value in memory
until another document starts, and is never written. Both reach the window's detector
(and so the send path's re-scan) through :meth:`DenyListDoor.for_detection`.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import replace
from typing import Any, Callable

from preflight.core.config import Settings
from preflight.core.pii import deny_store
from preflight.core.pii.deny_store import DenyEntry
from preflight.core.send import logfilter


class DenyListDoor:
    """One window's deny-list edits. ``settings()`` gives the saved settings; ``save``
    saves a changed copy; ``detector()`` is the window's detector host (None: not yet
    started), whose ``settings`` travel with each detection."""

    def __init__(self, settings: Callable[[], Settings], save: Callable[[Settings], None],
                 detector: Callable[[], Any]) -> None:
        self._settings, self._save, self._detector = settings, save, detector
        self._lock = threading.Lock()
        self._document: list[str] = []

    def for_detection(self, settings: Settings) -> Settings:
        """``settings`` plus the open document's own values (a copy: never saved)."""
        with self._lock:
            extra = list(self._document)
        if not extra:
            return settings
        det = settings.detection
        return replace(settings, detection=replace(det, deny_list=[*det.deny_list, *extra]))

    def retarget(self) -> None:
        """Hand the detector the saved settings plus the open document's values."""
        host = self._detector()
        if host is not None:
            host.settings = self.for_detection(self._settings())

    def entry(self, value: str) -> DenyEntry:
        """The saved form of ``value`` (for Settings' add box); the value is not kept."""
        entry = deny_store.make_entry(value, deny_store.current_key())
        if entry.kind == deny_store.SECRET:
            logfilter.register_secret(value.strip())
        return entry

    def key_missing(self, entry: DenyEntry) -> bool:
        """True when ``entry``'s key is gone (it can no longer be found in documents)."""
        return deny_store.key_for(entry.key_id) is None

    def always(self, value: str) -> DenyEntry | None:
        """Protect ``value`` in every document from now on (None: already protected)."""
        settings = copy.deepcopy(self._settings())
        entry = deny_store.add(settings.detection.deny_entries, value)
        if entry is None:
            return None
        if entry.kind == deny_store.SECRET:
            logfilter.register_secret(value.strip())
        self._save(settings)
        return entry

    def this_document(self, value: str) -> bool:
        """Protect ``value`` in the open document only (False: already protected so)."""
        value = value.strip()
        key = deny_store.normalized(value)
        with self._lock:
            if not value or key in {deny_store.normalized(v) for v in self._document}:
                return False
            self._document.append(value)
        if deny_store.is_secret_shaped(value):
            logfilter.register_secret(value)
        self.retarget()
        return True

    def new_document(self) -> None:
        """Another document starts: the last one's own values are forgotten."""
        with self._lock:
            had, self._document = bool(self._document), []
        if had:
            self.retarget()

    def kind_of(self, value: str) -> str:
        """"secret" or "term": what a match of ``value`` is typed as."""
        return deny_store.SECRET if deny_store.is_secret_shaped(value) else deny_store.TERM
