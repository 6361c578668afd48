"""Reading documents: every bad input ends in an InputError with a hint."""

from __future__ import annotations

import errno
import os

import pytest

from preflight.core.errors import InputError
from preflight.core.textio import MAX_DOCUMENT_BYTES, decode_document, read_document


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", ""),
        (b"plain ascii", "plain ascii"),
        ("h\u00e9llo \U0001F600 \u4e2d\u6587 \u0627\u0644\u0639\u0631\u0628\u064a\u0629".encode(),
         "h\u00e9llo \U0001F600 \u4e2d\u6587 \u0627\u0644\u0639\u0631\u0628\u064a\u0629"),
        (b"line one\r\nline two\r\n", "line one\r\nline two\r\n"),   # CRLF kept: offsets exact
        (b"\xef\xbb\xbfwith bom", "with bom"),
    ],
)
def test_decodes_text_exactly(data: bytes, expected: str) -> None:
    assert decode_document(data) == expected


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"caf\xe9 latin-1", "not valid UTF-8"),
        (b"x" * (MAX_DOCUMENT_BYTES + 1), "up to 1 MB"),
    ],
)
def test_refuses_bad_bytes_with_hint(data: bytes, needle: str) -> None:
    with pytest.raises(InputError) as info:
        decode_document(data, "doc.txt")
    assert needle in str(info.value)
    assert info.value.hint


def test_folder_missing_and_unreadable(tmp_path, monkeypatch) -> None:
    with pytest.raises(InputError, match="folder"):
        read_document(str(tmp_path))
    with pytest.raises(InputError, match="does not exist"):
        read_document(str(tmp_path / "nope.txt"))
    locked = tmp_path / "locked.txt"
    locked.write_text("secret")
    # Permission bits do not stop root (CI runs as root): the kernel's refusal is
    # simulated at the one place the file is opened.
    real_open = os.open

    def refusing_open(path, flags, *args, **kwargs):
        if str(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(InputError, match="cannot be read"):
        read_document(str(locked))


def test_five_megabytes_is_refused_before_reading(tmp_path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * (1024 * 1024))  # 5 MB
    with pytest.raises(InputError) as info:
        read_document(str(big))
    assert "5.2 MB" in str(info.value)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_text_with_a_byte_order_mark_is_decoded_not_called_binary(encoding: str) -> None:
    text = "Zoë wrote to 李小龙.\r\n"
    assert decode_document(("\ufeff" + text).encode(encoding)) == text


def test_symlink_loop_and_special_files_are_named(tmp_path) -> None:
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="symlink loop"):
        read_document(str(loop))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="named pipe"):
        read_document(str(fifo))                      # returns at once: never opened
    with pytest.raises(InputError, match="character device"):
        read_document("/dev/zero")                    # would otherwise read forever


def test_stdin_is_read_in_chunks_and_stops_past_the_limit(monkeypatch) -> None:
    import io
    import sys

    class Endless(io.RawIOBase):
        served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:
            buf[:] = b"a" * len(buf)
            Endless.served += len(buf)
            return len(buf)

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Endless())))
    with pytest.raises(InputError, match="larger than 1 MB"):
        read_document("-")
    assert Endless.served < MAX_DOCUMENT_BYTES * 2     # stopped, did not slurp everything
    monkeypatch.setattr(sys, "stdin", None)            # what Python sets for `<&-`
    with pytest.raises(InputError, match="Standard input is closed"):
        read_document("-")
