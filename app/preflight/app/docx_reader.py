"""The text of a Word (.docx) file, whole, with what it holds that is not text named.

python-docx opens the package (zip, content types, relationships, its safe XML parser:
no entities resolved, no network) and finds the parts: each section's headers and
footers, the comments with their authors, the footnotes and endnotes (read through the
package it opened, as python-docx does not model them). Its own iterators skip content
nested in wrappers (content controls, tracked insertions, fields, smart tags), so the
story elements are walked here and each run's text taken from python-docx's run elements.

Layout, so that a reader and the detector see what each piece is:

- the headers first (``Header: …``; each distinct header once), then the body in
  document order; a blank paragraph stays a blank line, line breaks and tabs stay;
- a table row is one line, its cells separated by `` | `` (visible in the editor, unlike a
  tab that looks like spaces, and read as a table by language models); paragraphs inside
  one cell are joined by `` / ``; a row without text is left out;
- a text box follows the paragraph that anchors it (``Text box: …``);
- a footnote reference becomes ``[footnote 1]`` in the text, and the notes follow the
  body (``Footnote 1: …``, ``Endnote 1: …``), then the footers, then the comments
  (``Comment by Jane Doe: …``);
- tracked changes are read as if accepted (deleted text is left out).

What is not text (images, charts, SmartArt, embedded objects, imported parts) and a part
that cannot be read are named in the notices; nothing is dropped without a word.
"""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from preflight.app.documents import Document
from preflight.core.errors import InputError
from preflight.core.textio import MAX_DOCUMENT_BYTES

# Word's XML is several times the text it holds; the text itself is capped at 1 MB.
_MAX_EXPANDED = MAX_DOCUMENT_BYTES * 20
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"         # an encrypted .docx (or an old .doc) is OLE, not zip

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_V = "{urn:schemas-microsoft-com:vml}"
_O = "{urn:schemas-microsoft-com:office:office}"
_PIC = "{http://schemas.openxmlformats.org/drawingml/2006/picture}pic"
_CHARTS = frozenset({"{http://schemas.openxmlformats.org/drawingml/2006/chart}chart",
                     "{http://schemas.microsoft.com/office/drawing/2014/chartex}chart"})
_DIAGRAM = "{http://schemas.openxmlformats.org/drawingml/2006/diagram}relIds"
# What a drawing may hold besides the above: shapes (their text boxes are read), groups
# and canvases of shapes (what they hold is counted one by one).
_CONTAINERS = frozenset({
    "http://schemas.openxmlformats.org/drawingml/2006/picture",
    "http://schemas.openxmlformats.org/drawingml/2006/chart",
    "http://schemas.microsoft.com/office/drawing/2014/chartex",
    "http://schemas.openxmlformats.org/drawingml/2006/diagram",
    "http://schemas.openxmlformats.org/drawingml/2006/lockedCanvas",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingShape",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup",
    "http://schemas.microsoft.com/office/word/2010/wordprocessingCanvas",
})

_TEXT = frozenset(f"{_W}{t}" for t in ("t", "tab", "br", "cr", "noBreakHyphen", "ptab"))
_MEDIA = frozenset({f"{_W}drawing", f"{_W}pict", f"{_W}object"})
_DELETED = frozenset({f"{_W}del", f"{_W}moveFrom"})
_NOTE_REFS = {f"{_W}footnoteReference": "footnote", f"{_W}endnoteReference": "endnote"}
_KINDS = {"image": "image", "chart": "chart", "diagram": "SmartArt diagram",
          "object": "embedded object", "chunk": "imported part"}


def read_docx(p: Path, data: bytes) -> Document:
    """The text of ``data`` (the bytes of ``p``), or an :class:`InputError` in the user's
    words for a file that is not a readable .docx."""
    from docx import Document as open_docx   # lxml and python-docx load only when needed

    unreadable = InputError(f"{p.name} is not a readable .docx file.",
                            "Open it in a word processor and save it as .docx or .txt.")
    if data.startswith(_OLE_MAGIC):
        raise InputError(f"{p.name} is password-protected or in the old Word format, so "
                         "Preflight cannot read it.",
                         "Open it in Word, remove the password (File → Info → Protect "
                         "Document) or save it as .docx, and open it again.")
    _check_expanded_size(p, data, unreadable)
    try:
        document = open_docx(io.BytesIO(data))
        return _Reader(p.name, document).read()
    except InputError:
        raise
    except Exception:  # noqa: BLE001 - python-docx and lxml raise many types for damaged files
        raise unreadable from None


def _check_expanded_size(p: Path, data: bytes, unreadable: InputError) -> None:
    """Refuse a zip bomb before anything is expanded: the members' declared sizes bound
    what ``zipfile`` will inflate (it stops there and fails the CRC check)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            declared = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise unreadable from None
    # Pictures are stored already compressed: they expand to about the file's own size.
    if declared > _MAX_EXPANDED + len(data):
        raise InputError(f"{p.name} holds more text than Preflight opens at once.",
                         "Split the document into smaller parts.")


class _Reader:
    """One pass over one document: the lines of each story, and what was not read."""

    def __init__(self, name: str, document) -> None:
        self.name, self.document = name, document
        self.skipped: Counter[str] = Counter()
        self.deleted = 0
        self.note_numbers: dict[tuple[str, str], int] = {}
        self.unreadable: list[str] = []

    def read(self) -> Document:
        body = self.blocks(self.document.element.body)     # first: it numbers the notes
        headers, footers = self.guarded("headers and footers", self.headers_footers,
                                        ([], []))
        notes = [*self.guarded("footnotes", lambda: self.notes("footnote"), []),
                 *self.guarded("endnotes", lambda: self.notes("endnote"), [])]
        comments = self.guarded("comments", self.comments, [])
        stories = ("\n".join(lines).strip() for lines in (headers, body, notes, footers,
                                                         comments))
        text = "\n\n".join(story for story in stories if story)
        return Document(text + "\n" if text else "", tuple(self.notices()))

    def guarded(self, what: str, read, empty):
        """A damaged part other than the body is named, and the rest still reads."""
        try:
            return read()
        except Exception:  # noqa: BLE001 - python-docx and lxml raise many types
            self.unreadable.append(what)
            return empty

    def notices(self) -> Iterator[str]:
        what = [_count(self.skipped[k], noun) for k, noun in _KINDS.items() if self.skipped[k]]
        if what:
            listed = ", ".join(what[:-1]) + " and " + what[-1] if len(what) > 1 else what[0]
            yield (f"Not read in {self.name}: {listed} (Preflight reads only the text; "
                   "nothing else is sent).")
        if self.deleted:
            yield (f"{self.name} has tracked changes: read as if accepted (deleted text is "
                   "left out).")
        for part in self.unreadable:
            yield f"The {part} of {self.name} could not be read (damaged); the rest was read."

    # -- the stories ------------------------------------------------------------------------
    def headers_footers(self) -> tuple[list[str], list[str]]:
        seen_parts, seen_text = set(), set()
        out: dict[str, list[str]] = {"header": [], "footer": []}
        for section in self.document.sections:
            for kind in ("header", "footer"):
                for attr, label in ((f"first_page_{kind}", f"First-page {kind}"),
                                    (kind, kind.capitalize()),
                                    (f"even_page_{kind}", f"Even-page {kind}")):
                    hf = getattr(section, attr)
                    if hf.is_linked_to_previous or hf.part.partname in seen_parts:
                        continue
                    seen_parts.add(hf.part.partname)
                    text = "\n".join(self.blocks(hf.part.element)).strip()
                    if text and text not in seen_text:
                        seen_text.add(text)
                        out[kind].append(f"{label}: {text}")
        return out["header"], out["footer"]

    def notes(self, kind: str) -> list[str]:
        found = []
        for note in _related_root(self.document, "FOOTNOTES" if kind == "footnote"
                                  else "ENDNOTES").iterchildren(f"{_W}{kind}"):
            if note.get(f"{_W}type", "normal") != "normal":
                continue                       # the separator lines Word draws
            text = "\n".join(self.blocks(note)).strip()
            number = self.number(kind, note.get(f"{_W}id", ""))
            found.append((number, f"{kind.capitalize()} {number}: {text}"))
        return [line for _n, line in sorted(found)]

    def comments(self) -> list[str]:
        lines = []
        for comment in _related_root(self.document, "COMMENTS").iterchildren(f"{_W}comment"):
            text = "\n".join(self.blocks(comment)).strip()
            author = " ".join((comment.get(f"{_W}author") or "").split())
            if text:
                lines.append(f"Comment by {author}: {text}" if author else f"Comment: {text}")
        return lines

    def number(self, kind: str, note_id: str) -> int:
        """Notes are numbered in the order the text refers to them, as Word shows them."""
        key = (kind, note_id)
        if key not in self.note_numbers:
            self.note_numbers[key] = 1 + sum(k == kind for k, _ in self.note_numbers)
        return self.note_numbers[key]

    # -- blocks: paragraphs and tables ------------------------------------------------------
    def blocks(self, container) -> list[str]:
        lines: list[str] = []
        for child in _children(container):
            tag = child.tag
            if tag == f"{_W}p":
                text, boxes = self.paragraph(child)
                if text or not boxes:            # (a paragraph that only anchors a box)
                    lines.append(text)
                lines.extend(f"Text box: {box}" for box in boxes)
            elif tag == f"{_W}tbl":
                lines.extend(self.table(child))
            elif tag == f"{_W}altChunk":
                self.skipped["chunk"] += 1
            elif tag in _DELETED:
                self.deleted += 1
            elif not _is_properties(tag):
                lines.extend(self.blocks(child))     # content controls, custom XML, …
        return lines

    def table(self, tbl) -> list[str]:
        rows = []
        for tr in _find(tbl, f"{_W}tr"):
            cells = [" / ".join(line for line in self.blocks(tc) if line.strip())
                     for tc in _find(tr, f"{_W}tc")]
            if any(cells):
                rows.append(" | ".join(cells))
        return rows

    # -- inside a paragraph -----------------------------------------------------------------
    def paragraph(self, p) -> tuple[str, list[str]]:
        parts: list[str] = []
        boxes: list[str] = []
        self.inline(p, parts, boxes)
        return "".join(parts), boxes

    def inline(self, elem, parts: list[str], boxes: list[str]) -> None:
        for child in _children(elem):
            tag = child.tag
            if tag == f"{_W}r":
                self.run(child, parts, boxes)
            elif tag in _DELETED:
                self.deleted += 1
            elif tag == f"{_M}t":
                parts.append(child.text or "")       # an equation's text
            elif not _is_properties(tag) and tag != f"{_W}p":
                self.inline(child, parts, boxes)     # hyperlinks, fields, insertions, …

    def run(self, r, parts: list[str], boxes: list[str]) -> None:
        for child in _children(r):
            tag = child.tag
            if tag in _TEXT:
                parts.append(str(child))             # python-docx's text for each element
            elif tag in _NOTE_REFS:
                kind = _NOTE_REFS[tag]
                parts.append(f"[{kind} {self.number(kind, child.get(f'{_W}id', ''))}]")
            elif tag in _MEDIA:
                self.media(child, boxes)

    def media(self, elem, boxes: list[str]) -> None:
        """Count what a drawing, VML picture or object holds; read its text boxes."""
        if elem.tag == f"{_W}object" or any(True for _ in elem.iter(f"{_O}OLEObject")):
            self.skipped["object"] += 1
            return
        for box in _outside_boxes(elem, f"{_W}txbxContent"):
            text = "\n".join(self.blocks(box)).strip()
            if text:
                boxes.append(text)
        self.skipped["image"] += _count_outside(elem, _PIC) + _count_outside(
            elem, f"{_V}imagedata")
        self.skipped["chart"] += sum(_count_outside(elem, tag) for tag in _CHARTS)
        self.skipped["diagram"] += _count_outside(elem, _DIAGRAM)
        self.skipped["object"] += sum(
            1 for g in _outside_boxes(elem, f"{_A}graphicData")
            if g.get("uri", "") not in _CONTAINERS)       # ink, 3D models, video, …


def _related_root(document, reltype: str):
    """The root element of the part the document relates to by ``reltype`` (a
    ``RELATIONSHIP_TYPE`` name); an empty element when it has none."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml.parser import OxmlElement, parse_xml

    try:
        part = document.part.part_related_by(getattr(RELATIONSHIP_TYPE, reltype))
    except KeyError:
        return OxmlElement("w:body")
    element = getattr(part, "element", None)    # python-docx models comments, not notes
    return element if element is not None else parse_xml(part.blob)


def _children(elem) -> Iterator:
    """The children of ``elem``, an mc:AlternateContent among them replaced by what it
    holds once: its first choice (else its fallback); the other options are the same
    content for other readers."""
    for child in elem.iterchildren():
        if child.tag == f"{_MC}AlternateContent":
            for option in child.iterchildren(f"{_MC}Choice", f"{_MC}Fallback"):
                yield from option.iterchildren()
                break
        else:
            yield child


def _count_outside(elem, tag: str) -> int:
    return sum(1 for _ in _outside_boxes(elem, tag))


def _outside_boxes(elem, tag: str) -> Iterator:
    """The ``tag`` elements under ``elem`` that are not inside one of its text boxes
    (those are read, and counted, with the box)."""
    for found in elem.iter(tag):
        up = found.getparent()
        while up is not None and up is not elem and up.tag != f"{_W}txbxContent":
            up = up.getparent()
        if up is elem:
            yield found


def _find(elem, tag: str) -> Iterator:
    """The ``tag`` elements under ``elem``, looking through wrappers (content controls,
    custom XML) but never into a match: a nested table's rows are its own."""
    for child in _children(elem):
        if child.tag == tag:
            yield child
        elif child.tag not in _DELETED and not _is_properties(child.tag):
            yield from _find(child, tag)


def _is_properties(tag) -> bool:
    """Formatting elements (w:pPr, w:rPr, w:tblPr, w:sectPr, …) hold no text; comments
    and processing instructions have a non-string tag."""
    return not isinstance(tag, str) or tag.endswith("Pr") or tag.endswith("PrChange")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
