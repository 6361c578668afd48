"""The FILE argument of the commands that read a document: its text, and on stderr what
could not be read from it (an image, an attachment, a page without text)."""

from __future__ import annotations

import sys

from preflight.app.documents import open_document


def read_input(source: str) -> str:
    """The text of ``source`` (``"-"``: standard input); each notice of the reader is
    printed as ``preflight: note: …`` so that nothing is left out without a word."""
    doc = open_document(source)
    for notice in doc.notices:
        print(f"preflight: note: {notice}", file=sys.stderr)
    return doc.text
