"""The canonical view of a text that detection runs on, with an exact map back.

People (and attackers) hide identifiers from pattern matchers: a zero-width space inside
a card number, a Cyrillic "а" in an e-mail, ``jane [at] acme [dot] com``, ``4 1 1 1 ...``,
the letter O for a zero, "four one one one ...", full-width digits, an API key broken
across two lines. :func:`canonicalize` undoes these in a fixed series of stages and keeps,
for every character of the result, the range of original characters it came from, so a
span found on the canonical text maps back to the smallest original range that covers it
(the zero-width characters inside a card number included, so sanitizing removes them
all).

Stages, in order (each is skipped by a quick search when nothing in the text needs it):

1. HTML character references, percent-encoded e-mail characters and MIME encoded words
   (``=?ISO-8859-1?Q?J=F8rgen_Thomsen?=``, a pasted e-mail header's display name) are
   decoded.
2. Non-ASCII words: Unicode NFKC (full-width digits → ASCII), other decimal digits → ASCII,
   zero-width / bidi / other invisible format characters removed, combining marks on an
   ASCII letter or digit dropped, and look-alike Cyrillic/Greek letters mapped to Latin
   in words that mix them with Latin letters or consist of look-alikes only (a real
   Russian or Greek word is left alone). A letter lost to a wrong charset (U+FFFD inside
   a word) reads as "o". Exotic spaces become plain spaces.
3. Spaced-out characters (``4 1 1 1 ...``, ``J o h n  S m i t h``) are joined.
4. Spelled-out e-mails (``[at]``, ``(at)``, `` at ... dot ``, and ``<brad example com>``
   in angle brackets) become ``@`` and ``.``.
5. Seven or more spelled digits ("four one one ...") become digits.
6. O/o and I/l inside digit groups become 0 and 1.
7. An API key broken across lines (after a vendor prefix or a key/token label) is joined.
8. Values a line break cut in two are joined: digit groups of a card or phone number
   ("4111 1111\n1111 1111"), a long mixed-character token and the rest of it on the next
   line, a capitalized word closing a line of prose and the one opening the next ("Jan\n
   Kowalski"), a word hyphenated at a line end ("Wisniew-\nska").

Plain ASCII prose passes every quick search, so the view is the text itself (no copy,
no offset arrays).
"""

from __future__ import annotations

import html
import re
from email.errors import HeaderParseError
from email.header import decode_header
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

from preflight.core.pii.obfuscations import (
    stage_email, stage_lookalike_digits, stage_spaced, stage_spelled_digits,
    stage_split_keys, stage_wraps,
)
from preflight.core.pii.rewrite import Op as _Op
from preflight.core.pii.rewrite import View as _View
from preflight.core.pii.rewrite import rewrite as _rewrite

# --------------------------------------------------------------------------- the value


@dataclass(frozen=True)
class CanonicalText:
    """``text`` is the canonical view of ``original``; ``to_original`` maps offsets back.

    ``starts[i]``/``ends[i]`` give the original range that canonical character ``i`` came
    from; both are non-decreasing. None means the view is the original (identity).
    """

    original: str
    text: str
    starts: array | None = field(default=None, repr=False)
    ends: array | None = field(default=None, repr=False)

    @property
    def is_identity(self) -> bool:
        return self.starts is None

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """The smallest original range covering canonical ``text[start:end]``."""
        if self.starts is None:
            return start, end
        n = len(self.text)
        if not 0 <= start <= end <= n:
            raise ValueError(f"range [{start}, {end}) outside the canonical text")
        if start == end:
            pos = self.starts[start] if start < n else len(self.original)
            return pos, pos
        return self.starts[start], self.ends[end - 1]


def canonicalize(text: str) -> CanonicalText:
    """The canonical view of ``text`` (stages in the module docstring)."""
    view = _View(text, None, None)
    for stage in _STAGES:
        view = stage(view)
    return CanonicalText(text, view.text, view.starts, view.ends)


# ------------------------------------------------------- stage 1: entities and %-codes

_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_EMAIL_CHARS = re.compile(r"[\w@.+-]+")
# RFC 2047: =?charset?Q or B?payload?= (an RFC 2231 language suffix allowed).
_ENCODED_WORD = re.compile(r"=\?[A-Za-z0-9_.:+-]{1,40}(?:\*[A-Za-z-]{1,20})?\?[QqBb]\?"
                           r"[^?\s]{1,1000}\?=")


def _decode_entity(m: re.Match[str]) -> Sequence[_Op] | None:
    out = html.unescape(m.group())
    if out == m.group() or len(out) != 1:
        return None
    return [(m.start(), m.end(), out)]


def _decode_percent(m: re.Match[str]) -> Sequence[_Op] | None:
    out = unquote(m.group(), errors="strict") if _valid_utf8(m.group()) else ""
    # only characters that belong in an address or a name ("%20" in a URL stays)
    if not out or not _EMAIL_CHARS.fullmatch(out):
        return None
    return [(m.start(), m.end(), out)]


def _decode_encoded_word(m: re.Match[str]) -> Sequence[_Op] | None:
    """The text of one MIME encoded word; every character of it maps to the whole word,
    so a name found inside replaces the encoded form."""
    try:
        ((raw, charset),) = decode_header(m.group())
        out = raw.decode(charset or "ascii") if isinstance(raw, bytes) else raw
    except (ValueError, LookupError, UnicodeError, HeaderParseError):
        return None                  # unknown charset, bad base64: left as written
    if not out.strip() or not out.isprintable():
        return None
    return [(m.start(), m.end(), out)]


def _valid_utf8(encoded: str) -> bool:
    try:
        bytes.fromhex(encoded.replace("%", "")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _stage_escapes(view: _View) -> _View:
    for _ in range(2):  # "&amp;#64;" is escaped twice
        if "&" not in view.text:
            break
        view = _rewrite(view, _ENTITY, _decode_entity)
    if "%" in view.text:
        view = _rewrite(view, _PERCENT, _decode_percent)
    if "=?" in view.text:
        view = _rewrite(view, _ENCODED_WORD, _decode_encoded_word)
    return view


def readable(value: str) -> str:
    """``value`` as a reader should see it: escapes decoded (stage 1: HTML references,
    %-codes in an address, MIME encoded words) and invisible characters dropped — the
    same characters, not a guess about look-alikes. A vault keeps this spelling, so an
    answer names "Jørgen Thomsen", not ``=?ISO-8859-1?Q?J=F8rgen_Thomsen?=``, and two
    spellings of one value share one token."""
    if value.isascii() and not any(c in value for c in "&%="):
        return value
    text = _stage_escapes(_View(value, None, None)).text
    return "".join(c for c in text if not _invisible(c))


# --------------------------------------------------------- stage 2: non-ASCII words

#: Look-alike letters (Unicode confusables for the Latin letters that matter).
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    # (lower-case small capitals such as к, м, н, т are left out: with them most
    # ordinary Russian words would count as "look-alikes only")
    "а": "a", "е": "e", "ё": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
    "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w",
    "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ї": "I", "Ј": "J",
    "Ѕ": "S", "Ԁ": "D", "Һ": "H", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek
    "α": "a", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "υ": "u", "χ": "x", "ω": "w",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes NFKC keeps
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i",
}

_NON_ASCII_WORD = re.compile(r"[^\s]*[^\x00-\x7f][^\s]*")
_EXOTIC_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u2028\u2029\u0085]")
_LINE_SEPARATORS = "\u2028\u2029\u0085"
# Hangul fillers and the combining grapheme joiner are invisible but not format chars.
_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u3164\uffa0")


def _invisible(c: str) -> bool:
    return (unicodedata.category(c) == "Cf" or c in _INVISIBLE_EXTRA
            or "\ufe00" <= c <= "\ufe0f" or "\U000e0100" <= c <= "\U000e01ef")


def _canon_cluster(cluster: str) -> str:
    """One base character with its combining marks, canonicalized (may be empty)."""
    cluster = "".join(c for c in cluster if not _invisible(c))
    if not cluster:
        return ""
    base = cluster[0]
    if base.isascii():
        # an ASCII letter or digit with marks stacked on it (strike-through, zalgo)
        out = unicodedata.normalize("NFKC", cluster)
        return base if len(out) > 1 and base.isalnum() else out
    if unicodedata.category(base) == "Nd" and len(cluster) == 1:
        return str(unicodedata.digit(base))
    return unicodedata.normalize("NFKC", cluster)


def _fill_lost_letters(outs: list[str]) -> None:
    """A letter lost to a bad decoding ("J\ufffdrgen", "Bj\ufffdrn": an accented letter
    read with the wrong charset became U+FFFD) reads as an ``o``, so the name model and
    the name rules see a name and its other mentions link to it; the span maps back over
    the replacement character."""
    for i, out in enumerate(outs):
        if out != "\ufffd":
            continue
        before = outs[i - 1][-1:] if i else ""
        after = outs[i + 1][:1] if i + 1 < len(outs) else ""
        if before.isalpha() or after.isalpha():
            upper = (after or before).isupper() and (before or after).isupper()
            outs[i] = "O" if upper else "o"


def _canon_word(m: re.Match[str]) -> Sequence[_Op] | None:
    word, base = m.group(), m.start()
    clusters: list[tuple[int, int]] = []
    for i, c in enumerate(word):
        if clusters and unicodedata.combining(c):
            clusters[-1] = (clusters[-1][0], i + 1)
        else:
            clusters.append((i, i + 1))
    outs = [_canon_cluster(word[a:b]) for a, b in clusters]
    _fill_lost_letters(outs)
    letters = [c for out in outs for c in out if c.isalpha() or c.isdigit()]
    mixed = any(c.isascii() for c in letters)
    if mixed or (letters and all(c in CONFUSABLES for c in letters if not c.isascii())):
        outs = ["".join(CONFUSABLES.get(c, c) for c in out) for out in outs]
    if all(out == word[a:b] for (a, b), out in zip(clusters, outs)):
        return None
    ops: list[_Op] = []
    for (a, b), out in zip(clusters, outs):
        if out == word[a:b]:
            ops.append((base + a, base + b, None))
        elif out:
            ops.append((base + a, base + b, out))
    return ops


def _space(m: re.Match[str]) -> Sequence[_Op]:
    return [(m.start(), m.end(), "\n" if m.group() in _LINE_SEPARATORS else " ")]


def _stage_unicode(view: _View) -> _View:
    if view.text.isascii():
        return view
    view = _rewrite(view, _EXOTIC_SPACE, _space)
    return _rewrite(view, _NON_ASCII_WORD, _canon_word)


_STAGES: tuple[Callable[[_View], _View], ...] = (
    _stage_escapes, _stage_unicode, stage_spaced, stage_email, stage_spelled_digits,
    stage_lookalike_digits, stage_split_keys, stage_wraps,
)
