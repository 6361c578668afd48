"""Stages of :mod:`preflight.core.pii.canonical` that undo textual obfuscation: spaced-out
characters, spelled-out e-mails and digits, letters inside numbers, keys split across
lines. Each stage is skipped by a quick search when nothing in the text needs it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from preflight.core.pii.rewrite import Op, View, rewrite

# ------------------------------------------------------------ stage 3: spaced letters

_SPACED = re.compile(r"(?<!\S)[A-Za-z0-9@.+_-](?:[ \t]+[A-Za-z0-9@.+_-]){5,}(?!\S)")
_SPACED_DIGITS = re.compile(r"(?<![\w.-])\d(?:[ \t]*[-./][ \t]*\d){6,}(?![\w-]|\.\d)")
_GAP = re.compile(r"[ \t]+")


def _join_spaced(m: re.Match[str]) -> Sequence[Op] | None:
    value = m.group()
    if sum(c.isalnum() for c in value) < 6:
        return None
    gaps = list(_GAP.finditer(value))
    narrow = min(len(g.group()) for g in gaps)
    ops: list[Op] = []
    pos = m.start()
    for g in gaps:
        gs, ge = m.start() + g.start(), m.start() + g.end()
        ops.append((pos, gs, None))
        if len(g.group()) > narrow:  # a wider gap separates words
            ops.append((gs, ge, " "))
        pos = ge
    ops.append((pos, m.end(), None))
    return ops


def _join_digits(m: re.Match[str]) -> Sequence[Op]:
    return [(m.start() + i, m.start() + i + 1, None)
            for i, c in enumerate(m.group()) if c.isdigit()]


_SPACED_HINT = re.compile(r"[ \t][A-Za-z0-9@.+_-][ \t]+[A-Za-z0-9@.+_-][ \t]+[A-Za-z0-9@.+_-][ \t]"
                          r"|\d[ \t]*[-./][ \t]*\d[ \t]*[-./][ \t]*\d[ \t]*[-./]")


def stage_spaced(view: View) -> View:
    if not _SPACED_HINT.search(view.text) and not _SPACED.match(view.text):
        return view  # a quick test first: the full patterns are slow on plain prose
    view = rewrite(view, _SPACED, _join_spaced)
    return rewrite(view, _SPACED_DIGITS, _join_digits)


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


def _join_email(m: re.Match[str]) -> Sequence[Op] | None:
    at = m.group("at")
    dots = list(_DOT_RE.finditer(m.group("domain")))
    plain_dots = all(d.group() == "." for d in dots)
    if plain_dots and (at == "@" or at.strip() in ("at", "AT")):
        return None  # "look at example.com" is prose; a real address needs no rewrite
    labels_end = m.group("domain")[dots[-1].end():] if dots else ""
    if not _TLD.fullmatch(labels_end):
        return None
    ops: list[Op] = [(m.start("local"), m.end("local"), None),
                      (m.start("at"), m.end("at"), "@")]
    pos = m.start("domain")
    for d in dots:
        ds, de = m.start("domain") + d.start(), m.start("domain") + d.end()
        ops.append((pos, ds, None))
        ops.append((ds, de, "." if d.group() != "." else None))
        pos = de
    ops.append((pos, m.end("domain"), None))
    return ops


# "Brad Smith <brad comstyle com>": an address in angle brackets with its "@" and dots
# spelled as spaces (AUTHORS files, list archives). Only the brackets' whole content
# counts, and only when the words read as a mailbox at a domain the suffix list knows.
_BRACKETED_SPACED = re.compile(
    rf"(?<=<)[ \t]*(?P<local>[A-Za-z0-9][A-Za-z0-9._%+-]*)"
    rf"(?P<labels>(?:[ \t]+{_LABEL}){{2,5}})[ \t]*(?=>)")


def _join_bracketed(m: re.Match[str]) -> Sequence[Op] | None:
    labels = [(m.start("labels") + g.start(), m.start("labels") + g.end())
              for g in re.finditer(_LABEL, m.group("labels"))]
    domain = ".".join(m.string[a:b] for a, b in labels)
    if not _TLD.fullmatch(domain.rsplit(".", 1)[-1]):
        return None
    from preflight.core.pii.suffixes import is_mail_domain   # tldextract only when needed

    if not is_mail_domain(f"{m.group('local')}@{domain}"):
        return None
    ops: list[Op] = [(m.start("local"), m.end("local"), None)]
    pos, sep = m.end("local"), "@"
    for a, b in labels:
        ops += [(pos, a, sep), (a, b, None)]
        pos, sep = b, "."
    return ops


_EMAIL_HINT = re.compile(rf"@|{_OPEN}[ \t]*(?:[aA][tT]|[dD][oO][tT])[ \t]*{_CLOSE}"
                         r"|[ \t](?:dot|DOT)[ \t]")
_BRACKETED_HINT = re.compile(r"<[ \t]*[\w.%+-]+[ \t]+[\w-]+[ \t]+[\w-]+[ \t\w-]*>")


def stage_email(view: View) -> View:
    if _BRACKETED_HINT.search(view.text):
        view = rewrite(view, _BRACKETED_SPACED, _join_bracketed)
    if not _EMAIL_HINT.search(view.text):
        return view
    # retry: in "write at k [at] acme [dot] com" the first match ("write at k") is prose
    return rewrite(view, _SPELLED_EMAIL, _join_email, retry=True)


# -------------------------------------------------------- stage 5: spelled-out digits

DIGIT_WORDS = {"zero": "0", "oh": "0", "o": "0", "one": "1", "two": "2", "three": "3",
               "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
               "nine": "9"}
_DW = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|oh|o)"
_SPELLED_DIGITS = re.compile(rf"(?i)(?<![\w-]){_DW}(?![\w])(?:[ \t]*[,./-]?[ \t]*{_DW}(?![\w])){{6,}}"
                             r"(?![\w])")
_DIGIT_WORD = re.compile(_DW, re.IGNORECASE)
_SPELLED_HINT = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|zero)[ \t,./-]+"
                           r"(?:one|two|three|four|five|six|seven|eight|nine|zero|oh)\b")


def _digits_from_words(m: re.Match[str]) -> Sequence[Op]:
    ops: list[Op] = []
    prev = None
    for w in _DIGIT_WORD.finditer(m.group()):
        ws, we = m.start() + w.start(), m.start() + w.end()
        if prev is not None and any(c in ",./-" for c in m.group()[prev:w.start()]):
            ops.append((m.start() + prev, ws, "-"))  # a written group separator
        ops.append((ws, we, DIGIT_WORDS[w.group().lower()]))
        prev = w.end()
    return ops


def stage_spelled_digits(view: View) -> View:
    if not _SPELLED_HINT.search(view.text.lower()):
        return view
    return rewrite(view, _SPELLED_DIGITS, _digits_from_words)


# ----------------------------------------------------- stage 6: letters inside numbers

_LOOKALIKE_DIGITS = {"O": "0", "o": "0", "I": "1", "l": "1", "|": "1"}
_DIGITISH = re.compile(r"(?<![A-Za-z0-9])[0-9OoIl|](?:[ .-]?[0-9OoIl|])*(?![A-Za-z0-9])")
_DIGITISH_HINT = re.compile(r"[0-9][ .-]?[OoIl|]|[OoIl|][ .-]?[0-9]")
_GROUP_SEP = re.compile(r"[ .-]")


def _fix_digits(m: re.Match[str]) -> Sequence[Op] | None:
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


def stage_lookalike_digits(view: View) -> View:
    if not _DIGITISH_HINT.search(view.text):
        return view
    return rewrite(view, _DIGITISH, _fix_digits)


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


def _join_key(m: re.Match[str]) -> Sequence[Op] | None:
    ops: list[Op] = [(m.start(), m.end("head"), None)]
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


def stage_split_keys(view: View) -> View:
    if "\n" not in view.text:
        return view
    for pattern in _SPLIT_KEYS:
        view = rewrite(view, pattern, _join_key)
    return view


# ------------------------------------------------------ stage 8: values broken by a wrap

#: A line at least this long before its last word is prose wrapped at a fixed width
#: (e-mail, a man page), not a signature, a list or a table.
PROSE_LINE_CHARS = 40
_BREAK = r"[ \t]*\r?\n[ \t]*"
# digit groups broken across lines: "4111 1111\n1111 1111", "+44 20 7946\n0958"
_WRAPPED_DIGITS = re.compile(
    rf"(?<![\w.,/+-])(?<!\d[ .-])(?P<head>\+?(?:\(\d{{1,5}}\)[ .-]?)?\d{{1,6}}(?:[ .-]\d{{1,6}})+[.-]?)"
    rf"(?P<gap>{_BREAK})(?P<tail>\d{{1,6}}(?:[ .-]\d{{1,6}})*)(?![\w/-]|[ .,]\d)")
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
# a key or token broken after its first part: a long mixed token ends a line, the next
# line starts with the rest ("sk_live_4eC39HqLyjWD\narjtT1zdp7dc and the webhook…")
_WRAPPED_TOKEN = re.compile(
    rf"(?<![\w/+=-])(?P<head>[A-Za-z0-9_/+=-]{{16,}})(?P<gap>{_BREAK})"
    r"(?P<tail>[A-Za-z0-9_/+=-]{4,})(?![\w/+=-])")
# a capitalized word closing a line of prose and one opening the next ("met Jan\nKowalski"),
# or a word hyphenated at the line end ("Wisniew-\nska", "Kierkegaard-\nHansen")
_WRAPPED_WORDS = re.compile(
    r"(?<![\w'’-])(?P<head>[^\W\d_][\w'’]*)(?P<hyphen>-?)(?P<gap>[ \t]*\r?\n[ \t]*)(?P<tail>[^\W\d_][\w'’]*)")


_LABEL_AFTER = re.compile(r"[ \t]*:")


def _prose_line(text: str, pos: int) -> bool:
    """The line ending at ``pos`` is long prose: ``PROSE_LINE_CHARS`` or more before it."""
    start = text.rfind("\n", 0, pos) + 1
    return pos - start >= PROSE_LINE_CHARS and bool(text[start:pos].strip())


def _join_digits_wrap(m: re.Match[str]) -> Sequence[Op] | None:
    digits = sum(c.isdigit() for c in m.group("head") + m.group("tail"))
    if not 10 <= digits <= 19 or _DATE.search(m.group("head")) or _DATE.search(m.group("tail")):
        return None            # too few or many for a card or a phone; a date per line
    gap_start, gap_end = m.span("gap")
    ops: list[Op] = [(m.start(), gap_start, None)]
    if not m.group("head").endswith(("-", ".")):
        ops.append((gap_start, gap_end, " "))
    ops.append((gap_end, m.end(), None))
    return ops


def _mixed(token: str) -> bool:
    return (any(c.isdigit() for c in token) + any(c.isupper() for c in token)
            + any(c.islower() for c in token)) >= 2


def _join_token_wrap(m: re.Match[str]) -> Sequence[Op] | None:
    head, tail = m.group("head"), m.group("tail")
    if not (_mixed(head) and any(c.isdigit() for c in head)) or _PLAIN_WORD.fullmatch(tail) \
            or not (_mixed(tail) or tail.isdigit()):
        return None
    return [(m.start(), m.end("head"), None), (m.start("tail"), m.end(), None)]


def _join_words_wrap(m: re.Match[str]) -> Sequence[Op] | None:
    head, tail, text = m.group("head"), m.group("tail"), m.string
    hyphen = bool(m.group("hyphen"))
    if not (hyphen or head[0].isupper() and tail[0].isupper()) \
            or not _prose_line(text, m.end("hyphen")):
        return None
    if hyphen:
        if tail[0].islower():                       # "Wisniew-\nska": one word
            return [(m.start(), m.end("head"), None), (m.start("tail"), m.end(), None)]
        return [(m.start(), m.end("hyphen"), None), (m.start("tail"), m.end(), None)]
    if _LABEL_AFTER.match(text, m.end()):
        return None                                 # "…Mark Adler\nLicense: GPL" is a field
    return [(m.start(), m.end("head"), None), (m.start("gap"), m.end("gap"), " "),
            (m.start("tail"), m.end(), None)]


def stage_wraps(view: View) -> View:
    """Join a card or phone number, a key, a name or a hyphenated word that a line break
    cut in two, so each is found whole (its original range then spans the break)."""
    if "\n" not in view.text:
        return view
    view = rewrite(view, _WRAPPED_DIGITS, _join_digits_wrap, retry=True)
    view = rewrite(view, _WRAPPED_TOKEN, _join_token_wrap)
    return rewrite(view, _WRAPPED_WORDS, _join_words_wrap, retry=True)
