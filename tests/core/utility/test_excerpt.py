"""Excerpts: bounded, spread over the document, and aligned between original and sanitized."""

from __future__ import annotations

import re

from preflight.core.types import SanitizedText, apply_replacements
from preflight.core.utility.excerpt import SEPARATOR, excerpts, source_ranges

WORDS = [f"w{i}" for i in range(5000)]
TEXT = " ".join(WORDS)


def test_short_text_is_its_own_excerpt():
    san = SanitizedText("a <PERSON_1> c", "placeholder", ())
    ex = excerpts("a Bob c", san)
    assert not ex.sampled and ex.original == "a Bob c" and ex.sanitized == "a <PERSON_1> c"


def test_long_text_gives_evenly_spread_bounded_passages():
    ranges = source_ranges(TEXT, max_words=900, segments=3)
    assert len(ranges) == 3
    picked = [TEXT[a:b].split() for a, b in ranges]
    assert all(len(p) == 300 for p in picked)
    assert picked[0][0] == "w0" and picked[-1][-1] == "w4999"      # start and end covered
    assert picked[1][0] == f"w{(5000 - 300) // 2}"


def test_sanitized_passages_cover_the_same_source_words():
    # replace every 7th word with a longer placeholder: offsets shift all along the text
    reps = [(m.start(), m.end(), f"<PERSON_{i}>", "PERSON")
            for i, m in enumerate(re.finditer(r"\S+", TEXT)) if i % 7 == 0]
    out, changes = apply_replacements(TEXT, reps)
    ex = excerpts(TEXT, SanitizedText(out, "placeholder", changes))
    assert ex.sampled
    for orig, san in zip(ex.original.split(SEPARATOR), ex.sanitized.split(SEPARATOR)):
        o, s = orig.split(), san.split()
        assert len(o) == len(s)
        assert all(a == b or b.startswith("<PERSON_") for a, b in zip(o, s))
