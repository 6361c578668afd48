"""Opening documents for the window: .txt/.md/.eml/.docx/.pdf and bad input."""

from __future__ import annotations

import zipfile

import pytest

from preflight.core.errors import InputError
from preflight.app.documents import read_for_window


def _pdf(text: str) -> bytes:
    """A minimal one-page PDF with ``text`` in Helvetica (written by hand, no library)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
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


def test_docx_paragraphs(tmp_path):
    p = tmp_path / "d.docx"
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("word/document.xml",
                    f'<w:document xmlns:w="{w}"><w:body><w:p><w:r><w:t>A</w:t><w:tab/>'
                    f'<w:t>B</w:t></w:r></w:p><w:p><w:r><w:t>C</w:t></w:r></w:p>'
                    f'</w:body></w:document>')
    assert read_for_window(p) == "A\tB\nC\n"


def test_pdf_text(tmp_path):
    pytest.importorskip("pypdf")
    p = tmp_path / "x.pdf"
    p.write_bytes(_pdf("Jane Doe wrote to Max"))
    assert "Jane Doe wrote to Max" in read_for_window(p)


@pytest.mark.parametrize("name,data,needle", [
    ("bad.docx", b"not a zip", "not a readable .docx"),
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
