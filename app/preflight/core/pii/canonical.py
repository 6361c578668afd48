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

1. HTML character references and percent-encoded e-mail characters are decoded.
2. Non-ASCII words: Unicode NFKC (full-width digits → ASCII), other decimal digits → ASCII,
   zero-width / bidi / other invisible format characters removed, combining marks on an
   ASCII letter or digit dropped, and look-alike Cyrillic/Greek letters mapped to Latin
   in words that mix them with Latin letters or consist of look-alikes only (a real
   Russian or Greek word is left alone). Exotic spaces become plain spaces.
3. Spaced-out characters (``4 1 1 1 ...``, ``J o h n  S m i t h``) are joined.
4. Spelled-out e-mails (``[at]``, ``(at)``, `` at ... dot ``) become ``@`` and ``.``.
5. Seven or more spelled digits ("four one one ...") become digits.
6. O/o and I/l inside digit groups become 0 and 1.
7. An API key broken across lines (after a vendor prefix or a key/token label) is joined.

Plain ASCII prose passes every quick search, so the view is the text itself (no copy,
no offset arrays).
"""

from __future__ import annotations

import html
import re
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

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


# ------------------------------------------------------------------------- rewriting


@dataclass(frozen=True)
class _View:
    text: str
    starts: array | None
    ends: array | None


# An op rewrites part of a match: (a, b, None) keeps text[a:b] with its own mapping;
# (a, b, s) emits s, every character of it mapped to the range text[a:b] came from.
# Parts of the match no op mentions are deleted.
_Op = tuple[int, int, "str | None"]


class _Builder:
    def __init__(self, view: _View) -> None:
        self.view = view
        self.parts: list[str] = []
        self.starts = array("q")
        self.ends = array("q")

    def keep(self, a: int, b: int) -> None:
        if a >= b:
            return
        v = self.view
        self.parts.append(v.text[a:b])
        if v.starts is None:
            self.starts.extend(range(a, b))
            self.ends.extend(range(a + 1, b + 1))
        else:
            self.starts.extend(v.starts[a:b])
            self.ends.extend(v.ends[a:b])

    def emit(self, s: str, a: int, b: int) -> None:
        if not s:
            return
        v = self.view
        lo = a if v.starts is None else v.starts[a]
        hi = b if v.ends is None else v.ends[b - 1]
        self.parts.append(s)
        self.starts.extend([lo] * len(s))
        self.ends.extend([hi] * len(s))

    def result(self) -> _View:
        return _View("".join(self.parts), self.starts, self.ends)


def _rewrite(view: _View, pattern: re.Pattern[str],
             fn: Callable[[re.Match[str]], Sequence[_Op] | None], retry: bool = False) -> _View:
    """Apply ``fn`` to every match; unchanged when no match asks for a change. With
    ``retry``, a match ``fn`` declines is searched again from its next character."""
    builder: _Builder | None = None
    pos = 0
    m = pattern.search(view.text)
    while m is not None:
        ops = fn(m)
        if ops is None:
            m = pattern.search(view.text, m.start() + 1 if retry else m.end())
            continue
        if builder is None:
            builder = _Builder(view)
        builder.keep(pos, m.start())
        for a, b, s in ops:
            if s is None:
                builder.keep(a, b)
            else:
                builder.emit(s, a, b)
        pos = m.end()
        m = pattern.search(view.text, max(pos, m.start() + 1))
    if builder is None:
        return view
    builder.keep(pos, len(view.text))
    return builder.result()


# ------------------------------------------------------- stage 1: entities and %-codes

_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_EMAIL_CHARS = re.compile(r"[\w@.+-]+")


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
    return view


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


def _canon_word(m: re.Match[str]) -> Sequence[_Op] | None:
    word, base = m.group(), m.start()
    clusters: list[tuple[int, int]] = []
    for i, c in enumerate(word):
        if clusters and unicodedata.combining(c):
            clusters[-1] = (clusters[-1][0], i + 1)
        else:
            clusters.append((i, i + 1))
    outs = [_canon_cluster(word[a:b]) for a, b in clusters]
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


# ------------------------------------------------------------ stage 3: spaced letters

_SPACED = re.compile(r"(?<!\S)[A-Za-z0-9@.+_-](?:[ \t]+[A-Za-z0-9@.+_-]){5,}(?!\S)")
_SPACED_DIGITS = re.compile(r"(?<![\w.-])\d(?:[ \t]*[-./][ \t]*\d){6,}(?![\w-]|\.\d)")
_GAP = re.compile(r"[ \t]+")


def _join_spaced(m: re.Match[str]) -> Sequence[_Op] | None:
    value = m.group()
    if sum(c.isalnum() for c in value) < 6:
        return None
    gaps = list(_GAP.finditer(value))
    narrow = min(len(g.group()) for g in gaps)
    ops: list[_Op] = []
    pos = m.start()
    for g in gaps:
        gs, ge = m.start() + g.start(), m.start() + g.end()
        ops.append((pos, gs, None))
        if len(g.group()) > narrow:  # a wider gap separates words
            ops.append((gs, ge, " "))
        pos = ge
    ops.append((pos, m.end(), None))
    return ops


def _join_digits(m: re.Match[str]) -> Sequence[_Op]:
    return [(m.start() + i, m.start() + i + 1, None)
            for i, c in enumerate(m.group()) if c.isdigit()]


def _stage_spaced(view: _View) -> _View:
    view = _rewrite(view, _SPACED, _join_spaced)
    return _rewrite(view, _SPACED_DIGITS, _join_digits)


# -------------------------------------------------------- stage 4: spelled-out e-mails

_OPEN, _CLOSE = r"[\[\(\{<]", r"[\]\)\}>]"
_AT = (rf"(?:[ \t]*{_OPEN}[ \t]*(?:at|AT|At|@)[ \t]*{_CLOSE}[ \t]*|[ \t]+(?:at|AT)[ \t]+"
       r"|[ \t]*@[ \t]*)")
_DOT = rf"(?:[ \t]*{_OPEN}[ \t]*(?:dot|DOT|Dot|\.)[ \t]*{_CLOSE}[ \t]*|[ \t]+(?:dot|DOT)[ \t]+|\.)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_SPELLED_EMAIL = re.compile(
    rf"(?<![\w.@+-])(?P<local>[A-Za-z0-9][A-Za-z0-9._%+-]*)(?P<at>{_AT})"
    rf"(?P<domain>{_LABEL}(?:{_DOT}{_LABEL})+)(?![\w@-]|\.\w)")
_DOT_RE = re.compile(_DOT)
_TLD = re.compile(r"[A-Za-z]{2,24}")


def _join_email(m: re.Match[str]) -> Sequence[_Op] | None:
    at = m.group("at")
    dots = list(_DOT_RE.finditer(m.group("domain")))
    plain_dots = all(d.group() == "." for d in dots)
    if plain_dots and (at == "@" or at.strip() in ("at", "AT")):
        return None  # "look at example.com" is prose; a real address needs no rewrite
    labels_end = m.group("domain")[dots[-1].end():] if dots else ""
    if not _TLD.fullmatch(labels_end):
        return None
    ops: list[_Op] = [(m.start("local"), m.end("local"), None),
                      (m.start("at"), m.end("at"), "@")]
    pos = m.start("domain")
    for d in dots:
        ds, de = m.start("domain") + d.start(), m.start("domain") + d.end()
        ops.append((pos, ds, None))
        ops.append((ds, de, "." if d.group() != "." else None))
        pos = de
    ops.append((pos, m.end("domain"), None))
    return ops


def _stage_email(view: _View) -> _View:
    # retry: in "write at k [at] acme [dot] com" the first match ("write at k") is prose
    return _rewrite(view, _SPELLED_EMAIL, _join_email, retry=True)


# -------------------------------------------------------- stage 5: spelled-out digits

DIGIT_WORDS = {"zero": "0", "oh": "0", "o": "0", "one": "1", "two": "2", "three": "3",
               "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
               "nine": "9"}
_DW = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|oh|o)"
_SPELLED_DIGITS = re.compile(rf"(?i)(?<![\w-]){_DW}(?![\w])(?:[ \t]*[,./-]?[ \t]*{_DW}(?![\w])){{6,}}"
                             r"(?![\w])")
_DIGIT_WORD = re.compile(_DW, re.IGNORECASE)
_SPELLED_HINT = re.compile(r"(?i)\b(?:one|two|three|four|five|six|seven|eight|nine|zero)"
                           r"[ \t,./-]+(?:one|two|three|four|five|six|seven|eight|nine|zero)\b")


def _digits_from_words(m: re.Match[str]) -> Sequence[_Op]:
    ops: list[_Op] = []
    prev = None
    for w in _DIGIT_WORD.finditer(m.group()):
        ws, we = m.start() + w.start(), m.start() + w.end()
        if prev is not None and any(c in ",./-" for c in m.group()[prev:w.start()]):
            ops.append((m.start() + prev, ws, "-"))  # a written group separator
        ops.append((ws, we, DIGIT_WORDS[w.group().lower()]))
        prev = w.end()
    return ops


def _stage_spelled_digits(view: _View) -> _View:
    if not _SPELLED_HINT.search(view.text):
        return view
    return _rewrite(view, _SPELLED_DIGITS, _digits_from_words)


# ----------------------------------------------------- stage 6: letters inside numbers

_LOOKALIKE_DIGITS = {"O": "0", "o": "0", "I": "1", "l": "1", "|": "1"}
_DIGITISH = re.compile(r"(?<![A-Za-z0-9])[0-9OoIl|](?:[ .-]?[0-9OoIl|])*(?![A-Za-z0-9])")
_DIGITISH_HINT = re.compile(r"[0-9][ .-]?[OoIl|]|[OoIl|][ .-]?[0-9]")
_GROUP_SEP = re.compile(r"[ .-]")


def _fix_digits(m: re.Match[str]) -> Sequence[_Op] | None:
    value = m.group()
    digits = sum(c.isdigit() for c in value)
    letters = sum(c in _LOOKALIKE_DIGITS for c in value)
    groups = _GROUP_SEP.split(value)
    if (not letters or digits < 4 or letters > digits
            or not any(c.isdigit() for c in groups[0])
            or not any(c.isdigit() for c in groups[-1])):
        return None
    return [(m.start() + i, m.start() + i + 1, _LOOKALIKE_DIGITS.get(c))
            for i, c in enumerate(value)]


def _stage_lookalike_digits(view: _View) -> _View:
    if not _DIGITISH_HINT.search(view.text):
        return view
    return _rewrite(view, _DIGITISH, _fix_digits)


# ------------------------------------------------------------ stage 7: split API keys

_KEY_PREFIX = (r"(?:sk-|sk_live_|sk_test_|rk_live_|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|"
               r"glpat-|xox[abposre]-|AKIA|ASIA|AIza|hf_|npm_)")
_TAIL = r"(?P<tail>(?:[ \t]*\\?\r?\n[ \t]*[A-Za-z0-9_/+=-]{4,}(?=[ \t]*(?:\r?\n|$)))+)"
_SPLIT_KEYS = (
    # a vendor prefix: the first line may be short
    re.compile(rf"(?<![A-Za-z0-9_-])(?P<head>{_KEY_PREFIX}[A-Za-z0-9_/+=-]{{4,}}){_TAIL}"),
    # after a key/token label
    re.compile(r"(?i:key|token|secret|password)[^\n]{0,20}?[:=][ \t]*"
               rf"(?P<head>[A-Za-z0-9_/+=-]{{12,}}){_TAIL}"),
)
_TAIL_LINE = re.compile(r"[A-Za-z0-9_/+=-]{4,}")
_PLAIN_WORD = re.compile(r"[A-Z]?[a-z]+")


def _join_key(m: re.Match[str]) -> Sequence[_Op] | None:
    ops: list[_Op] = [(m.start(), m.end("head"), None)]
    pos = m.end("head")
    for part in _TAIL_LINE.finditer(m.group("tail")):
        if _PLAIN_WORD.fullmatch(part.group()):
            break  # the next line is prose, not the rest of the key
        ps = m.start("tail") + part.start()
        ops.append((ps, ps + len(part.group()), None))   # the line break is dropped
        pos = ps + len(part.group())
    if len(ops) == 1:
        return None
    ops.append((pos, m.end(), None))
    return ops


def _stage_split_keys(view: _View) -> _View:
    if "\n" not in view.text:
        return view
    for pattern in _SPLIT_KEYS:
        view = _rewrite(view, pattern, _join_key)
    return view


_STAGES: tuple[Callable[[_View], _View], ...] = (
    _stage_escapes, _stage_unicode, _stage_spaced, _stage_email, _stage_spelled_digits,
    _stage_lookalike_digits, _stage_split_keys,
)
