"""The text of an e-mail (.eml): every header a person would see, every text part, and
what was not read named.

Headers, in this order and each time they occur: From, Sender, Reply-To, To, Cc, Bcc,
Resent-From, Resent-To, Resent-Cc, Date, Subject, Organization — what mail programs show
— and the X-headers that carry the same names and addresses: X-Sender, X-Original-From,
X-Original-Sender, X-Originating-Email, X-Apparently-To. Routing and technical headers
(Received, Return-Path, Delivered-To, Message-ID, DKIM-Signature, X-Mailer, the MIME
headers, …) are left out: mail programs hide them, and what is not read is never sent.

Parts, parsed with the standard library's ``email`` package: the text of every text part
in order (of a multipart/alternative, the plain version, else the HTML one as text); a
message forwarded inline follows under "Forwarded message:". Attachments, inline images,
encrypted parts and other parts that are not text are not read and each is named in a
notice ("Attachment not read: contract.pdf (application/pdf, 48 KB)"). The signature of a
signed message (multipart/signed) is not content and is skipped without a notice.
"""

from __future__ import annotations

import email
import email.header
import email.policy
import re
from email.message import EmailMessage
from html.parser import HTMLParser
from pathlib import Path

from preflight.app.documents import Document

HEADERS = ("From", "Sender", "Reply-To", "To", "Cc", "Bcc", "Resent-From", "Resent-To",
           "Resent-Cc", "Date", "Subject", "Organization", "X-Sender", "X-Original-From",
           "X-Original-Sender", "X-Originating-Email", "X-Apparently-To")
_SIGNATURES = frozenset({"application/pgp-signature", "application/pkcs7-signature",
                         "application/x-pkcs7-signature"})
_ENCRYPTED = frozenset({"application/pkcs7-mime", "application/x-pkcs7-mime"})


def read_eml(p: Path, data: bytes) -> Document:
    """The text of ``data`` (the bytes of the e-mail ``p``) and what was not read."""
    reader = _Reader(p.name)
    reader.message(email.message_from_bytes(data, policy=email.policy.default))
    text = "\n\n".join(block for block in reader.blocks if block.strip())
    return Document(text.strip() + "\n", tuple(reader.notices))


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.blocks: list[str] = []
        self.notices: list[str] = []

    def message(self, msg: EmailMessage, forwarded: bool = False) -> None:
        head = [f"{name}: {value}" for name in HEADERS for value in _header_values(msg, name)]
        self.blocks.append("\n".join((["Forwarded message:"] if forwarded else []) + head))
        self.part(msg)

    def part(self, part: EmailMessage, read: bool = True) -> None:
        """Read (or, with ``read`` false, only name what is skipped in) one MIME part."""
        ctype = part.get_content_type()
        if part.is_attachment():
            self.name_part("Attachment", part)
        elif ctype == "multipart/alternative":       # one content in several formats
            alternatives = list(part.iter_parts())
            chosen = _best_alternative(part, alternatives)
            for alt in alternatives:
                self.part(alt, read and alt is chosen)
        elif ctype == "multipart/signed":            # the content, then its signature
            for sub in list(part.iter_parts())[:1]:
                self.part(sub, read)
        elif ctype == "multipart/encrypted" or (
                ctype in _ENCRYPTED and part.get_param("smime-type") == "enveloped-data"):
            self.notices.append(f"The message in {self.name} is encrypted and Preflight "
                                "cannot decrypt it: decrypt it in your mail program, save it "
                                "as .eml, and open that.")
        elif part.get_content_maintype() == "multipart":
            for sub in part.iter_parts():
                self.part(sub, read)
        elif ctype == "message/rfc822":
            payload = part.get_payload()
            for inner in payload if isinstance(payload, list) else []:
                if read:
                    self.message(inner, forwarded=True)
                else:
                    self.part(inner, read=False)
        elif part.get_content_maintype() == "text":
            if read:
                self.blocks.append(self.text(part))
        elif part.get_content_maintype() == "image":
            self.name_part("Inline image", part)
        elif ctype not in _SIGNATURES:
            self.name_part("Part", part)

    def text(self, part: EmailMessage) -> str:
        try:
            text = part.get_content()
        except (LookupError, UnicodeError):      # an unknown or wrong charset
            raw = part.get_payload(decode=True) or b""
            if b"\0" in raw:
                self.notices.append(f"A part of {self.name} marked as text holds binary "
                                    "data and was not read.")
                return ""
            # as mail programs do: what is ASCII (most names and addresses) stays readable
            text = raw.decode("utf-8", errors="replace")
        if part.get_content_subtype() == "html":
            text = html_text(text)
        return text.strip()

    def name_part(self, what: str, part: EmailMessage) -> None:
        try:
            filename = part.get_filename()
        except Exception:  # noqa: BLE001 - a malformed parameter is no reason to fail
            filename = None
        shown = _printable(filename) or "(no name)"
        self.notices.append(f"{what} not read: {shown} ({part.get_content_type()}"
                            f"{_size(part)}).")


def _best_alternative(part: EmailMessage, alternatives: list[EmailMessage]):
    """The alternative holding the plain text, else the HTML, else the first one."""
    body = part.get_body(preferencelist=("plain", "html"))
    for alt in alternatives:
        if body is not None and any(sub is body for sub in alt.walk()):
            return alt
    return alternatives[0] if alternatives else None


def _header_values(msg: EmailMessage, name: str) -> list[str]:
    """Each value of header ``name``, decoded and on one line."""
    try:
        values = [str(v) for v in msg.get_all(name) or []]
    except Exception:  # noqa: BLE001 - the header parser raises on some malformed values
        values = []
        for key, raw in msg.raw_items():
            if key.lower() == name.lower():
                try:
                    values.append(str(email.header.make_header(
                        email.header.decode_header(raw))))
                except Exception:  # noqa: BLE001 - keep it as written
                    values.append(str(raw))
    return [" ".join(v.split()) for v in values if v.strip()]


def _size(part: EmailMessage) -> str:
    try:
        payload = part.get_payload(decode=True)
        n = len(payload) if isinstance(payload, bytes) else len(part.as_bytes())
    except Exception:  # noqa: BLE001 - a size is a courtesy; never fail for it
        return ""
    if n < 1024:
        return f", {n} bytes"
    if n < 1024 * 1024:
        return f", {round(n / 1024)} KB"
    return f", {n / 1024 / 1024:.1f} MB"


def _printable(name: str | None) -> str:
    """A file name as it may be printed: no control or bidi characters (a notice goes to a
    terminal), whitespace collapsed."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in name or "").split())


class _HtmlText(HTMLParser):
    """Text of an HTML part: tags removed, entities decoded, block elements on their own
    lines, scripts and styles left out."""

    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "table", "ul", "ol", "blockquote",
                         "h1", "h2", "h3", "h4", "h5", "h6", "hr", "pre", "section"})
    _HIDDEN = frozenset({"script", "style", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs) -> None:
        if tag in self._HIDDEN:
            self.hidden += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_startendtag(self, tag, attrs) -> None:
        if tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag) -> None:
        if tag in self._HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data) -> None:
        if not self.hidden:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(html: str) -> str:
    """The text of an HTML document, one block per line, at most one blank line between."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
