"""Reading a document for either face: plain text, e-mail, Word and PDF files.

:func:`read_document` is what the CLI commands read (``preflight detect report.docx``);
:func:`read_for_window` is what the window opens or has dropped on it. Both read the same
formats the same way; the window's copy has its line endings normalized.

- .txt/.md, stdin and anything else textual: :func:`preflight.core.textio.read_document`
  (its size, binary and UTF-8 checks and messages).
- .eml: parsed with the standard library's ``email`` package — the headers a reader needs
  (From, To, Cc, Date, Subject) and the plain-text body, decoded from quoted-printable or
  base64 (HTML-only mails: tags stripped).
- .docx: paragraphs of ``word/document.xml`` read with ``zipfile`` + ElementTree (no extra
  dependency; tables and text boxes come out as paragraphs, formatting is dropped).
- .pdf: only when the pure-Python ``pypdf`` package is installed (it is optional);
  otherwise an error says how to get the text out.

In the window, line endings become ``\\n`` because that is what the text editor holds;
its offsets refer to that text.
"""

from __future__ import annotations

import email
import io
import email.policy
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from preflight.core.errors import InputError
from preflight.core.textio import MAX_DOCUMENT_BYTES, decode_document, read_regular_file
from preflight.core.textio import read_document as read_text_document

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def read_document(source: str | Path) -> str:
    """The text of a file (``"-"``: standard input), for the CLI.

    Plain text comes back exactly as stored (CRLF kept; offsets refer to the file), the
    structured formats as their extracted text.
    """
    if str(source) == "-":
        return read_text_document("-")
    p = Path(source)
    suffix = p.suffix.lower()
    if suffix == ".eml":
        return _read_eml(p)
    if suffix == ".docx":
        return _read_docx(p)
    if suffix == ".pdf":
        return _read_pdf(p)
    return read_text_document(str(p))


def read_for_window(path: str | Path) -> str:
    """The same text, with ``\\n`` line endings (what the window's editor holds)."""
    return read_document(Path(path)).replace("\r\n", "\n").replace("\r", "\n")


def _raw(p: Path) -> bytes:
    """The file's bytes (a regular file only: never blocks on a FIFO or a device)."""
    data = read_regular_file(p, MAX_DOCUMENT_BYTES * 4, p.name)
    if len(data) > MAX_DOCUMENT_BYTES * 4:
        raise InputError(f"{p.name} is too large to open.", "Split it into smaller parts.")
    return data


def _read_eml(p: Path) -> str:
    msg = email.message_from_bytes(_raw(p), policy=email.policy.default)
    head = []
    for name in ("From", "To", "Cc", "Date", "Subject"):
        if msg.get(name):
            head.append(f"{name}: {msg.get(name)}")
    body = msg.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        try:
            text = body.get_content()
        except (LookupError, UnicodeError):
            text = decode_document(body.get_payload(decode=True) or b"", p.name)
        if body.get_content_type() == "text/html":
            text = re.sub(r"<[^>]+>", " ", text)
    return "\n".join(head) + ("\n\n" if head else "") + text.strip() + "\n"


def _read_docx(p: Path) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(_raw(p))) as zf:
            xml = zf.read("word/document.xml")
    except (zipfile.BadZipFile, KeyError):
        raise InputError(f"{p.name} is not a readable .docx file.",
                         "Open it in a word processor and save it as .docx or .txt.") from None
    root = ElementTree.fromstring(xml)
    paras = []
    for para in root.iter(f"{_W}p"):
        parts = []
        for node in para.iter():
            if node.tag == f"{_W}t" and node.text:
                parts.append(node.text)
            elif node.tag == f"{_W}tab":
                parts.append("\t")
            elif node.tag in (f"{_W}br", f"{_W}cr"):
                parts.append("\n")
        paras.append("".join(parts))
    return "\n".join(paras).strip() + "\n"


def _read_pdf(p: Path) -> str:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InputError(
            "Opening PDF files needs the optional 'pypdf' package, which is not installed.",
            "Install it (pip install pypdf) or copy the PDF's text and paste it here.",
        ) from None
    data = _raw(p)
    try:
        reader = PdfReader(io.BytesIO(data))
        text = "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for damaged files
        raise InputError(f"{p.name} could not be read as PDF ({type(exc).__name__}).",
                         "Copy its text and paste it here.") from None
    if not text.strip():
        raise InputError(f"{p.name} has no extractable text (a scan?).",
                         "Run OCR on it first, or paste the text.")
    return text
