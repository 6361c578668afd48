"""Values a line break cut in two (a hard wrap, a pasted column, a word hyphenated at the
line end) are found whole and masked whole; numbers that only stand on consecutive lines
are not glued into one."""

from __future__ import annotations

import re

import pytest

from preflight.core.pii.canonical import canonicalize
from preflight.core.sanitize.base import SanitizeParams, create_mechanism


@pytest.mark.parametrize("original, joined", [
    ("Please charge the card 4111 1111\n1111 1111 for the renewal.",
     "4111 1111 1111 1111"),
    ("You can reach me on +44 20 7946\n  0958 after lunch.", "+44 20 7946 0958"),
    ("Card 5555-5555-5555-\n4444 is the corporate one.", "5555-5555-5555-4444"),
    ("The key we used last night is sk_live_4eC39HqLyjWD\narjtT1zdp7dc and it must go.",
     "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("The review was done by our external consultant Jan\nKowalski, who signed it.",
     "Jan Kowalski"),
    ("The contract was countersigned by Malgorzata Wisniew-\nska on Friday morning.",
     "Wisniewska"),
    ("The philosopher we discussed at length was Søren Kierkegaard-\nHansen, a relative.",
     "Kierkegaard-Hansen"),
])
def test_the_canonical_view_joins_what_a_wrap_cut(original, joined):
    view = canonicalize(original)
    assert joined in view.text
    start = view.text.index(joined)
    a, b = view.to_original(start, start + len(joined))
    assert "\n" in original[a:b]                 # the original range spans the break


@pytest.mark.parametrize("text", [
    "Dates: 2023-04-12\n2023-05-01",                       # a date on each line
    "Call 555 123 4567\n555 987 6543 (two lines)",        # two phone numbers
    "Total 1,234\n5,678",
    "Meeting notes\nJohn Smith\nAnna Lee",                 # short lines: a list, not a wrap
    "Best regards,\nJan Kowalski",
    "sha256 3f2a9c1d4b5e6f708192a3b4c5d6e7f8\nAuthor: Jane",  # a word, not the rest of a key
])
def test_lines_that_only_follow_each_other_stay_apart(text):
    assert canonicalize(text).text == text


def _leaves_no_trace(detector, text: str, value: str) -> None:
    spans = detector.detect(text)
    out = create_mechanism("placeholder").sanitize(text, spans, SanitizeParams()).text
    flat = re.sub(r"[\W_]+", "", out).lower()
    core = re.sub(r"[\W_]+", "", value).lower()
    assert core not in flat, out
    for part in value.split():
        if len(re.sub(r"\W", "", part)) >= 3:
            assert re.sub(r"[\W_]", "", part).lower() not in flat, (part, out)


@pytest.mark.slow
@pytest.mark.parametrize("text, value", [
    ("Hi team,\nplease charge the renewal to the usual card, which is 4111 1111\n"
     "1111 1111, and send the receipt to finance.\n", "4111 1111\n1111 1111"),
    ("For anything urgent during the audit you can reach me on +44 20 7946\n"
     "0958 until six.\n", "+44 20 7946\n0958"),
    ("The production key that was pasted into the ticket is sk_live_4eC39HqLyjWD\n"
     "arjtT1zdp7dc and it has to be rotated today.\n", "sk_live_4eC39HqLyjWD\narjtT1zdp7dc"),
    ("The inspection was carried out on site by our external consultant Jan\n"
     "Kowalski, who also signed the final report.\n", "Jan\nKowalski"),
    ("The lease was countersigned on behalf of the landlord by our colleague Kowal-\n"
     "czyk on the following Friday.\n", "Kowal-\nczyk"),
])
def test_a_wrapped_value_is_masked_whole(real_detector, text, value):
    _leaves_no_trace(real_detector, text, value)


def test_a_field_label_on_the_next_line_is_not_joined():
    text = "Copyright: © 1995-2003, 2010, 2014, 2016 Jean-loup Gailly, Mark Adler\nLicense: Zlib\n"
    assert canonicalize(text).text == text
