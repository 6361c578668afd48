"""The utility data set's corpus: three kinds, deterministic business documents whose
recorded ground truth is really in the text, and the split by document (version 1) that
earlier bundles cite (the split by family: test_utility_split_families.py)."""

from __future__ import annotations

import json
import re

import pytest

from preflight_eval.utility_data import corpus
from preflight_eval.utility_data.business import BUSINESS_KINDS, MAX_WORDS, MIN_WORDS, business_document


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_business_documents_are_deterministic_and_distinct() -> None:
    for kind in BUSINESS_KINDS:
        a = [business_document(kind, i, 7) for i in range(12)]
        assert a == [business_document(kind, i, 7) for i in range(12)]
        assert business_document(kind, 0, 8) != a[0]          # the seed matters
        texts = [t for t, _ in a]
        assert len(set(texts)) == len(texts)
        # not near-duplicates: no pair shares most of its lines
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                li, lj = set(texts[i].splitlines()), set(texts[j].splitlines())
                assert len(li & lj) / len(li | lj) < 0.6


def test_business_documents_contain_their_ground_truth() -> None:
    for kind in BUSINESS_KINDS:
        for i in range(25):
            text, truth = business_document(kind, i, 3)
            assert MIN_WORDS <= len(text.split()) <= MAX_WORDS
            assert truth, "every document carries PII"
            for t in truth:
                assert t.value in text, (kind, i, t)
            types = {t.type for t in truth}
            assert "PERSON" in types and len(types) >= 3


def test_secrets_and_identifiers_appear_across_the_collection() -> None:
    types = set()
    for kind in BUSINESS_KINDS:
        for i in range(40):
            types |= {t.type for t in business_document(kind, i, 1)[1]}
    assert {"EMAIL", "PHONE", "IBAN", "ADDRESS", "DOB", "EMPLOYEE_ID", "AMOUNT"} <= types
    assert types & {"API_KEY", "PASSWORD"}


def test_committed_business_file_matches_the_generator() -> None:
    committed = corpus.load_business()
    assert len(committed) == len(BUSINESS_KINDS) * corpus.N_BUSINESS_PER_KIND
    regenerated = {d.doc_id: d for d in corpus.business_documents()}
    for doc in committed:
        assert regenerated[doc.doc_id] == doc
        for t in doc.truth:
            assert t.value in doc.text


def test_split_v1_is_by_document_and_stable() -> None:
    table = json.loads((corpus.DATA_DIR / corpus.SPLIT_V1_FILE).read_text(encoding="utf-8"))
    splits = table["splits"]
    ids = [i for name in ("train", "calibration", "test") for i in splits[name]]
    assert len(ids) == len(set(ids)) >= 300            # disjoint, enough documents
    for name, members in splits.items():
        assert all(corpus.split_of(i, table["seed"]) == name for i in members)
        kinds = {i.split(":")[0] for i in members}
        assert {"aclsum", "spam"} <= kinds and kinds & set(BUSINESS_KINDS)
    n = len(ids)
    assert 0.6 < len(splits["train"]) / n < 0.8 and 0.1 < len(splits["test"]) / n < 0.3


@pytest.mark.slow
def test_full_corpus_has_three_kinds_and_matches_the_split() -> None:
    docs = corpus.build_corpus()
    by_kind = {k: [d for d in docs if d.kind == k] for k in corpus.KINDS}
    assert all(len(v) >= 100 for v in by_kind.values())
    table = json.loads((corpus.DATA_DIR / corpus.SPLIT_V1_FILE).read_text(encoding="utf-8"))
    committed = {i for members in table["splits"].values() for i in members}
    assert committed == {d.doc_id for d in docs}
    order = corpus.generation_order(docs)
    assert order == corpus.generation_order(list(reversed(docs)))
    assert {d.kind for d in order[:30]} == set(corpus.KINDS)   # kinds interleaved
