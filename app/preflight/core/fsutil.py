"""Small file-system helpers the whole code base shares (one implementation each)."""

from __future__ import annotations

import errno
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


# --- private database files (the audit log) ---------------------------------------------


class NotARegularFile(OSError):
    """A path that must be a plain file is a symbolic link, FIFO, device, socket, folder
    or a file with other names (``kind`` says which)."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(f"{path} is a {kind}, not a regular file")
        self.filename, self.kind = str(path), kind


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (None: it is one)."""
    import stat

    for test, name in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "special file"


def private_file(path: Path | str, *, companions: tuple[str, ...] = ()) -> tuple[int, int]:
    """Make sure ``path`` is a plain file only its owner may read, without ever following
    a symbolic link or touching another file's mode; returns its (device, inode).

    A missing file is created 0600 (``O_EXCL | O_NOFOLLOW``: never through a link). An
    existing one must be a regular file, checked on an ``O_NOFOLLOW | O_NONBLOCK``
    descriptor (a FIFO cannot block it, a link cannot redirect it) with no other name (a
    hard link); its mode is narrowed with ``fchmod`` on that descriptor, and only when
    this user owns it, so nothing else is ever chmod'ed. Each of ``companions``
    (suffixes such as ``-wal``: files a database engine opens beside it by name) must be
    absent or a regular file. Raises :class:`NotARegularFile` (an ``OSError``)."""
    path = Path(path)
    for suffix in companions:
        other = path.with_name(path.name + suffix)
        try:
            kind = _kind(os.lstat(other).st_mode)
        except FileNotFoundError:
            continue
        if kind is not None:
            raise NotARegularFile(other, kind)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    flags = os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
    except FileExistsError:
        try:
            kind = _kind(os.lstat(path).st_mode)
        except FileNotFoundError:   # removed meanwhile: the caller's open recreates it
            kind = None
        if kind is not None:
            raise NotARegularFile(path, kind) from None
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            if nofollow and exc.errno == errno.ELOOP:
                raise NotARegularFile(path, "symbolic link") from None
            raise
    try:
        st = os.fstat(fd)
        kind = _kind(st.st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind)
        if st.st_nlink > 1:          # another name of the same file: not ours to change
            raise NotARegularFile(path, "hard-linked file")
        mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
        if st.st_mode & 0o077 and mine and hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
        return st.st_dev, st.st_ino
    finally:
        os.close(fd)


def same_file(path: Path | str, identity: tuple[int, int]) -> bool:
    """Whether ``path`` (not followed if a link) is still the file of ``identity``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return _kind(st.st_mode) is None and (st.st_dev, st.st_ino) == identity


def read_private_text(path: Path | str, limit: int) -> str:
    """The UTF-8 text of a small plain file, read without following a link or blocking on
    a FIFO, and refused above ``limit`` bytes before it is read. Raises ``OSError``
    (:class:`NotARegularFile` for anything but a regular file)."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_BINARY", 0))
    kind = _kind(os.lstat(path).st_mode)
    if kind is not None:
        raise NotARegularFile(path, kind)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        kind = _kind(st.st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return fh.read(limit + 1)[:limit].decode("utf-8", "replace")
