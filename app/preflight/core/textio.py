"""Reading a document from a file or stdin, with messages a user can act on."""

from __future__ import annotations

import sys
from pathlib import Path

from preflight.core.errors import InputError

# About 350 pages of prose: far beyond any cloud model's context window, and the size up to
# which detection stays interactive (spaCy's own default max_length is 1,000,000 chars).
MAX_DOCUMENT_BYTES = 1_000_000


def _too_large(name: str, size: int) -> InputError:
    return InputError(
        f"{name} is {size / 1e6:.1f} MB; Preflight handles documents up to "
        f"{MAX_DOCUMENT_BYTES / 1e6:.0f} MB (about 350 pages).",
        "Split the document and process the parts separately.",
    )


def decode_document(data: bytes, name: str = "the input") -> str:
    """Bytes → text. Refuses binary data and invalid UTF-8 with a clear message.

    CRLF and lone CR are kept as they are, so offsets refer to the exact input string.
    A UTF-8 byte-order mark is dropped.
    """
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _too_large(name, len(data))
    if b"\x00" in data[:8192]:
        raise InputError(
            f"{name} looks like a binary file, not text.",
            "Save it as plain text (.txt, .md or .eml) and try again.",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not valid UTF-8 (bad byte at position {exc.start}).",
            "Re-save the file as UTF-8 text and try again.",
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def read_document(source: str) -> str:
    """Read a document from a path, or from stdin when ``source`` is ``-``."""
    if source == "-":
        return decode_document(sys.stdin.buffer.read(), "standard input")
    path = Path(source)
    if path.is_dir():
        raise InputError(f"{source} is a folder, not a file.", "Give the path of a text file.")
    if not path.exists():
        raise InputError(f"{source} does not exist.", "Check the path and try again.")
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise _too_large(path.name, size)
        with path.open("rb") as fh:
            data = fh.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise InputError(
            f"{source} cannot be read ({exc.strerror or exc}).",
            "Check that the file exists and that you may read it.",
        ) from None
    return decode_document(data, path.name)
