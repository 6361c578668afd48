"""Append-only, crash-safe row files: one gzip member per JSON row.

``gzip.open(path, "ab")`` appends a complete gzip member, and a gzip file made of several
members is still one valid gzip file (``zcat`` reads it whole). A process killed while
writing leaves at most one torn member at the end: :func:`read_rows` ignores it, and
:class:`ShardWriter` cuts it off before appending, so the next row never lands behind
garbage. Every append is flushed and fsynced, so a kill loses at most the row in flight.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, Iterator


def _members(data: bytes) -> Iterator[tuple[bytes, int]]:
    """(decompressed member, offset just after it) for every complete member."""
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)   # 31: gzip header and CRC checked
        try:
            out = d.decompress(data[pos:])
        except zlib.error:
            return                          # torn or corrupt tail
        if not d.eof:
            return                          # member cut short (killed mid-write)
        pos = len(data) - len(d.unused_data)
        yield out, pos


def read_rows(path: Path) -> list[dict[str, Any]]:
    """All complete rows of ``path`` (missing file: none); a torn last row is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for raw, _ in _members(path.read_bytes()):
        for line in raw.decode("utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def valid_length(path: Path) -> int:
    """Bytes of ``path`` up to the end of its last complete member."""
    end = 0
    for _, end in _members(Path(path).read_bytes()):
        pass
    return end


class ShardWriter:
    """Appends rows to ``path``; on open, drops a torn tail left by a killed writer."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = 0
        if self.path.exists():
            size = self.path.stat().st_size
            keep = valid_length(self.path)
            if keep < size:
                with self.path.open("r+b") as fh:
                    fh.truncate(keep)
                    fh.flush()
                    os.fsync(fh.fileno())
                self.repaired_bytes = size - keep

    def append(self, row: dict[str, Any]) -> None:
        line = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with open(self.path, "ab") as raw:
            with gzip.GzipFile(fileobj=raw, mode="ab", mtime=0) as gz:
                gz.write(line)
            raw.flush()
            os.fsync(raw.fileno())
