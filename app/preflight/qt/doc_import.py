"""Turning an opened or dropped file into the text the window edits (Qt-free).

- .txt/.md and anything else textual: :func:`preflight.core.textio.read_document`
  (its size, binary and UTF-8 checks and messages).
- .eml: parsed with the standard library's ``email`` package — the headers a reader needs
  (From, To, Cc, Date, Subject) and the plain-text body, decoded from quoted-printable or
  base64 (HTML-only mails: tags stripped).
- .docx: paragraphs of ``word/document.xml`` read with ``zipfile`` + ElementTree (no extra
  dependency; tables and text boxes come out as paragraphs, formatting is dropped).
- .pdf: only when the pure-Python ``pypdf`` package is installed (it is optional);
  otherwise an error says how to get the text out.

Line endings become ``\\n`` because that is what the text editor holds; offsets refer to
that text.
"""

from __future__ import annotations

import email
import email.policy
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from preflight.core.errors import InputError
from preflight.core.textio import MAX_DOCUMENT_BYTES, decode_document, read_document

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def read_for_window(path: str | Path) -> str:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".eml":
        text = _read_eml(p)
    elif suffix == ".docx":
        text = _read_docx(p)
    elif suffix == ".pdf":
        text = _read_pdf(p)
    else:
        text = read_document(str(p))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _raw(p: Path) -> bytes:
    if not p.is_file():
        raise InputError(f"{p} does not exist or is not a file.", "Check the path.")
    if p.stat().st_size > MAX_DOCUMENT_BYTES * 4:
        raise InputError(f"{p.name} is too large to open.", "Split it into smaller parts.")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p.name} cannot be read ({exc.strerror or exc}).",
                         "Check that you may read the file.") from None


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
        with zipfile.ZipFile(p) as zf:
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
    try:
        reader = PdfReader(str(p))
        text = "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for damaged files
        raise InputError(f"{p.name} could not be read as PDF ({type(exc).__name__}).",
                         "Copy its text and paste it here.") from None
    if not text.strip():
        raise InputError(f"{p.name} has no extractable text (a scan?).",
                         "Run OCR on it first, or paste the text.")
    return text
