""".docx read whole: body with tables in place, blank lines, headers, footers, notes,
comments, text boxes and wrapped content; what is not text named; bombs refused."""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import docx
import pytest

from preflight.app.documents import open_document, open_for_window, read_for_window
from preflight.core.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docfiles import (  # noqa: E402
    add_chart,
    add_notes,
    add_picture,
    add_text_box,
    make_docx,
    note_reference,
    xml,
)


def hr_letter(path: Path) -> Path:
    """A letter as HR writes it: every kind of place a name or a number can hide."""
    d = docx.Document()
    first = d.sections[0]
    first.header.paragraphs[0].text = "Northwind Traders — HR, confidential"
    first.footer.paragraphs[0].text = "Personnel file 2024-117"
    d.add_paragraph("Dear Max Power,")
    d.add_paragraph("")
    raise_ = d.add_paragraph("Your raise to $4,200 a month starts on 1 April.")
    note_reference(raise_, "footnote", 1)
    run = d.add_paragraph("Effective:").add_run()
    run.add_tab()
    run.add_text("1 April 2025")
    run.add_break()
    run.add_text("Signed: Ruth Klein")
    table = d.add_table(rows=3, cols=3)
    for i, row in enumerate([["Name", "Salary", "City"], ["Max Power", "$4,200", "Leeds"],
                             ["", "", ""]]):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    table.cell(1, 2).add_paragraph("West Yorkshire")
    after = d.add_paragraph("Your manager will be in touch.")
    after._p.addprevious(xml(
        '<w:sdt><w:sdtPr><w:alias w:val="Manager"/></w:sdtPr><w:sdtContent><w:p><w:r>'
        '<w:t>Manager: Ruth Klein</w:t></w:r></w:p></w:sdtContent></w:sdt>'))
    d.add_paragraph()._p.extend([
        xml('<w:r><w:t xml:space="preserve">Start date: </w:t></w:r>'),
        xml('<w:del w:id="1" w:author="Ruth Klein"><w:r><w:delText>1 March</w:delText></w:r>'
            '</w:del>'),
        xml('<w:ins w:id="2" w:author="Ruth Klein"><w:r><w:t>1 April</w:t></w:r></w:ins>'),
        xml('<w:fldSimple w:instr="MERGEFIELD Payroll"><w:r><w:t xml:space="preserve"> '
            '(payroll no. 88213)</w:t></w:r></w:fldSimple>'),
    ])
    chart = d.add_paragraph("Pay history: ")
    add_chart(chart)
    add_picture(chart)
    add_text_box(d.add_paragraph(), "Questions? Call Ruth on +44 113 496 0000")
    d.add_comment(raise_.runs, text="Check the band with payroll", author="Ruth Klein")
    add_notes(d, "footnote", ["Approved by the works council on 18 March."])
    add_notes(d, "endnote", ["Band B3 applies from 2025."])
    second = d.add_section()
    second.header.is_linked_to_previous = False
    second.header.paragraphs[0].text = "Northwind Traders — HR, confidential"  # once
    second.footer.is_linked_to_previous = False
    second.footer.paragraphs[0].text = "Appendix — salary bands"
    d.add_paragraph("Appendix A")
    d.save(str(path))
    return path


LETTER = """\
Header: Northwind Traders — HR, confidential

Dear Max Power,

Your raise to $4,200 a month starts on 1 April.[footnote 1]
Effective:\t1 April 2025
Signed: Ruth Klein
Name | Salary | City
Max Power | $4,200 | Leeds / West Yorkshire
Manager: Ruth Klein
Your manager will be in touch.
Start date: 1 April (payroll no. 88213)
Pay history: 
Text box: Questions? Call Ruth on +44 113 496 0000

Appendix A

Footnote 1: Approved by the works council on 18 March.
Endnote 1: Band B3 applies from 2025.

Footer: Personnel file 2024-117
Footer: Appendix — salary bands

Comment by Ruth Klein: Check the band with payroll
"""


def test_a_letter_is_read_whole_in_order(tmp_path):
    doc = open_document(hr_letter(tmp_path / "letter.docx"))
    assert doc.text == LETTER
    assert doc.notices == (
        "Not read in letter.docx: 1 image and 1 chart (Preflight reads only the text; "
        "nothing else is sent).",
        "letter.docx has tracked changes: read as if accepted (deleted text is left out).")
    assert "1 March" not in doc.text                       # the deleted text


def test_the_window_reads_the_same_with_its_notices(tmp_path):
    path = hr_letter(tmp_path / "letter.docx")
    doc = open_for_window(path)
    assert doc.text == LETTER and len(doc.notices) == 2


def test_a_comment_without_author_and_a_nested_table(tmp_path):
    d = docx.Document()
    outer = d.add_table(rows=1, cols=2)
    outer.cell(0, 0).text = "Team"
    inner = outer.cell(0, 1).add_table(rows=2, cols=1)
    inner.cell(0, 0).text = "Jane Doe"
    inner.cell(1, 0).text = "Max Power"
    para = d.add_paragraph("Budget approved.")
    d.add_comment(para.runs, text="Who signed this?", author="")
    d.save(str(tmp_path / "team.docx"))
    assert read_for_window(tmp_path / "team.docx") == (
        "Team | Jane Doe / Max Power\nBudget approved.\n\nComment: Who signed this?\n")


def _drawing(uri: str, inner: str) -> str:
    return ('<w:r><w:drawing><wp:inline><wp:extent cx="9525" cy="9525"/><wp:docPr id="3" '
            f'name="Object 3"/><a:graphic><a:graphicData uri="{uri}">{inner}</a:graphicData>'
            '</a:graphic></wp:inline></w:drawing></w:r>')


_MS = "http://schemas.microsoft.com/office/word/2010/"
_PIC = '<pic:pic><pic:blipFill><a:blip r:embed="rId9"/></pic:blipFill></pic:pic>'


@pytest.mark.parametrize("what,fragment,text,named", [
    ("a photo in a group of shapes",
     _drawing(_MS + "wordprocessingGroup", f'<wpg:wgp xmlns:wpg="{_MS}wordprocessingGroup">'
              f'{_PIC}{_PIC}</wpg:wgp>'), "Site visit with Jane Doe", "2 images"),
    ("a SmartArt organisation chart",
     _drawing("http://schemas.openxmlformats.org/drawingml/2006/diagram",
              '<dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/'
              'diagram" r:dm="rId4" r:lo="rId5" r:qs="rId6" r:cs="rId7"/>'),
     "Site visit with Jane Doe", "1 SmartArt diagram"),
    ("an embedded spreadsheet",
     '<w:r><w:object><v:shape id="s1"><v:imagedata r:id="rId8"/></v:shape>'
     '<o:OLEObject ProgID="Excel.Sheet.12" r:id="rId10"/></w:object></w:r>',
     "Site visit with Jane Doe", "1 embedded object"),
    ("handwriting (ink)", _drawing(_MS + "wordprocessingInk", "<x/>"),
     "Site visit with Jane Doe", "1 embedded object"),
    ("text written for two readers, read once",
     '<mc:AlternateContent><mc:Choice Requires="w14"><w:r><w:t xml:space="preserve"> on 3 '
     'June</w:t></w:r></mc:Choice><mc:Fallback><w:r><w:t xml:space="preserve"> on 3 June'
     '</w:t></w:r></mc:Fallback></mc:AlternateContent>',
     "Site visit with Jane Doe on 3 June", None),
])
def test_what_is_not_text_is_named(tmp_path, what, fragment, text, named):
    d = docx.Document()
    para = d.add_paragraph("Site visit with Jane Doe")
    para._p.append(xml(fragment))
    d.save(str(tmp_path / "visit.docx"))
    doc = open_document(tmp_path / "visit.docx")
    assert doc.text == text + "\n", what
    assert doc.notices == ((f"Not read in visit.docx: {named} (Preflight reads only the "
                            "text; nothing else is sent).",) if named else ()), what


def test_an_imported_part_is_named(tmp_path):
    d = docx.Document()
    d.add_paragraph("Minutes")
    d.element.body.insert(0, xml('<w:altChunk r:id="rId77"/>'))
    d.save(str(tmp_path / "minutes.docx"))
    assert open_document(tmp_path / "minutes.docx").notices == (
        "Not read in minutes.docx: 1 imported part (Preflight reads only the text; nothing "
        "else is sent).",)


def test_a_damaged_footnotes_part_is_named_and_the_rest_read(tmp_path):
    path = tmp_path / "note.docx"
    d = docx.Document()
    d.add_paragraph("Jane Doe joins on Monday.")
    add_notes(d, "footnote", ["Contract signed."])
    d.save(str(path))
    _replace_member(path, "word/footnotes.xml", b"<w:footnotes><w:footnote>cut")
    doc = open_document(path)
    assert doc.text == "Jane Doe joins on Monday.\n"
    assert doc.notices == ("The footnotes of note.docx could not be read (damaged); the "
                           "rest was read.",)


def _replace_member(path: Path, member: str, data: bytes) -> None:
    src = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(path, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, data if name == member else zin.read(name))


def _with(tmp_path: Path, member: str, data: bytes, compress=zipfile.ZIP_DEFLATED) -> bytes:
    """A real .docx with ``member`` added or replaced."""
    base = make_docx(tmp_path / "base.docx", ["Jane Doe"]).read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(base)) as zin, zipfile.ZipFile(buf, "w", compress) as zout:
        for name in zin.namelist():
            if name != member:
                zout.writestr(name, zin.read(name))
        zout.writestr(member, data)
    return buf.getvalue()


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">' + "".join(
    f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
    + f']><w:document xmlns:w="{_W}"><w:body><w:p><w:r><w:t>&i;</w:t></w:r></w:p></w:body>'
    '</w:document>')


@pytest.mark.parametrize("case,needle", [
    ("damaged xml", "not a readable .docx"),
    ("bomb in the text", "more text than"),
    ("bomb in a picture", "more text than"),
    ("entity bomb", "not a readable .docx"),
    ("encrypted", "password-protected"),
])
def test_bad_docx_is_one_line_error(tmp_path, case, needle):
    data = {
        "damaged xml": lambda: _with(tmp_path, "word/document.xml", b"<w:document><w:body>"),
        "bomb in the text": lambda: _with(tmp_path, "word/document.xml", b" " * 25_000_000),
        "bomb in a picture": lambda: _with(tmp_path, "word/media/image9.png",
                                           b"\0" * 25_000_000),
        "entity bomb": lambda: _with(tmp_path, "word/document.xml", _LAUGHS.encode()),
        # what Word writes for a password-protected file: an OLE container, not a zip
        "encrypted": lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4000,
    }[case]()
    p = tmp_path / "contract.docx"
    p.write_bytes(data)
    with pytest.raises(InputError) as err:
        open_document(p)
    assert needle in err.value.message and err.value.hint
    assert "\n" not in err.value.message
