"""TAB's metrics (preflight_eval.annotated.tab_metrics) on small hand-made documents, and
what counts as masked in a sanitized text (preflight_eval.annotated.maskers)."""

from __future__ import annotations

import pytest

from preflight.core.types import Change, SanitizedText
from preflight_eval.annotated.corpus import parse_wnut_line
from preflight_eval.annotated.maskers import disjoint, masks_from_changes
from preflight_eval.annotated.tab_metrics import (
    AnnotatedDoc, Masked, Mention, entities, score,
)

TEXT = ("The applicant, Mr Jan Kowalski, lodged application no. 41127/09 on 3 May 2009. "
        "Kowalski was then living in Gdańsk with his wife.")


def span(text: str, value: str, nth: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(nth + 1):
        start = text.index(value, start + 1)
    return start, start + len(value)


def mention(value: str, kind: str, level: str, entity: str, nth: int = 0,
            text: str = TEXT) -> Mention:
    return Mention(*span(text, value, nth), kind, level, entity)


DOC = AnnotatedDoc("d1", TEXT, (
    mention("Mr Jan Kowalski", "PERSON", "DIRECT", "e1"),
    mention("Kowalski", "PERSON", "DIRECT", "e1", nth=1),
    mention("41127/09", "CODE", "DIRECT", "e2"),
    mention("3 May 2009", "DATETIME", "QUASI", "e3"),
    mention("Gdańsk", "LOC", "QUASI", "e4"),
))


def masked(*values: str, kind: str = "X", text: str = TEXT) -> list[Masked]:
    out = []
    for v in values:
        nth = 0
        if "#" in v:
            v, n = v.split("#")
            nth = int(n)
        out.append(Masked(*span(text, v, nth), kind))
    return out


def test_one_mention_missed_leaves_the_entity_exposed():
    sc = score([DOC], [masked("Jan Kowalski", "41127/09")])   # the second "Kowalski" left
    assert sc.entity["DIRECT"].total == 2
    assert sc.entity["DIRECT"].hit == 1                         # the code only
    assert (sc.mention["DIRECT"].total, sc.mention["DIRECT"].hit) == (3, 2)
    every = score([DOC], [masked("Jan Kowalski", "Kowalski#1", "41127/09")])
    assert every.entity["DIRECT"].hit == 2


def test_a_title_before_the_name_may_stay_visible():
    assert score([DOC], [masked("Jan Kowalski", "Kowalski#1")]).entity_by_type[
        "PERSON"]["DIRECT"].hit == 1
    # ...but the given name may not: the surname alone does not protect the mention
    assert score([DOC], [masked("Kowalski", "Kowalski#1")]).entity_by_type[
        "PERSON"]["DIRECT"].hit == 0


def test_function_words_and_possessives_may_stay_visible():
    text = "The decision of the Court of Appeal of Kraków was served on Nowak's lawyer."
    doc = AnnotatedDoc("d2", text, (
        mention("the Court of Appeal of Kraków", "ORG", "QUASI", "o", text=text),
        mention("Nowak's", "PERSON", "QUASI", "p", text=text),
    ))
    sc = score([doc], [masked("Court", "Appeal", "Kraków", "Nowak", text=text)])
    assert sc.entity["QUASI"].hit == 2
    half = score([doc], [masked("Court", "Kraków", "Nowak", text=text)])   # "Appeal" shows
    assert half.entity["QUASI"].hit == 1


def test_part_of_a_word_masked_is_not_the_word_masked():
    assert score([DOC], [masked("41127")]).entity_by_type["CODE"]["DIRECT"].hit == 0


def test_a_no_mask_mention_of_an_entity_is_not_required():
    text = "Ms Anna Berg, a journalist, wrote to Berg Media; Anna Berg later resigned."
    doc = AnnotatedDoc("d3", text, (
        mention("Ms Anna Berg", "PERSON", "QUASI", "p", text=text),
        mention("Anna Berg", "PERSON", "NO_MASK", "p", nth=1, text=text),
    ))
    assert score([doc], [masked("Anna Berg", text=text)]).entity["QUASI"].hit == 1
    (ent,) = entities(doc)
    assert ent.level == "QUASI" and len(ent.mentions) == 1


def test_an_entity_with_any_direct_mention_counts_as_direct():
    doc = AnnotatedDoc("d4", TEXT, (
        mention("Mr Jan Kowalski", "PERSON", "QUASI", "e1"),
        mention("Kowalski", "PERSON", "DIRECT", "e1", nth=1),
    ))
    (ent,) = entities(doc)
    assert ent.level == "DIRECT"


def test_precision_counts_masked_words_outside_the_mentions_to_mask():
    # "lodged application no." masked on top of the code: 3 words outside, 1 inside
    sc = score([DOC], [masked("lodged application no. 41127/09", kind="CODE")
                       + masked("Gdańsk", kind="LOCATION")])
    assert (sc.precision.total, sc.precision.hit) == (6, 3)   # 41127, 09, Gdańsk inside
    assert (sc.precision_by_masked_type["CODE"].total,
            sc.precision_by_masked_type["CODE"].hit) == (5, 2)
    assert sc.precision_by_masked_type["LOCATION"].value == 1.0


def test_a_generalized_date_keeps_its_year_visible():
    text = "She was born on 3 May 1971 in Gdańsk."
    start, end = span(text, "3 May 1971")
    loc = span(text, "Gdańsk")
    sanitized = SanitizedText(
        "She was born on 1971 in <LOCATION_1>.", "policy",
        (Change(16, 20, start, end, "DATE_TIME", "3 May 1971", "1971"),
         Change(24, 36, *loc, "LOCATION", "Gdańsk", "<LOCATION_1>")))
    got = masks_from_changes(text, sanitized)
    assert [text[m.start:m.end] for m in got] == ["3 May ", "Gdańsk"]
    doc = AnnotatedDoc("d5", text, (mention("3 May 1971", "DATETIME", "QUASI", "d", text=text),))
    assert score([doc], [got]).entity["QUASI"].hit == 0


def test_a_kept_span_is_not_masked():
    text = "Mr Ilyas Hode lives in Mogadishu."
    sanitized = SanitizedText("Mr <PERSON_1> lives in Mogadishu.", "policy",
                              (Change(3, 13, 3, 13, "PERSON", "Ilyas Hode", "<PERSON_1>"),))
    got = masks_from_changes(text, sanitized)
    assert [text[m.start:m.end] for m in got] == ["Ilyas Hode"]


def test_overlapping_detections_are_masked_once():
    got = disjoint([Masked(0, 10, "A"), Masked(5, 20, "B"), Masked(6, 8, "C")])
    assert [(m.start, m.end, m.type) for m in got] == [(0, 10, "A"), (10, 20, "B")]


@pytest.mark.parametrize("line, expected", [
    ("wow [[person emma]] and [[person kaite]] are cute",
     [("emma", "PERSON", "DIRECT"), ("kaite", "PERSON", "DIRECT")]),
    ("Welcome to [[location Oregon]] from [[corporation NBC]] ! [[product Iphone 7]]",
     [("Oregon", "LOC", "QUASI"), ("NBC", "ORG", "QUASI"), ("Iphone 7", "MISC", "NO_MASK")]),
])
def test_wnut_lines_keep_their_offsets(line, expected):
    doc = parse_wnut_line(line, "w1")
    assert "[[" not in doc.text
    assert [(doc.text[m.start:m.end], m.type, m.identifier) for m in doc.mentions] == expected
    assert len({m.entity_id for m in doc.mentions}) == len(expected)
