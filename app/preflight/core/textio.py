"""Reading a document from a file or stdin, with messages a user can act on.

Nothing here ever blocks on a special file: a path is ``stat``-ed first and only a regular
file is opened, with ``O_NONBLOCK`` so that a FIFO swapped in after the check still cannot
hang the open. Input is read in chunks and stops one byte past the size limit, so a
gigabyte on stdin is refused after 1 MB, not after it was all in memory.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from preflight.core.errors import InputError, PreflightError
from preflight.core.fsutil import NotARegularFile, open_regular

# About 350 pages of prose: far beyond any cloud model's context window, and the size up to
# which detection stays interactive (spaCy's own default max_length is 1,000,000 chars).
MAX_DOCUMENT_BYTES = 1_000_000
_CHUNK = 1 << 16

# Byte-order marks, longest first (the UTF-32-LE mark starts with the UTF-16-LE one).
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"),
)


def _too_large(name: str, size: int | None) -> InputError:
    what = f"{name} is {size / 1e6:.1f} MB" if size is not None else (
        f"{name} is larger than {MAX_DOCUMENT_BYTES / 1e6:.0f} MB")
    return InputError(
        f"{what}; Preflight handles documents up to "
        f"{MAX_DOCUMENT_BYTES / 1e6:.0f} MB (about 350 pages).",
        "Split the document and process the parts separately.",
    )


def decode_document(data: bytes, name: str = "the input") -> str:
    """Bytes → text. Refuses binary data and undecodable text with a clear message.

    UTF-8 is the default; a byte-order mark selects UTF-8, UTF-16 or UTF-32 (Windows
    editors save "Unicode" as UTF-16 with a mark) and is dropped. CRLF and lone CR are kept
    as they are, so offsets refer to the exact input string.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _too_large(name, len(data))
    encoding = "utf-8"
    for bom, enc in _BOMS:
        if data.startswith(bom):
            if enc == "utf-32-le" and (len(data) % 4 or not _decodes(data[4:], enc)):
                continue        # FF FE 00 00 is also UTF-16-LE text that starts with NUL
            encoding, data = enc, data[len(bom):]
            break
    if encoding == "utf-8" and b"\x00" in data[:8192]:
        raise InputError(
            f"{name} looks like a binary file, not text.",
            "Save it as plain text (.txt, .md or .eml; UTF-8, or UTF-16 with a byte-order "
            "mark) and try again.",
        )
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not valid {encoding.upper().replace('-LE', '').replace('-BE', '')} "
            f"(bad byte at position {exc.start}).",
            "Re-save the file as UTF-8 text and try again.",
        ) from None


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _read_limited(fh: BinaryIO, limit: int) -> bytes:
    """Read at most ``limit + 1`` bytes in chunks (one byte more tells "too large")."""
    parts: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = fh.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """``"a named pipe (FIFO)"`` etc. for a special file's ``st_mode``, else ``None``."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None


def stat_regular_file(path: Path | str, what: str = "",
                      error: type[PreflightError] = InputError) -> os.stat_result:
    """``os.stat`` of a file that must exist and be a regular file, or a clear ``error``.

    Never opens the file, so a FIFO or a device cannot block. ``what`` names the file in
    messages (default: the path).
    """
    name = what or str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{name} is a symlink loop (it points back to itself).",
                        "Give the path of the real file.") from None
        if exc.errno == errno.ENOENT:
            if os.path.lexists(path):
                raise error(f"{name} is a broken symbolic link (its target is missing).",
                            "Give the path of the real file.") from None
            raise error(f"{name} does not exist.", "Check the path and try again.") from None
        raise error(f"{name} cannot be read ({exc.strerror or exc}).",
                    "Check that the file exists and that you may read it.") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name} is a folder, not a file.", "Give the path of a text file.")
    kind = special_kind(st.st_mode)
    if kind is not None or not stat.S_ISREG(st.st_mode):
        raise error(f"{name} is {kind or 'not a regular file'}, not a regular file; "
                    "Preflight does not read from it.",
                    "Save the content to a regular file and give its path.")
    return st


def read_regular_file(path: Path | str, limit: int, what: str = "",
                      error: type[PreflightError] = InputError) -> bytes:
    """The bytes of a regular file (at most ``limit + 1``); never blocks on special files."""
    name = what or str(path)
    stat_regular_file(path, name, error)
    try:
        # A document may be a link the user made; whatever it points to is checked on the
        # open descriptor (a FIFO swapped in after the stat neither blocks nor is read).
        fh = open_regular(path, "rb", follow_symlinks=True)
    except NotARegularFile as exc:
        raise error(f"{name} is {exc.kind}, not a regular file; Preflight does not read "
                    "from it.", "Save the content to a regular file and give its path."
                    ) from None
    except OSError as exc:
        raise error(f"{name} cannot be read ({exc.strerror or exc}).",
                    "Check that the file exists and that you may read it.") from None
    with fh:
        try:
            return _read_limited(fh, limit)
        except OSError as exc:
            raise error(f"{name} cannot be read ({exc.strerror or exc}).",
                        "Check that the file is readable and try again.") from None


def read_stdin() -> bytes:
    """Standard input, at most ``MAX_DOCUMENT_BYTES + 1`` bytes; closed stdin is an error."""
    stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
    closed_msg = InputError(
        "Standard input is closed, so there is no document to read.",
        "Pipe the document in (`preflight detect - < file.txt`) or give a file path.",
    )
    if stream is None:
        raise closed_msg
    try:
        return _read_limited(stream, MAX_DOCUMENT_BYTES)
    except (OSError, ValueError) as exc:   # EBADF, or "I/O operation on closed file"
        if isinstance(exc, ValueError) or exc.errno == errno.EBADF:
            raise closed_msg from None
        raise InputError(f"Standard input cannot be read ({exc.strerror or exc}).",
                         "Give the document as a file path instead.") from None


def read_document(source: str) -> str:
    """Read a document from a path, or from stdin when ``source`` is ``-``."""
    if source == "-":
        data = read_stdin()
        if len(data) > MAX_DOCUMENT_BYTES:
            raise _too_large("standard input", None)
        return decode_document(data, "standard input")
    path = Path(source)
    size = stat_regular_file(path, source).st_size
    if size > MAX_DOCUMENT_BYTES:
        raise _too_large(path.name, size)
    data = read_regular_file(path, MAX_DOCUMENT_BYTES, source)
    if len(data) > MAX_DOCUMENT_BYTES:      # it grew after the stat
        raise _too_large(path.name, None)
    return decode_document(data, path.name)
