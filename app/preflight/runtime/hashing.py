"""sha256 of model files and folders, and the one cache that remembers them.

Every digest the runtime needs (verifying a pinned model, naming the d_X caches of a token
space) goes through :class:`VerifiedHashCache`: a JSON file in ``cache_dir()`` keyed by
path and a cheap fingerprint (size and mtime_ns of the file, or of every file of a
folder), so a model hashed once loads instantly and any change forces a full re-hash.
The cache object also remembers digests in memory; whoever needs speed across calls
(the composition root, a test module) keeps one object and passes it on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path

from preflight.core import paths
from preflight.core.errors import Cancelled
from preflight.core.fsutil import atomic_write_text, read_regular
from preflight.core.fsutil import file_sha256 as _plain_file_sha256

log = logging.getLogger(__name__)

CHUNK = 1 << 20
MAX_CACHE_BYTES = 4_000_000   # a few hundred hashes; a larger file is not this cache
JUNK_NAMES = frozenset({"desktop.ini"})  # Windows folder metadata shipped inside some zips


def check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def _update(digest, path: Path, cancel: threading.Event | None) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            check_cancel(cancel)
            digest.update(chunk)


def file_sha256(path: Path, cancel: threading.Event | None = None) -> str:
    """Plain sha256 of one file's bytes (``cancel`` stops a multi-gigabyte read)."""
    if cancel is None:
        return _plain_file_sha256(path, CHUNK)
    digest = hashlib.sha256()
    _update(digest, Path(path), cancel)
    return digest.hexdigest()


def tree_files(root: Path) -> list[str]:
    """Sorted relative POSIX paths of every file under ``root`` except junk files."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name not in JUNK_NAMES
    )


def tree_sha256(root: Path, cancel: threading.Event | None = None) -> str:
    """Digest of a folder: for each file in sorted relative-path order, the path, a NUL,
    the content and a NUL. ``desktop.ini`` files are ignored."""
    root = Path(root)
    digest = hashlib.sha256()
    for rel in tree_files(root):
        digest.update(rel.encode("utf-8") + b"\0")
        _update(digest, root / rel, cancel)
        digest.update(b"\0")
    return digest.hexdigest()


def content_sha256(path: Path, cancel: threading.Event | None = None) -> str:
    """sha256 of a file, or the tree digest of a folder."""
    path = Path(path)
    return tree_sha256(path, cancel) if path.is_dir() else file_sha256(path, cancel)


def fingerprint(path: Path) -> str:
    """Cheap stand-in for the content: size and mtime_ns of the file (or of every file
    of a folder). Any edit, truncation or replacement changes it."""
    path = Path(path)
    if path.is_dir():
        parts = []
        for rel in tree_files(path):
            st = (path / rel).stat()
            parts.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
        return "dir:" + hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
    st = path.stat()
    return f"file:{st.st_size}:{st.st_mtime_ns}"


class VerifiedHashCache:
    """Remembers the digest of a path for a given fingerprint (JSON in ``cache_dir()``,
    plus this object's in-memory copy). Thread-safe."""

    FILE_NAME = "verified-models.json"

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._memo: dict[tuple[str, str], str] = {}   # (resolved path, fingerprint) -> sha

    @property
    def path(self) -> Path:
        return self._path or paths.cache_dir() / self.FILE_NAME

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(read_regular(self.path, MAX_CACHE_BYTES))
        except (OSError, ValueError, RecursionError):
            return {}  # no cache or a damaged one: it only costs a re-hash
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict) -> None:
        try:
            atomic_write_text(self.path, json.dumps(data, indent=1))
        except OSError as exc:  # a read-only cache only costs speed
            log.warning("could not write the hash cache %s: %s", self.path, exc)

    def get(self, path: Path, fp: str) -> str | None:
        key = str(Path(path).resolve())
        with self._lock:
            known = self._memo.get((key, fp))
        if known is not None:
            return known
        entry = self._read().get(key)
        if isinstance(entry, dict) and entry.get("fingerprint") == fp:
            return entry.get("sha256")
        return None

    def put(self, path: Path, fp: str, sha256: str) -> None:
        key = str(Path(path).resolve())
        with self._lock:
            self._memo[(key, fp)] = sha256
            data = self._read()
            data[key] = {"fingerprint": fp, "sha256": sha256}
            self._write(data)

    def forget(self, path: Path) -> None:
        key = str(Path(path).resolve())
        with self._lock:
            self._memo = {k: v for k, v in self._memo.items() if k[0] != key}
            data = self._read()
            if data.pop(key, None) is not None:
                self._write(data)

    def sha256(self, path: Path, cancel: threading.Event | None = None) -> str:
        """The content digest of ``path`` (file or folder), hashed only when its
        fingerprint is new."""
        fp = fingerprint(path)
        digest = self.get(path, fp)
        if digest is None:
            log.info("hashing %s (sha256)", path)
            digest = content_sha256(path, cancel)
            self.put(path, fp, digest)
        return digest


def cached_file_sha256(path: Path, cache: VerifiedHashCache | None = None) -> str:
    """sha256 of ``path`` through ``cache`` (a fresh one on the default file if None)."""
    return (cache or VerifiedHashCache()).sha256(Path(path))
