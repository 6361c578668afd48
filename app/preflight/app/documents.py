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
- .csv: parsed with the standard library's ``csv`` (the header line's separator: comma,
  semicolon or tab); each row becomes one line of ``column: value`` pairs, so a detector sees the
  column name beside each value ("Salary: 68500") and a model reads records, not commas.

The window opens only these formats and plain-text files (:func:`check_openable`): a
spreadsheet, an image or an old .doc gets a message that says what to save it as.

In the window, line endings become ``\\n`` because that is what the text editor holds;
its offsets refer to that text.
"""

from __future__ import annotations

import csv
import email
import email.policy
import io
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
    if suffix == ".csv":
        return _read_csv(p)
    return read_text_document(str(p))


def read_for_window(path: str | Path) -> str:
    """The same text, with ``\\n`` line endings (what the window's editor holds); a file
    type the window does not open is refused first (:func:`check_openable`)."""
    check_openable(Path(path))
    return read_document(Path(path)).replace("\r\n", "\n").replace("\r", "\n")


#: What Open and a drop accept: the structured formats above and plain text.
SUPPORTED = (".txt", ".md", ".eml", ".docx", ".pdf", ".csv")
PLAIN_TEXT = frozenset({"", ".text", ".markdown", ".log", ".rst", ".tsv", ".json", ".xml",
                        ".html", ".htm", ".yaml", ".yml"})
_SAVE_AS = {
    ".doc": "Save it as .docx in your word processor (File → Save As).",
    ".odt": "Save it as .docx or .txt.", ".rtf": "Save it as .docx or .txt.",
    ".pages": "Export it as .docx or .txt.",
    ".xlsx": "Save the sheet as .csv.", ".xls": "Save the sheet as .csv.",
    ".ods": "Save the sheet as .csv.", ".numbers": "Export the sheet as .csv.",
    ".pptx": "Save it as PDF, or copy its text.", ".ppt": "Save it as PDF, or copy its text.",
    ".msg": "Save the e-mail as .eml, or copy its text.",
}
_IMAGES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp",
                     ".heic", ".svg"})


def check_openable(p: Path) -> None:
    """Refuse, with what to do instead, a file type the window does not open."""
    suffix = p.suffix.lower()
    if suffix in SUPPORTED or suffix in PLAIN_TEXT:
        return
    if suffix in _IMAGES:
        hint = "An image holds no text Preflight can read: run OCR on it, or paste the text."
    else:
        hint = _SAVE_AS.get(suffix, "Save it as text, or copy its text and paste it here.")
    raise InputError(f"Preflight cannot open {p.name}: {suffix} files are not supported.",
                     f"{hint} Supported: {', '.join(SUPPORTED)}.")


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
    unreadable = InputError(f"{p.name} is not a readable .docx file.",
                            "Open it in a word processor and save it as .docx or .txt.")
    try:
        with zipfile.ZipFile(io.BytesIO(_raw(p))) as zf:
            if zf.getinfo("word/document.xml").file_size > MAX_DOCUMENT_BYTES * 20:
                raise InputError(f"{p.name} holds more text than Preflight opens at once.",
                                 "Split the document into smaller parts.")
            xml = zf.read("word/document.xml")
        root = ElementTree.fromstring(xml)
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError, RecursionError, OSError,
            EOFError, NotImplementedError):   # damaged, truncated, or an unknown compression
        raise unreadable from None
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


def _read_csv(p: Path) -> str:
    text = read_text_document(str(p))
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first.count)     # the header line's separator
    if not first.count(delimiter):
        return text                          # one column: nothing to pair
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
                if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise InputError(f"{p.name} is not a readable CSV file ({exc}).",
                         "Open it in a spreadsheet and save it as CSV again.") from None
    if len(rows) < 2:
        return text
    header = [" ".join(h.split()) or f"column {i + 1}" for i, h in enumerate(rows[0])]
    lines = []
    for row in rows[1:]:
        cells = [f"{header[i] if i < len(header) else f'column {i + 1}'}: "
                 f"{' '.join(c.split())}" for i, c in enumerate(row) if c.strip()]
        lines.append("; ".join(cells))
    return "\n".join(lines) + "\n"


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
