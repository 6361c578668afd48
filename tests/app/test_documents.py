"""Opening documents for the window: .txt/.md/.eml/.docx/.pdf/.csv and bad input (the
.docx and .eml readers in detail: test_documents_docx.py, test_documents_eml.py)."""

from __future__ import annotations

import io

import sys
import zipfile
from pathlib import Path

import pytest

from preflight.app.documents import read_for_window
from preflight.core.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docfiles import make_pdf as _pdf  # noqa: E402


def test_txt_crlf_becomes_lf(tmp_path):
    p = tmp_path / "a.md"
    p.write_bytes("# T\r\nJane Doe\rend".encode())
    assert read_for_window(p) == "# T\nJane Doe\nend"


def test_eml_headers_and_decoded_body(tmp_path):
    p = tmp_path / "m.eml"
    p.write_bytes(b"From: Max <max@example.com>\r\nTo: jane@example.com\r\nSubject: Hi\r\n"
                  b"Content-Type: text/plain; charset=utf-8\r\n"
                  b"Content-Transfer-Encoding: base64\r\n\r\n"
                  b"SmFuZSBEb2UgcGFpZCAxMCDigqwu\r\n")
    text = read_for_window(p)
    assert text.startswith("From: Max <max@example.com>\nTo: jane@example.com\nSubject: Hi")
    assert "Jane Doe paid 10 €." in text


def test_pdf_text(tmp_path):
    pytest.importorskip("pypdf")
    p = tmp_path / "x.pdf"
    p.write_bytes(_pdf("Jane Doe wrote to Max"))
    assert "Jane Doe wrote to Max" in read_for_window(p)


def _zip(member: str, data: bytes | str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(member, data)
    return buf.getvalue()


@pytest.mark.parametrize("name,data,needle", [
    ("bad.docx", b"not a zip", "not a readable .docx"),
    ("broken.docx", _zip("word/document.xml", "<w:document><w:body><w:p>cut"),
     "not a readable .docx"),                          # damaged XML inside a good zip
    ("other.docx", _zip("content.xml", "<a/>"), "not a readable .docx"),
    ("bomb.docx", _zip("word/document.xml", b" " * 25_000_000), "more text than"),
    ("bad.pdf", b"%PDF-1.4 garbage", "could not be read as PDF"),
    ("bin.txt", b"\x00\x01\x02", "binary"),
])
def test_bad_files_raise_input_error_with_hint(tmp_path, name, data, needle):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(InputError) as err:
        read_for_window(p)
    assert needle in err.value.message and err.value.hint


def test_missing_file(tmp_path):
    with pytest.raises(InputError):
        read_for_window(tmp_path / "nope.eml")


def test_csv_rows_become_column_value_lines(tmp_path):
    from preflight.app.documents import read_document, read_for_window

    comma = tmp_path / "staff.csv"
    comma.write_bytes(b'\xef\xbb\xbfName,Email,Salary\r\nJane Doe,jane@x.com,"68,500"\r\n'
                      b'Max Power,max@y.org,\r\n\r\n')
    expected = ("Name: Jane Doe; Email: jane@x.com; Salary: 68,500\n"
                "Name: Max Power; Email: max@y.org\n")
    assert read_for_window(comma) == expected == read_document(comma)
    semi = tmp_path / "de.csv"
    semi.write_text("Name;Notiz\nJana Schmidt;ruft an\n", encoding="utf-8")
    assert read_for_window(semi) == "Name: Jana Schmidt; Notiz: ruft an\n"
    single = tmp_path / "one.csv"
    single.write_text("names\nJane\nMax\n", encoding="utf-8")
    assert read_for_window(single) == "names\nJane\nMax\n"


def test_unsupported_types_say_what_to_save_them_as(tmp_path):
    import pytest

    from preflight.app.documents import read_for_window
    from preflight.core.errors import InputError

    for name, hint in (("sheet.xlsx", "Save the sheet as .csv."),
                       ("scan.png", "run OCR"), ("old.doc", "Save it as .docx"),
                       ("archive.zip", "Save it as text")):
        f = tmp_path / name
        f.write_bytes(b"PK\x03\x04 whatever")
        with pytest.raises(InputError) as err:
            read_for_window(f)
        assert err.value.message == (f"Preflight cannot open {name}: {f.suffix} files are "
                                     "not supported.")
        assert hint in err.value.hint and ".docx, .pdf, .csv" in err.value.hint
    notes = tmp_path / "notes.log"                       # plain text still opens
    notes.write_text("Jane Doe called.", encoding="utf-8")
    assert read_for_window(notes) == "Jane Doe called."


def test_pdf_pages_without_text_are_named(tmp_path):
    from docfiles import make_pdf_pages

    from preflight.app.documents import open_for_window

    p = tmp_path / "claim.pdf"
    p.write_bytes(make_pdf_pages(["Claim by Jane Doe", "", "Paid to IBAN DE89 3704", ""]))
    doc = open_for_window(p)
    assert "Claim by Jane Doe" in doc.text and "Paid to IBAN DE89 3704" in doc.text
    assert doc.notices == ("Pages 2 and 4 of claim.pdf have no text Preflight can read (a "
                           "scan?) and are left out: run OCR on the file, or paste that "
                           "text.",)


def test_password_protected_pdf_says_so(tmp_path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.add_page(PdfReader(io.BytesIO(_pdf("Salary of Jane Doe"))).pages[0])
    writer.encrypt(user_password="s3cret", algorithm="AES-128")
    p = tmp_path / "salary.pdf"
    with p.open("wb") as fh:
        writer.write(fh)
    with pytest.raises(InputError) as err:
        read_for_window(p)
    assert err.value.message == ("salary.pdf is password-protected, so Preflight cannot "
                                 "read it.")
    assert "without the password" in err.value.hint
