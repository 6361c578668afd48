"""Both faces read the same formats: `preflight detect|sanitize|send` on .docx and .pdf
files read by :mod:`preflight.app.documents`, like the window."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import pytest

from preflight.app.documents import read_document, read_for_window
from preflight.app.services import Services
from preflight.cli import main as cli
from preflight.core.types import Category, Span

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))
from _loopback import CaptureServer, Reply  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docfiles import make_docx, make_pdf  # noqa: E402

class EmailDetector:
    """Finds e-mail addresses; records what it was asked to scan."""

    seen: list[str] = []
    warnings: list[str] = []

    def detect(self, text: str) -> list[Span]:
        type(self).seen.append(text)
        return [Span(m.start(), m.end(), "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER, 1.0,
                     "fake", "an e-mail address")
                for m in re.finditer(r"[\w.]+@[\w.]+\.\w+", text)]


@pytest.fixture(autouse=True)
def fake_detector(monkeypatch):
    EmailDetector.seen = []
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: EmailDetector())


@pytest.fixture
def report(tmp_path: Path) -> Path:
    return make_docx(tmp_path / "report.docx",
                     ["Quarterly report", "Contact jane.doe@example.com for the figures."])


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_detect_reads_a_docx(report: Path) -> None:
    code, out, _err = run("detect", str(report), "--json")
    assert code == 0
    text = EmailDetector.seen[0]
    assert text == "Quarterly report\nContact jane.doe@example.com for the figures.\n"
    (ent,) = json.loads(out)["entities"]
    assert text[ent["start"]:ent["end"]] == "jane.doe@example.com"


def test_sanitize_reads_a_docx_like_the_window(report: Path) -> None:
    code, out, _err = run("sanitize", str(report), "-m", "redact")
    assert code == 0
    assert out == read_for_window(report).replace("jane.doe@example.com", "[REDACTED]")


def test_sanitize_reads_a_pdf(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    p = tmp_path / "memo.pdf"
    p.write_bytes(make_pdf("Write to max@example.com today"))
    code, out, _err = run("sanitize", str(p), "-m", "redact")
    assert code == 0 and "Write to [REDACTED] today" in out and "max@" not in out


def test_send_reads_a_docx(report: Path) -> None:
    with CaptureServer() as srv:
        assert run("providers", "add", "loop", "--base-url", srv.url, "--model", "m")[0] == 0
        srv.script(Reply(deltas=["fine"]))
        code, out, err = run("send", str(report), "--method", "placeholder", "--yes", "--json",
                             "--no-learn")
        assert code == 0, err
        body = srv.requests[0].body.decode()
    assert "Quarterly report" in body and "<EMAIL_ADDRESS_1>" in body
    assert "jane.doe@example.com" not in body


def test_plain_text_keeps_crlf_for_the_cli_only(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_bytes(b"a\r\nb")
    assert read_document(p) == "a\r\nb" and read_for_window(p) == "a\nb"


def test_missing_docx_is_a_one_line_error(tmp_path: Path) -> None:
    code, _out, err = run("detect", str(tmp_path / "nope.docx"))
    assert code == 2 and "does not exist" in err and "Traceback" not in err


def test_what_was_not_read_is_noted_on_stderr(tmp_path: Path) -> None:
    from email.message import EmailMessage

    import docx
    from docfiles import add_picture

    msg = EmailMessage()
    msg["From"] = "Ruth Klein <ruth.klein@northwind.example>"
    msg["Bcc"] = "ana.lima@northwind.example"
    msg.set_content("Contract attached.")
    msg.add_attachment(b"%PDF-1.4 " + b"x" * 2039, maintype="application", subtype="pdf",
                       filename="contract.pdf")
    mail = tmp_path / "mail.eml"
    mail.write_bytes(msg.as_bytes())
    code, out, err = run("detect", str(mail), "--json")
    assert code == 0
    assert err == "preflight: note: Attachment not read: contract.pdf (application/pdf, 2 KB).\n"
    assert "ana.lima@northwind.example" in EmailDetector.seen[0]      # Bcc is read
    assert [e["type"] for e in json.loads(out)["entities"]] == ["EMAIL_ADDRESS"] * 2

    d = docx.Document()
    d.add_paragraph("Badge photo of Max Power:")
    add_picture(d.add_paragraph())
    d.save(str(tmp_path / "badge.docx"))
    code, out, err = run("sanitize", str(tmp_path / "badge.docx"), "-m", "redact")
    assert code == 0 and out.startswith("Badge photo of Max Power:")
    assert ("preflight: note: Not read in badge.docx: 1 image (Preflight reads only the "
            "text; nothing else is sent).") in err.splitlines()
