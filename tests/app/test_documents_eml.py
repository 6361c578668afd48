""".eml read whole: every header a person would see, every text part in order, and each
attachment, inline image or encrypted part named instead of dropped."""

from __future__ import annotations

from email.message import EmailMessage
from email.mime.application import MIMEApplication
from email.mime.image import MIMEImage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path

import pytest

from preflight.app.documents import open_document, open_for_window


def write(tmp_path: Path, msg, name: str = "mail.eml") -> Path:
    p = tmp_path / name
    p.write_bytes(msg.as_bytes())
    return p


def test_every_header_a_person_sees_and_no_routing_headers(tmp_path):
    msg = EmailMessage()
    msg["Received"] = "from mx.northwind.example (10.1.2.3) by mail.example.com"
    msg["Return-Path"] = "<bounce-77@lists.northwind.example>"
    msg["From"] = "Ruth Klein <ruth.klein@northwind.example>"
    msg["Sender"] = "HR Office <hr@northwind.example>"
    msg["Reply-To"] = "Payroll <payroll@northwind.example>"
    msg["To"] = "Max Power <max.power@example.com>"
    msg["Cc"] = "Jürgen Müller <jm@northwind.example>"
    msg["Bcc"] = "Ana Lima <ana.lima@northwind.example>"
    msg["Date"] = "Tue, 18 Mar 2025 09:14:02 +0100"
    msg["Subject"] = "Your raise from 1 April"
    msg["Organization"] = "Northwind Traders Ltd"
    msg["X-Originating-Email"] = "[ruth.k@hotmail.example]"
    msg["X-Mailer"] = "Microsoft Outlook 16.0"
    msg["Message-ID"] = "<20250318091402.77@northwind.example>"
    msg.set_content("Dear Max,\n\nyour raise to $4,200 a month starts on 1 April.\n\nRuth\n")
    doc = open_document(write(tmp_path, msg))
    assert doc.text == (
        "From: Ruth Klein <ruth.klein@northwind.example>\n"
        "Sender: HR Office <hr@northwind.example>\n"
        "Reply-To: Payroll <payroll@northwind.example>\n"
        "To: Max Power <max.power@example.com>\n"
        "Cc: Jürgen Müller <jm@northwind.example>\n"
        "Bcc: Ana Lima <ana.lima@northwind.example>\n"
        "Date: Tue, 18 Mar 2025 09:14:02 +0100\n"
        "Subject: Your raise from 1 April\n"
        "Organization: Northwind Traders Ltd\n"
        "X-Originating-Email: [ruth.k@hotmail.example]\n"
        "\n"
        "Dear Max,\n\nyour raise to $4,200 a month starts on 1 April.\n\nRuth\n")
    assert doc.notices == ()


def _mixed_mail() -> MIMEMultipart:
    """Outlook's shape: text and HTML versions, a logo inside the HTML, a footer part
    from the mailing list, a contract and a notes file attached."""
    alt = MIMEMultipart("alternative")
    alt.attach(MIMEText("Hi Max,\nplease sign the attached contract by Friday.\nRuth",
                        "plain", "utf-8"))
    related = MIMEMultipart("related")
    related.attach(MIMEText("<p>Hi Max,</p><p>please sign the attached contract by "
                            "Friday.</p><p>Ruth</p><img src='cid:logo'>", "html", "utf-8"))
    logo = MIMEImage(b"\x89PNG\r\n\x1a\n" + b"\0" * 3000, "png")
    logo.add_header("Content-ID", "<logo>")
    logo.add_header("Content-Disposition", "inline", filename="logo.png")
    related.attach(logo)
    alt.attach(related)
    msg = MIMEMultipart("mixed")
    msg["From"] = "Ruth Klein <ruth.klein@northwind.example>"
    msg["To"] = "Max Power <max.power@example.com>"
    msg["Subject"] = "Contract"
    msg.attach(alt)
    msg.attach(MIMEText("HR list: unsubscribe at hr-list@northwind.example", "plain"))
    contract = MIMEApplication(b"%PDF-1.4 " + b"x" * (48 * 1024 - 9), "pdf")
    contract.add_header("Content-Disposition", "attachment", filename="contract.pdf")
    msg.attach(contract)
    notes = MIMEText("Max Power, born 02.05.1988", "plain")
    notes.add_header("Content-Disposition", "attachment", filename="notes.txt")
    msg.attach(notes)
    return msg


def test_text_parts_in_order_and_attachments_named(tmp_path):
    doc = open_for_window(write(tmp_path, _mixed_mail()))
    assert doc.text == (
        "From: Ruth Klein <ruth.klein@northwind.example>\n"
        "To: Max Power <max.power@example.com>\n"
        "Subject: Contract\n\n"
        "Hi Max,\nplease sign the attached contract by Friday.\nRuth\n\n"
        "HR list: unsubscribe at hr-list@northwind.example\n")
    assert doc.notices == (
        "Inline image not read: logo.png (image/png, 3 KB).",
        "Attachment not read: contract.pdf (application/pdf, 48 KB).",
        "Attachment not read: notes.txt (text/plain, 26 bytes).")


def test_html_only_mail_reads_as_text(tmp_path):
    msg = EmailMessage()
    msg["From"] = "it@northwind.example"
    msg["Subject"] = "Password reset"
    msg.set_content("<html><head><style>p {color: red}</style><title>Reset</title></head>"
                    "<body><p>Hello J&uuml;rgen,</p><p>your temporary password is "
                    "<b>Tr0ub4dor&amp;3</b>.</p><div>Don&#x27;t share it.</div>"
                    "<script>track()</script></body></html>", subtype="html")
    doc = open_document(write(tmp_path, msg))
    assert doc.text == ("From: it@northwind.example\nSubject: Password reset\n\n"
                        "Hello Jürgen,\n\nyour temporary password is Tr0ub4dor&3.\n\n"
                        "Don't share it.\n")


def test_a_message_forwarded_inline_is_read(tmp_path):
    inner = EmailMessage()
    inner["From"] = "Jane Doe <jane.doe@example.org>"
    inner["Subject"] = "Sick note"
    inner.set_content("I will be off until 24 March.")
    outer = EmailMessage()
    outer["From"] = "Max Power <max.power@example.com>"
    outer["Subject"] = "Fwd: Sick note"
    outer.set_content("See below.")
    outer.add_attachment(inner, disposition="inline")
    doc = open_document(write(tmp_path, outer))
    assert doc.text == ("From: Max Power <max.power@example.com>\nSubject: Fwd: Sick note\n\n"
                        "See below.\n\nForwarded message:\n"
                        "From: Jane Doe <jane.doe@example.org>\nSubject: Sick note\n\n"
                        "I will be off until 24 March.\n")


def test_an_encrypted_message_is_named(tmp_path):
    msg = MIMEMultipart("encrypted", protocol="application/pgp-encrypted")
    msg["From"] = "Ruth Klein <ruth.klein@northwind.example>"
    msg["Subject"] = "Salary review"
    msg.attach(MIMEApplication(b"Version: 1", "pgp-encrypted"))
    msg.attach(MIMEApplication(b"-----BEGIN PGP MESSAGE-----\nhQEMA\n", "octet-stream"))
    doc = open_document(write(tmp_path, msg, "review.eml"))
    assert doc.text == ("From: Ruth Klein <ruth.klein@northwind.example>\n"
                        "Subject: Salary review\n")
    assert doc.notices == ("The message in review.eml is encrypted and Preflight cannot "
                           "decrypt it: decrypt it in your mail program, save it as .eml, "
                           "and open that.",)


@pytest.mark.parametrize("filename,shown", [
    ("Jane Doe CV.pdf", "Jane Doe CV.pdf"),
    ("invoice\u202efdp.exe", "invoice fdp.exe"),          # a bidi override shown as a gap
    ("report\x1b[31m.pdf", "report [31m.pdf"),           # no terminal escape reaches stderr
])
def test_attachment_names_are_printable(tmp_path, filename, shown):
    msg = EmailMessage()
    msg["Subject"] = "Files"
    msg.set_content("Attached.")
    msg.add_attachment(b"0123456789", maintype="application", subtype="octet-stream",
                       filename=filename)
    (notice,) = open_document(write(tmp_path, msg)).notices
    assert notice == f"Attachment not read: {shown} (application/octet-stream, 10 bytes)."
