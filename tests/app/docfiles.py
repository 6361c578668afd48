"""Documents for the document tests: real .docx files written with python-docx (plus the
parts it cannot write: footnotes, endnotes, text boxes, charts), and
minimal PDFs written by hand."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import docx
from docx.opc.constants import CONTENT_TYPE as CT
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml.parser import parse_xml

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NS = (f'xmlns:w="{W}" '
      'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
      'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
      'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture" '
      'xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart" '
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
      'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
      'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
      'xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office"')
# A 1×1 transparent PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhf"
                       "DwAChwGA60e6kgAAAABJRU5ErkJggg==")


def make_docx(path: Path, paragraphs: list[str]) -> Path:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    document.save(str(path))
    return path


def xml(fragment: str):
    """A WordprocessingML element from ``fragment`` (namespaces declared here)."""
    end = fragment.index(">")
    end -= fragment[end - 1] == "/"
    return parse_xml(f"{fragment[:end]} {NS}{fragment[end:]}")


def add_notes(document, kind: str, notes: list[str]) -> None:
    """A footnotes or endnotes part (python-docx cannot write one) with ``notes``, ids
    1, 2, … after Word's two separator notes; the body refers to them with
    :func:`note_reference`."""
    items = [f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
             f'</w:{kind}>',
             f'<w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r>'
             f'<w:continuationSeparator/></w:r></w:p></w:{kind}>']
    ref = "footnoteRef" if kind == "footnote" else "endnoteRef"
    items += [f'<w:{kind} w:id="{i}"><w:p><w:r><w:{ref}/></w:r><w:r><w:t xml:space="preserve">'
              f' {text}</w:t></w:r></w:p></w:{kind}>' for i, text in enumerate(notes, 1)]
    blob = f'<w:{kind}s xmlns:w="{W}">{"".join(items)}</w:{kind}s>'.encode()
    content_type, reltype = ((CT.WML_FOOTNOTES, RT.FOOTNOTES) if kind == "footnote"
                             else (CT.WML_ENDNOTES, RT.ENDNOTES))
    part = Part(PackURI(f"/word/{kind}s.xml"), content_type, blob, document.part.package)
    document.part.relate_to(part, reltype)


def note_reference(paragraph, kind: str, note_id: int) -> None:
    paragraph._p.append(xml(f'<w:r><w:{kind}Reference w:id="{note_id}"/></w:r>'))


def add_picture(paragraph) -> None:
    paragraph.add_run().add_picture(io.BytesIO(PNG))


def add_chart(paragraph) -> None:
    """A chart's anchor in the text (its part is left out: only the anchor is read)."""
    paragraph._p.append(xml(
        '<w:r><w:drawing><wp:inline><wp:extent cx="9525" cy="9525"/><wp:docPr id="8" '
        'name="Chart 8"/><a:graphic><a:graphicData '
        'uri="http://schemas.openxmlformats.org/drawingml/2006/chart"><c:chart r:id="rId99"/>'
        '</a:graphicData></a:graphic></wp:inline></w:drawing></w:r>'))


def add_text_box(paragraph, text: str) -> None:
    """A text box as Word writes it: a DrawingML shape, with a VML copy of the same box
    for older readers (mc:AlternateContent)."""
    content = f"<w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>"
    paragraph._p.append(xml(
        '<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wp:anchor>'
        '<wp:docPr id="9" name="Text Box 9"/><a:graphic><a:graphicData '
        'uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp>'
        f'<wps:txbx>{content}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor>'
        '</w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>'
        f'{content}</v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>'))


def make_pdf(text: str) -> bytes:
    """A minimal one-page PDF with ``text`` in Helvetica (written by hand, no library)."""
    return make_pdf_pages([text])


def make_pdf_pages(pages: list[str]) -> bytes:
    """A minimal PDF, one page per entry; an empty entry is a page without text (as a
    scanned page is to a text extractor)."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    font = 3 + 2 * n
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode() if text else b""
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents "
                    f"{4 + 2 * i} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1,
                                                                               xref)
    return bytes(out)
