"""The annotated sources (preflight_eval.annotated.corpus) and the model comparison's pure
parts: parts never overlap, every committed document loads with offsets that match its
annotation, and a second opinion masks only what the policy protects."""

from __future__ import annotations

import pytest

from preflight.core.sanitize.policy import PRESETS
from preflight_eval.annotated import corpus
from preflight_eval.annotated.ner_compare import rampart_masks
from preflight_eval.annotated.rampart import unite


def test_dev_and_heldout_never_share_a_document():
    for source, parts in corpus.splits().items():
        dev, heldout = set(parts["dev"]), set(parts["heldout"])
        assert dev and heldout, source
        assert not dev & heldout, source


@pytest.mark.parametrize("source, part", [("wnut17", "dev"), ("wnut17", "heldout"),
                                          ("tab", "heldout")])
def test_committed_parts_load_whole(source, part):
    docs = corpus.load(source, part)
    assert [d.doc_id for d in docs] == corpus.splits()[source][part]
    for d in docs:
        for m in d.mentions:
            assert 0 <= m.start < m.end <= len(d.text)
            assert d.text[m.start:m.end].strip() == d.text[m.start:m.end]


def test_the_tab_dev_part_is_the_shared_sample():
    if not corpus.tab_dev_file().is_file():
        pytest.skip(f"no shared TAB sample at {corpus.tab_dev_file()}")
    docs = corpus.load("tab", "dev")
    assert len(docs) == 40 and sum(len(d.mentions) for d in docs) == 1937


def test_a_missing_shared_folder_names_where_to_put_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PREFLIGHT_SHARED", str(tmp_path))
    with pytest.raises(corpus.CorpusMissing, match="PREFLIGHT_SHARED"):
        corpus.load("tab", "dev")


def test_rampart_pieces_become_one_person_and_one_address():
    text = "Write to Anna Lindqvist, 12 Nørregade, Aarhus."
    a, l, n, street, city = (text.index(w) for w in ("Anna", "Lindqvist", "12", "Nørregade",
                                                       "Aarhus"))
    raw = [(a, a + 4, "GIVEN_NAME"), (l, l + 9, "SURNAME"), (n, n + 2, "BUILDING_NUMBER"),
           (street, street + 1, "STREET_NAME"), (street + 1, street + 9, "STREET_NAME"),
           (city, city + 6, "CITY")]
    assert [(text[s:e], k) for s, e, k in unite(text, raw)] == [
        ("Anna Lindqvist", "PERSON"), ("12", "STREET_ADDRESS"), ("Nørregade", "STREET_ADDRESS"),
        ("Aarhus", "LOCATION")]


def test_a_second_opinion_masks_what_the_policy_protects():
    text = "Anna Lindqvist moved to Aarhus."
    spans = [(0, 14, "PERSON"), (24, 30, "LOCATION")]
    kept_places = rampart_masks(PRESETS["identifiers"], text, spans)
    assert [(m.start, m.end) for m in kept_places] == [(0, 14)]
    everything = rampart_masks(PRESETS["everything"], text, spans)
    assert [(m.start, m.end) for m in everything] == [(0, 14), (24, 30)]
