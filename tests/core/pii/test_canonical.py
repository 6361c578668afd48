"""The canonical view: each evasion stage, and the offset map back to the original."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from preflight.core.pii.canonical import CONFUSABLES, canonicalize

ZW = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066"]


@pytest.mark.parametrize("original, canonical", [
    ("card 4111\u200b1111\u200c1111\u2060 1111", "card 411111111111 1111"),
    ("mail j\u0430ne@\u0430cme.com", "mail jane@acme.com"),            # Cyrillic а
    ("\u0420\u0430ul@example.org", "Paul@example.org"),                  # Cyrillic Р, а
    ("jane [at] acme [dot] com", "jane@acme.com"),
    ("jane (at) acme (dot) co (dot) uk", "jane@acme.co.uk"),
    ("jane at acme dot com", "jane@acme.com"),
    ("jane(at)acme.com", "jane@acme.com"),
    ("jane{at}acme{dot}com", "jane@acme.com"),
    ("jane&#64;acme&#46;com", "jane@acme.com"),
    ("jane&commat;acme&period;com", "jane@acme.com"),
    ("jane&amp;#64;acme.com", "jane@acme.com"),
    ("jane%40acme.com", "jane@acme.com"),
    ("Brad Smith <brad comstyle com>", "Brad Smith <brad@comstyle.com>"),   # AUTHORS file
    ("Chris Mayo <aklhfex gmail com>", "Chris Mayo <aklhfex@gmail.com>"),
    ("<jo  mail example co uk>", "<jo@mail.example.co.uk>"),
    ("4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", "4111111111111111"),
    ("J o h n  S m i t h", "John Smith"),
    ("5-5-5-1-2-3-4-5-6-7", "5551234567"),
    ("card 4lll 1111 1111 1111", "card 4111 1111 1111 1111"),
    ("Tel 555-O1O-4567", "Tel 555-010-4567"),
    ("four one one one one one one one", "41111111"),
    ("call five five five, one two three, four five six seven", "call 555-123-4567"),
    ("SSN \uff11\uff12\uff13-\uff14\uff15-\uff16\uff17\uff18\uff19", "SSN 123-45-6789"),
    ("SSN \u0661\u0662\u0663-45-6789", "SSN 123-45-6789"),            # Arabic-Indic digits
    ("4\u03361\u03361\u03361", "4111"),                               # strike-through marks
    ("key: sk-abc123def456ghi789\njkl012mno345\nThanks", "key: sk-abc123def456ghi789jkl012mno345\nThanks"),
    ("a\u00a0b\u2003c", "a b c"),
    ("From: =?ISO-8859-1?Q?J=F8rgen_Thomsen?= <j@x.net>", "From: Jørgen Thomsen <j@x.net>"),
    ("From: =?utf-8?b?SsO4cmdlbiBUaG9tc2Vu?=", "From: Jørgen Thomsen"),
    ("J\ufffdrgen and Bj\ufffdrn M\ufffdLLER", "Jorgen and Bjorn MOLLER"),  # wrong charset
])
def test_stages(original, canonical):
    view = canonicalize(original)
    assert view.text == canonical
    assert not view.is_identity


@pytest.mark.parametrize("text", [
    "We look at example.com for data.",        # prose "at" with a real domain
    "In 2019 I moved to Oslo.",
    "one or two of them",
    "Москва и Иван Петров",                    # real Cyrillic words stay
    "José and Zoë",                             # precomposed accents stay
    "a \ufffd b \ufffd\ufffd",                     # a lost character alone is no letter
    "The password is required.\nNext line",
    "A B C",
    "=?no-such-charset?Q?abc?= and =?utf-8?B?%%%?= stay",   # undecodable encoded words
    "x =?UTF-8?Q?=E2=80=8B?= y",                # decodes to nothing visible: left alone
    "if a =?b then c?= d",                       # not an encoded word
    "<br clear all> and <a href x>",            # tags: the last word is no domain suffix
    "see <the big picture> here",               # bracketed words, no known suffix
    "x < a b c > y",
])
def test_ordinary_text_is_unchanged(text):
    assert canonicalize(text).text == text


def test_map_covers_the_zero_width_characters():
    original = "card 4111\u200b1111\u200b1111\u200b1111 ok"
    view = canonicalize(original)
    i = view.text.index("4111")
    assert view.to_original(i, i + 16) == (5, 5 + 19)
    assert original[5:24].replace("\u200b", "") == "4111111111111111"


@pytest.mark.parametrize("original, found, written", [
    ("write to jane [at] acme [dot] com today", "jane@acme.com", "jane [at] acme [dot] com"),
    ("From: =?ISO-8859-1?Q?J=F8rgen_Thomsen?= <j@x.net>", "Jørgen Thomsen",
     "=?ISO-8859-1?Q?J=F8rgen_Thomsen?="),          # a name in a MIME encoded word
])
def test_map_covers_the_whole_disguise(original, found, written):
    view = canonicalize(original)
    s = view.text.index(found)
    a, b = view.to_original(s, s + len(found))
    assert original[a:b] == written


def test_empty_range_and_bounds():
    view = canonicalize("x\u200by")
    assert view.to_original(1, 1) == (2, 2)
    assert view.to_original(2, 2) == (3, 3)
    with pytest.raises(ValueError):
        view.to_original(0, 5)


_PLAIN_WORDS = ["the", "model", "results", "we", "study", "data", "paper", "shows", "that",
                "a", "in", "of", "for", "2019", "Table", "3", "and", "is", "with", "more"]


@given(st.lists(st.sampled_from(_PLAIN_WORDS), min_size=1, max_size=40),
       st.sampled_from([" ", "  ", "\n", ", ", ". "]))
def test_plain_ascii_prose_is_identity(words, sep):
    text = sep.join(words)
    view = canonicalize(text)
    assert view.text == text and view.is_identity
    assert view.to_original(0, len(text)) == (0, len(text))


_MIXED = st.lists(st.sampled_from(
    list("abcjeo@.[]() 0123456789O l-\n") + ZW + list("аеоріѕ")
    + ["\uff11", "\u0301", "&#64;", "%40", " at ", " dot ", "four ", "one "]),
    max_size=40).map("".join)


@settings(max_examples=300)
@given(_MIXED)
def test_map_is_monotone_and_covers(text):
    view = canonicalize(text)
    n = len(view.text)
    prev = (0, 0)
    for i in range(n):
        a, b = view.to_original(i, i + 1)
        assert 0 <= a < b <= len(text)          # every canonical char has a source
        assert a >= prev[0] and b >= prev[1]    # monotone
        prev = (a, b)
    if n:
        assert view.to_original(0, n) == (view.to_original(0, 1)[0],
                                          view.to_original(n - 1, n)[1])


@settings(max_examples=200)
@given(st.text(alphabet="abcdefghij0123456789 .,", min_size=1, max_size=40),
       st.lists(st.tuples(st.integers(0, 40), st.sampled_from(ZW)), max_size=8))
def test_zero_width_insertions_do_not_change_the_view(clean, inserts):
    dirty = clean
    for pos, ch in sorted(inserts, reverse=True):
        pos = min(pos, len(dirty))
        dirty = dirty[:pos] + ch + dirty[pos:]
    assert canonicalize(dirty).text == canonicalize(clean).text


def test_confusables_only_map_to_ascii():
    assert all(v.isascii() and len(v) == 1 for v in CONFUSABLES.values())
