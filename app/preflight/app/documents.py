"""Reading a document for either face: plain text, e-mail, Word, PDF and CSV files.

:func:`open_document` is what the CLI commands read (``preflight detect report.docx``);
:func:`open_for_window` is what the window opens or has dropped on it. Both read the same
formats the same way and return a :class:`Document`: the text, and the notices that name
in the user's words what could not be read (an image, an attachment, a page without
text), which each face shows — nothing is dropped without a word. The window's copy has
its line endings normalized.

- .txt/.md, stdin and anything else textual: :func:`preflight.core.textio.read_document`
  (its size, binary and UTF-8 checks and messages).
- .eml: :mod:`preflight.app.eml_reader` (the standard library's ``email`` package: every
  header a person would see, every text part; attachments named).
- .docx: :mod:`preflight.app.docx_reader` (python-docx: body, tables, headers, footers,
  footnotes, endnotes, comments; images, charts and objects named).
- .pdf: the pure-Python ``pypdf`` package; pages without extractable text are named.
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
import io
from dataclasses import dataclass
from pathlib import Path

from preflight.core.errors import InputError
from preflight.core.textio import MAX_DOCUMENT_BYTES, read_regular_file
from preflight.core.textio import read_document as read_text_document


@dataclass(frozen=True)
class Document:
    """A document's text, and what could not be read from it in the user's words."""

    text: str
    notices: tuple[str, ...] = ()


def open_document(source: str | Path) -> Document:
    """A file (``"-"``: standard input), for the CLI.

    Plain text comes back exactly as stored (CRLF kept; offsets refer to the file), the
    structured formats as their extracted text.
    """
    if str(source) == "-":
        return Document(read_text_document("-"))
    p = Path(source)
    suffix = p.suffix.lower()
    if suffix == ".eml":
        from preflight.app.eml_reader import read_eml

        return read_eml(p, _raw(p))
    if suffix == ".docx":
        from preflight.app.docx_reader import read_docx   # python-docx loads only for .docx

        return read_docx(p, _raw(p))
    if suffix == ".pdf":
        return _read_pdf(p)
    if suffix == ".csv":
        return Document(_read_csv(p))
    return Document(read_text_document(str(p)))


def read_document(source: str | Path) -> str:
    """Only the text of :func:`open_document` (to compare texts; a face shows the notices
    too: :func:`open_document`)."""
    return open_document(source).text


def open_for_window(path: str | Path) -> Document:
    """The same document, its text with ``\\n`` line endings (what the window's editor
    holds); a file type the window does not open is refused first (:func:`check_openable`)."""
    check_openable(Path(path))
    doc = open_document(Path(path))
    return Document(doc.text.replace("\r\n", "\n").replace("\r", "\n"), doc.notices)


def read_for_window(path: str | Path) -> str:
    """Only the text of :func:`open_for_window` (to compare texts)."""
    return open_for_window(path).text


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


def _read_pdf(p: Path) -> Document:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InputError(
            "Opening PDF files needs the optional 'pypdf' package, which is not installed.",
            "Install it (pip install pypdf) or copy the PDF's text and paste it here.",
        ) from None
    data = _raw(p)
    reader = None
    try:
        reader = PdfReader(io.BytesIO(data))      # tries the empty password itself
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for damaged files
        if reader is not None and reader.is_encrypted:
            raise InputError(f"{p.name} is password-protected, so Preflight cannot read it.",
                             "Open it, save a copy without the password (or print it to a "
                             "new PDF), and open that.") from None
        raise InputError(f"{p.name} could not be read as PDF ({type(exc).__name__}).",
                         "Copy its text and paste it here.") from None
    empty = [i + 1 for i, text in enumerate(pages) if not text.strip()]
    if len(empty) == len(pages):
        raise InputError(f"{p.name} has no extractable text (a scan?).",
                         "Run OCR on it first, or paste the text.")
    notices = ()
    if empty:
        which = (f"Page {empty[0]}" if len(empty) == 1 else
                 "Pages " + ", ".join(map(str, empty[:-1])) + f" and {empty[-1]}")
        notices = (f"{which} of {p.name} {'has' if len(empty) == 1 else 'have'} no text "
                   "Preflight can read (a scan?) and " + ("is" if len(empty) == 1 else "are")
                   + " left out: run OCR on the file, or paste that text.",)
    return Document("\n\n".join(pages), notices)
