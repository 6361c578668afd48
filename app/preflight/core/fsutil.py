"""Small file-system helpers the whole code base shares (one implementation each).

Every configuration file Preflight reads and every file it writes goes through
:func:`open_regular` (or :func:`atomic_write_bytes`, which checks its target the same
way): the path must be absent or a regular file — never a symbolic link, folder, FIFO,
device or socket — checked with ``lstat`` before the open and with ``fstat`` on the
descriptor after it (``O_NOFOLLOW | O_NONBLOCK``, so a link or a FIFO swapped in between
can neither redirect the open nor block it). :func:`read_regular` reads at most a given
number of bytes, so ``/dev/zero`` or a huge file can never fill the memory.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from preflight.core.errors import ConfigError


def atomic_write_bytes(path: Path | str, data: bytes, *, mode: int | None = None,
                       fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never
    half of either. ``mode`` sets the permissions before the rename (the temporary file
    is created 0600, so a secret is never readable by others, not even for a moment)."""
    path = Path(path)
    check_regular(path, writing=True)       # never replace a link, FIFO or device
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


# -- regular files only ---------------------------------------------------------------

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_EXTRA = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_KINDS = (
    (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)
_FLAGS = {
    "r": os.O_RDONLY, "w": os.O_WRONLY | os.O_CREAT, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


def file_kind(mode: int) -> str | None:
    """``"a symbolic link"``, ``"a named pipe (FIFO)"`` … for an ``st_mode`` that is not a
    regular file; ``None`` for a regular file."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


class NotARegularFile(ConfigError, OSError):
    """A path Preflight would read or write is a link, folder, FIFO, device or socket.

    Both a :class:`ConfigError` (faces show it as one line) and an ``OSError`` (code that
    already handles an unreadable or unwritable file handles this one the same way)."""

    def __init__(self, path: Path | str, kind: str, *, writing: bool) -> None:
        verb = "write to" if writing else "read"
        if writing:
            hint = "Remove it or choose another file name."
        elif kind == "a symbolic link":
            hint = "Replace the link with a copy of the file it points to."
        else:
            hint = "Replace it with a regular file."
        ConfigError.__init__(self, f"{path} is {kind}, not a regular file; Preflight does "
                             f"not {verb} it.", hint)
        self.errno = errno.EINVAL
        self.strerror = f"it is {kind}, not a regular file"
        self.filename = str(path)
        self.kind = kind


def check_regular(path: Path | str, *, writing: bool = False,
                  follow_symlinks: bool = False) -> os.stat_result | None:
    """The ``stat`` of ``path`` if it is a regular file, ``None`` if it does not exist;
    anything else raises :class:`NotARegularFile`. Never opens the path."""
    try:
        st = os.stat(path) if follow_symlinks else os.lstat(path)
    except FileNotFoundError:
        return None
    kind = file_kind(st.st_mode)
    if kind is not None:
        raise NotARegularFile(path, kind, writing=writing)
    return st


def open_regular(path: Path | str, mode: str = "rb", *, perms: int = 0o600,
                 follow_symlinks: bool = False, **text: Any) -> IO[Any]:
    """Open ``path`` only if it is (or, for writing, will be) a regular file.

    ``mode`` is ``r``, ``w``, ``a`` or ``x`` (create, never replace), with ``b`` for bytes;
    ``text`` goes to :func:`os.fdopen` (``encoding``, ``newline``). A new file gets
    ``perms``. The last path component must not be a symbolic link unless
    ``follow_symlinks`` (documents the user names). Missing files and OS errors raise the
    usual ``OSError``; a special file raises :class:`NotARegularFile` without blocking.
    """
    writing = mode[0] != "r"
    if mode[0] not in _FLAGS or set(mode[1:]) - {"b", "t"}:
        raise ValueError(f"unsupported mode {mode!r}")
    check_regular(path, writing=writing, follow_symlinks=follow_symlinks)
    flags = _FLAGS[mode[0]] | _NONBLOCK | _EXTRA | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags, perms)
    except OSError as exc:
        # ELOOP: a link appeared after the check; ENXIO: a FIFO nobody reads (writing);
        # EISDIR: a folder.
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.EMLINK):
            check_regular(path, writing=writing, follow_symlinks=follow_symlinks)
        raise
    try:
        kind = file_kind(os.fstat(fd).st_mode)     # what was really opened
        if kind is not None:
            raise NotARegularFile(path, kind, writing=writing)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        if mode[0] == "w":
            os.ftruncate(fd, 0)     # only now: O_TRUNC would act before the check
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, mode.replace("x", "w"), **text)


def read_regular(path: Path | str, limit: int, *, follow_symlinks: bool = False) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (one byte more than
    ``limit`` tells the caller "too large"); see :func:`open_regular` for what raises."""
    with open_regular(path, "rb", follow_symlinks=follow_symlinks) as fh:
        return fh.read(limit + 1)


def check_database_files(db: Path | str) -> None:
    """Before SQLite opens ``db``: it and its journal, WAL and shared-memory files must be
    absent or regular files (SQLite itself would follow a link and block on a FIFO)."""
    db = Path(db)
    for path in (db, *(db.with_name(db.name + s) for s in ("-journal", "-wal", "-shm"))):
        check_regular(path, writing=True)


# -- private database files (the audit log) ------------------------------------------


def private_file(path: Path | str, *, companions: tuple[str, ...] = ()) -> tuple[int, int]:
    """Make sure ``path`` is a plain file only its owner may read, without ever following
    a symbolic link or touching another file's mode; returns its (device, inode).

    A missing file is created 0600 (``O_EXCL | O_NOFOLLOW``: never through a link). An
    existing one must be a regular file, checked on an ``O_NOFOLLOW | O_NONBLOCK``
    descriptor (a FIFO cannot block it, a link cannot redirect it) with no other name (a
    hard link); its mode is narrowed with ``fchmod`` on that descriptor, and only when
    this user owns it, so nothing else is ever chmod'ed. Each of ``companions``
    (suffixes such as ``-wal``: files a database engine opens beside it by name) must be
    absent or a regular file. Raises :class:`NotARegularFile`."""
    path = Path(path)
    for suffix in companions:
        check_regular(path.with_name(path.name + suffix), writing=True)
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _EXTRA
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _EXTRA, 0o600)
    except FileExistsError:
        check_regular(path, writing=True)
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            if _NOFOLLOW and exc.errno == errno.ELOOP:
                raise NotARegularFile(path, "a symbolic link", writing=True) from None
            raise
    try:
        st = os.fstat(fd)
        kind = file_kind(st.st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind, writing=True)
        if st.st_nlink > 1:          # another name of the same file: not ours to change
            raise NotARegularFile(path, "a hard-linked file", writing=True)
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
    return file_kind(st.st_mode) is None and (st.st_dev, st.st_ino) == identity


def read_private_text(path: Path | str, limit: int) -> str:
    """The UTF-8 text of a small plain file (:func:`read_regular`), refused above ``limit``
    bytes. Raises ``OSError`` (:class:`NotARegularFile` for anything but a regular file)."""
    data = read_regular(path, limit)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data.decode("utf-8", "replace")
