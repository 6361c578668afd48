"""Small file-system helpers the whole code base shares (one implementation each)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path | str, data: bytes, *, mode: int | None = None,
                       fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never
    half of either. ``mode`` sets the permissions before the rename (the temporary file
    is created 0600, so a secret is never readable by others, not even for a moment)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path | str, text: str, *, mode: int | None = None,
                      fsync: bool = False) -> Path:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"), mode=mode, fsync=fsync)


def file_sha256(path: Path | str, block: int = 1 << 20) -> str:
    """sha256 of a file's bytes, read in blocks (models are gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()
