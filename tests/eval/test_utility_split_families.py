"""The utility data set's split by family: no wording on both sides of train + calibration
and test, whole families on one side, the frozen set apart, the old split still readable."""

from __future__ import annotations

import collections
import json
import re

import pytest

from preflight_eval.utility_data import corpus, families
from preflight_eval.utility_data.business import Truth
from preflight_eval.utility_data.corpus import Document

SPLIT = json.loads((corpus.DATA_DIR / "split.json").read_text(encoding="utf-8"))
TRAIN_SIDE = ("train", "calibration")


def _side(split: str) -> str:
    return "train side" if split in TRAIN_SIDE else "test side"


def _masked(text: str, values: list[str]) -> str:
    """The wording of ``text``: inserted values, numbers and capitalized words hidden."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, "#")
    text = re.sub(r"[0-9]+", "#", text)
    text = re.sub(r"\b[A-Z]\w*", "Name", text)
    return " ".join(text.split())


def _lower_words(text: str) -> int:
    return len(re.findall(r"\b[a-z]+\b", text))


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    from preflight_eval.utility_data.generate import corpus_documents
    from preflight_eval.utility_data.newkinds import load_newkinds

    return corpus_documents(corpus.DATA_DIR, corpus.SEED) + load_newkinds()


@pytest.mark.slow
def test_no_paragraph_or_sentence_wording_is_on_both_sides(documents: list[Document]) -> None:
    """A paragraph (two lower-case words or more) or a sentence (five or more) of a
    train or calibration document, values masked, occurs in no test or frozen document."""
    split = {i: name for name, ids in SPLIT["splits"].items() for i in ids}
    sides: dict[str, set[str]] = collections.defaultdict(set)
    example: dict[str, str] = {}
    for doc in documents:
        values = [t.value for t in doc.truth]
        paragraphs = [p for p in re.split(r"\n\s*\n", doc.text)
                      if _lower_words(_masked(p, values)) >= 2]
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", doc.text)
                     if _lower_words(_masked(s, values)) >= 5]
        for unit in paragraphs + sentences:
            wording = _masked(unit, values)
            sides[wording].add(_side(split[doc.doc_id]))
            example.setdefault(wording, doc.doc_id)
    shared = [w for w, s in sides.items() if len(s) == 2]
    assert not shared, f"{len(shared)} wordings on both sides, e.g. " + "; ".join(
        f"{example[w]}: {w[:80]!r}" for w in shared[:3])


@pytest.mark.slow
def test_every_document_is_in_the_split_once(documents: list[Document]) -> None:
    listed = [i for ids in SPLIT["splits"].values() for i in ids]
    assert len(listed) == len(set(listed))
    assert set(listed) == {d.doc_id for d in documents}


def test_a_family_is_whole_on_one_side_and_the_test_side_mixes_kinds() -> None:
    split = {i: name for name, ids in SPLIT["splits"].items() for i in ids}
    where: dict[str, set[str]] = collections.defaultdict(set)
    for doc_id, family in SPLIT["family"].items():
        where[family].add(split[doc_id])
    assert all(len(s) == 1 or s <= {"test", "frozen"} for s in where.values())
    assert SPLIT["version"] == 2 and "family" in SPLIT["scheme"]
    test_kinds = {i.split(":")[0] for i in SPLIT["splits"]["test"]}
    assert {"aclsum", "spam"} <= test_kinds
    n = len(split) - len(SPLIT["splits"]["frozen"])
    assert 0.1 < len(SPLIT["splits"]["test"]) / n < 0.3


def test_the_frozen_split_is_the_frozen_test_set_of_new_kinds_only() -> None:
    frozen = json.loads((corpus.DATA_DIR / "test_frozen.json").read_text(encoding="utf-8"))
    assert set(SPLIT["splits"]["frozen"]) == set(frozen["doc_ids"])
    assert "read once" in frozen["about"].lower() and frozen["frozen_on"]
    assert {i.split(":")[0] for i in frozen["doc_ids"]} == {"echr", "man", "readme"}


def test_the_split_by_document_stays_readable_for_the_bundles_that_cite_it() -> None:
    old = json.loads((corpus.DATA_DIR / "split-v1.json").read_text(encoding="utf-8"))
    for name, members in old["splits"].items():
        assert members and all(corpus.split_of(i, old["seed"]) == name for i in members)


# ---------------------------------------------------------------- the rules, on made-up text
def _mail(doc_id: str, body: str) -> Document:
    return Document(doc_id, "email", "email", body)


RAW = {
    "spam:g/1": "From: Ann Lee <ann@lists.example>\nList-Id: Gardening <garden.lists.example>\n"
                "Subject: Tomatoes\n\nbody",
    "spam:g/2": "From: Ben Ode <ben@mail.example>\nList-Id: <garden.lists.example>\n"
                "Subject: Re: [garden] Tomatoes\n\nbody",
    "spam:g/3": "From: Cy Moe <cy@mail.example>\nX-Mailing-List: knitting@groups.example\n"
                "Subject: Yarn weights\n\nbody",
    "spam:g/4": "From: Dee Roy <dee@mail.example>\nSubject: Re: Yarn weights\n\nbody",
    "spam:g/5": "From: Eve Fox <eve@news.example>\nSubject: Weekly notes\n\nbody",
    "spam:g/6": "From: Fay Ng <fay@other.example>\nSubject: Spring sale\n\nbody",
}
FOOTER = "You are receiving this because you subscribed to the weekly digest of our shop."


@pytest.mark.parametrize("a, b, joined", [
    ("spam:g/1", "spam:g/2", True),     # one mailing list (List-Id)
    ("spam:g/3", "spam:g/4", True),     # one thread ("Re:" and the list tag dropped)
    ("spam:g/1", "spam:g/3", False),    # two lists, nothing shared
    ("spam:g/5", "spam:g/6", True),     # no list, but one footer sentence in common
    ("spam:g/4", "spam:g/6", False),
])
def test_families_join_lists_threads_and_shared_wording(a: str, b: str, joined: bool) -> None:
    docs = [
        _mail("spam:g/1", "Has anyone tried growing tomatoes in a north facing garden?"),
        _mail("spam:g/2", "Mine did fine with six hours of light, but they ripened late."),
        _mail("spam:g/3", "Which yarn weight do you use for winter socks?"),
        _mail("spam:g/4", "I knit mine with fingering weight and a tight gauge."),
        _mail("spam:g/5", f"Prices for garden tools drop next week.\n\n{FOOTER}"),
        _mail("spam:g/6", f"Our spring sale starts on Monday for members.\n\n{FOOTER}"),
    ]
    family = families.families(docs, RAW)
    assert (family[a] == family[b]) is joined


def test_masked_values_do_not_keep_two_template_paragraphs_apart() -> None:
    """Two business documents whose paragraph differs only in its inserted values are one
    family; a paper that shares no wording with them is its own."""
    docs = [
        Document("memo:1", "business", "memo", "Please call Ana Ruiz on 555 0101 before "
                 "the audit of the travel budget.", (Truth("PERSON", "Ana Ruiz"),)),
        Document("memo:2", "business", "memo", "Please call Tom Bell on 555 0199 before "
                 "the audit of the travel budget.", (Truth("PERSON", "Tom Bell"),)),
        Document("aclsum:p1", "aclsum", "paper", "We propose a parser for noisy tweets and "
                 "evaluate it on three benchmarks."),
    ]
    unit_family = families.families(docs, {})
    assert unit_family["memo:1"] == unit_family["memo:2"] != unit_family["aclsum:p1"]
    # without the business key, only the masked paragraph joins them
    plain = [Document(d.doc_id, "note", "note", d.text, d.truth) for d in docs]
    assert len(set(families.families(plain, {}).values())) == 2


def test_sides_take_whole_families_within_each_kinds_share() -> None:
    docs = ([Document(f"aclsum:{i}", "aclsum", "paper", f"paper {i}") for i in range(40)]
            + [Document(f"memo:{i}", "business", "memo", "same") for i in range(20)]
            + [Document("echr:1", "judgment", "echr", "a case")]
            + [Document("aclsum:linked", "aclsum", "paper", "a case")])
    family = {d.doc_id: d.doc_id for d in docs}
    family.update({f"memo:{i}": "business" for i in range(20)})
    family["aclsum:linked"] = family["echr:1"] = "case"
    split = families.assign(docs, family, frozen={"echr:1"})
    assert split["echr:1"] == "frozen" and split["aclsum:linked"] == "test"
    assert {split[f"memo:{i}"] for i in range(20)} == {"train"}   # larger than its share
    counts = collections.Counter(split[d.doc_id] for d in docs if d.kind == "aclsum")
    assert counts["test"] <= 0.2 * 41 and counts["calibration"] <= 0.1 * 41
    assert counts["test"] >= 6 and counts["calibration"] >= 3
