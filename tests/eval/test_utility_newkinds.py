"""The new kinds of the utility data set (court judgments, manual pages and READMEs):
texts a user would paste, a free licence recorded for each, and questions whose answer
is in the document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from preflight_eval.utility_data import newkinds
from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.questions import judgment_questions, man_options, manual_questions

COMMITTED = newkinds.load_newkinds()


def test_the_committed_documents_are_pastable_texts_of_two_new_kinds() -> None:
    kinds = {(d.kind, d.subkind) for d in COMMITTED}
    assert kinds == {("judgment", "echr"), ("manual", "manpage"), ("manual", "readme")}
    assert sum(d.kind == "judgment" for d in COMMITTED) >= 40
    assert sum(d.kind == "manual" for d in COMMITTED) >= 55
    for d in COMMITTED:
        assert newkinds.MIN_WORDS <= len(d.text.split()) <= newkinds.MAX_WORDS, d.doc_id
        assert d.source and d.licence and d.family, d.doc_id
        assert "\ufffd" not in d.text and not d.text.startswith((" ", "\n"))
    ids = [d.doc_id for d in COMMITTED]
    assert len(ids) == len(set(ids))


def test_manuals_come_from_one_package_each_under_a_free_licence() -> None:
    manuals = [d for d in COMMITTED if d.kind == "manual"]
    packages = [d.meta["package"] for d in manuals]
    assert len(packages) == len(set(packages))
    for d in manuals:
        assert d.meta["copyright_file"] == f"/usr/share/doc/{d.meta['package']}/copyright"
        assert newkinds.free({"all": d.meta["licences"]}), d.doc_id


def test_judgments_record_their_identifiers_inside_the_cut() -> None:
    for d in (d for d in COMMITTED if d.kind == "judgment"):
        assert d.truth and all(t.value in d.text for t in d.truth), d.doc_id
        assert d.licence == "MIT" and d.source.startswith("TAB ")


def test_each_question_is_answered_in_its_document_and_the_frozen_list_names_them() -> None:
    asked = [d for d in COMMITTED if d.questions]
    assert 25 <= len(asked) <= 60 and {d.kind for d in asked} == {"judgment", "manual"}
    for d in asked:
        (q,) = d.questions
        assert q.question.endswith("?") and q.reference.lower() not in q.question.lower()
        # the reference is the document's own wording (whitespace aside)
        flat = " ".join(d.text.split())
        assert " ".join(q.reference.split()).split(", practising in ")[0] in flat
    frozen = json.loads((DATA_DIR / newkinds.FROZEN_FILE).read_text(encoding="utf-8"))
    assert set(frozen["doc_ids"]) == {d.doc_id for d in COMMITTED}
    assert set(frozen["question_answering"]) == {d.doc_id for d in asked}


JUDGMENT = (
    "PROCEDURE\n\nThe case originated in an application (no. 12345/06) against the Republic "
    "of Moldova lodged with the Court under Article 34 of the Convention by a Moldovan "
    "national, Mr Ion Rusu (“the applicant”), on 14 March 2006.\n\nThe applicant was "
    "represented by Mr V. Gribincea, a lawyer practising in Chişinău. The Moldovan "
    "Government were represented by their Agent.\n\nTHE FACTS\n\nThe applicant was born in "
    "1961 and lives in Bălţi.")
JUDGMENT_TWO = (
    "The case originated in two applications (nos. 1/05 and 2/05) against the United "
    "Kingdom lodged with the Court by two British nationals, Ms A. Bell and Mr C. Dow "
    "(“the applicants”), on 2 January 2005.\n\nThey were not represented before the Court.")


@pytest.mark.parametrize("text, expected", [
    (JUDGMENT, {"echr-state": "the Republic of Moldova", "echr-lodged": "14 March 2006",
                "echr-applicant": "Mr Ion Rusu",
                "echr-counsel": "Mr V. Gribincea, practising in Chişinău"}),
    # two applicants: no single name to ask for, no lawyer named
    (JUDGMENT_TWO, {"echr-state": "the United Kingdom", "echr-lodged": "2 January 2005"}),
    ("The Grand Chamber delivered its judgment in public.", {}),
])
def test_judgment_questions_find_the_facts_the_text_states(text: str, expected: dict) -> None:
    got = {q.rule: q.reference for q in judgment_questions(text)}
    assert got == expected


MANPAGE = """NAME
       frob - adjust the frobnication level of a widget

SYNOPSIS
       frob [-q] [--level N] FILE

OPTIONS
       -q, --quiet
              Print nothing except errors, even when the level changes.

       --level N
              Set the frobnication level to N, between 0 and 9.

       -h, --help
              Show a short help text and exit without doing anything.

       -x     Exit with status 3 when the widget cannot be frobnicated.

       Options may be combined.
"""


def test_manual_questions_ask_what_an_option_does_with_its_description_as_answer() -> None:
    options = dict(man_options(MANPAGE))
    assert options == {
        "-q, --quiet": "Print nothing except errors, even when the level changes.",
        "--level N": "Set the frobnication level to N, between 0 and 9.",
        "-x": "Exit with status 3 when the widget cannot be frobnicated.",
    }
    questions = manual_questions(MANPAGE, "frob")
    assert [q.question for q in questions][0] == "What does the -q, --quiet option of frob do?"
    assert all(q.rule == "man-option" for q in questions)


def test_cut_keeps_whole_paragraphs_within_the_word_limit() -> None:
    paragraphs = [" ".join(["word"] * n) for n in (200, 250, 300)]
    text = "\n\n".join(paragraphs)
    assert newkinds.cut_paragraphs(text, 600) == "\n\n".join(paragraphs[:2])
    assert newkinds.cut_paragraphs(text, 100) == ""


COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: frob

Files: *
Copyright: 2001-2020 Jane Roe
License: GPL-2+

Files: contrib/*
Copyright: 1999 John Doe
License: BSD-3-clause or {other}

License: GPL-2+
 This program is free software.
"""


@pytest.mark.parametrize("other, free", [
    ("Expat", True), ("Apache-2.0", True), ("CC-BY-NC-4.0", False), ("non-free", False),
    ("GFDL-1.3+", False),
])
def test_a_package_is_used_only_when_every_licence_it_names_is_free(
        tmp_path: Path, other: str, free: bool) -> None:
    (tmp_path / "frob").mkdir()
    (tmp_path / "frob" / "copyright").write_text(COPYRIGHT.format(other=other))
    lic = newkinds.copyright_licences("frob", tmp_path)
    assert lic is not None and lic["licence"] == "GPL-2+"
    assert lic["copyright"] == "2001-2020 Jane Roe"
    assert newkinds.free(lic) is free


def test_a_copyright_file_that_is_not_machine_readable_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "copyright").write_text("This package was debianized in 1998.\n"
                                                "It is under the GPL.\n")
    assert newkinds.copyright_licences("old", tmp_path) is None
    assert newkinds.copyright_licences("absent", tmp_path) is None


def test_each_manual_travels_with_its_copyright_file_and_the_licences_it_names() -> None:
    from preflight_eval.utility_data.shards import read_rows

    texts = {r["path"]: r["text"] for r in read_rows(DATA_DIR / newkinds.LICENCES_FILE)}
    for d in (d for d in COMMITTED if d.kind == "manual"):
        copyright_text = texts[d.meta["copyright_file"]]
        assert d.meta["copyright"] in copyright_text
        for name in re_licences(copyright_text):
            assert f"/usr/share/common-licenses/{name}" in texts, (d.doc_id, name)
    gpl2 = texts.get("/usr/share/common-licenses/GPL-2", "")
    assert "GNU GENERAL PUBLIC LICENSE" in gpl2


def re_licences(text: str) -> set[str]:
    import re

    return {m for m in re.findall(r"/usr/share/common-licenses/([\w.+-]*\w)", text)
            if m in {"GPL-2", "GPL-3", "LGPL-2", "LGPL-2.1", "LGPL-3", "Apache-2.0"}}
