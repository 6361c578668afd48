"""d_X keeps word boundaries: a token is replaced only by a token of its whitespace class.

The property: for any text and ε, every changed unit's replacement starts with whitespace
iff the original does, and the output has the same whitespace-separated words count (in
fact the same collapsed whitespace pattern) as the input. Checked on a byte-level fake
space (fast, many examples) and on the real installed SLM token space.
"""

from __future__ import annotations

import numpy as np
import pytest
from _dx_spaces import ByteSpace
from _models import require_model
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from preflight.core.sanitize import dx_store
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight.core.sanitize.dx_classes import BoundaryClasses, boundary_pattern
from preflight_eval.dx_reference import reference_outputs
from preflight_eval.dx_variants import UnrestrictedDx, research_dx

# pieces of realistic documents: words, punctuation, digits, keys, newlines, odd spaces
FRAGMENTS = ["from", "Acme", "Corporation", "charged", "$2,404", "was", "Born", "in",
             "sk-proj-AbC123xyz", "Sk", "-", "proj", "IBAN", "DE89", "3704", ",", ".", "(",
             ")", "?!", "'s", "café", "naïve", "👍", "北京", "—", "1970", "e-mail:",
             "bob@example.com", "+49 30 1234567", "\u00a0", "\u3000", "the", "a", "of"]
SEPARATORS = [" ", "  ", "\n", "\n\n", "\r\n", "\t", " \n", "", "", ""]


@st.composite
def documents(draw) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS)),
                          min_size=0, max_size=25))
    lead = draw(st.sampled_from(["", " ", "\n"]))
    return lead + "".join(f + s for f, s in parts)


def assert_boundaries_kept(text: str, res) -> None:
    for c in res.changes:
        before = text[c.source_start:c.source_end]
        assert before[:1].isspace() == c.replacement[:1].isspace(), (before, c.replacement)
        assert boundary_pattern(before) == boundary_pattern(c.replacement), (before,
                                                                           c.replacement)
    assert len(res.text.split()) == len(text.split())
    assert boundary_pattern(res.text) == boundary_pattern(text)


def test_boundary_pattern_examples():
    assert boundary_pattern(" from") == "WN"
    assert boundary_pattern("from") == boundary_pattern(",") == "N"
    assert boundary_pattern("\n\n") == boundary_pattern(" ") == "W"
    assert boundary_pattern(" of the ") == "WNWNW"
    assert boundary_pattern("\u3000x") == "WN"       # unicode whitespace counts
    assert boundary_pattern("") == ""


def test_classes_of_a_byte_space_partition_the_candidates():
    space = ByteSpace()
    cls = BoundaryClasses.of_space(space)
    assert cls.labels == ("N", "W", "WN")
    allc = np.concatenate([cls.members[lab] for lab in cls.labels])
    assert sorted(allc.tolist()) == space.candidate_ids.tolist()
    pieces = {lab: {space.piece(int(i)) for i in cls.members[lab]} for lab in cls.labels}
    assert {b" the", b" a", b" \xc3\xa9"} <= pieces["WN"]
    assert {b"the", b"\xc3\xa9", b","} <= pieces["N"]
    assert {b" ", b"\n", b"\r\n"} <= pieces["W"]
    one = BoundaryClasses.of_space(space, restricted=False)
    assert one.labels == ("any",) and np.array_equal(one.members["any"], space.candidate_ids)


def test_partial_byte_tokens_take_the_pattern_of_the_characters_they_touch():
    space = ByteSpace()
    cls = BoundaryClasses.of_space(space)
    text = "a\u3000b ü"             # U+3000 and ü are split into byte tokens
    tok = space.tokenize(text)
    got = cls.token_classes(tok, text, space.piece)
    labels = [cls.labels[k] for k in got.tolist()]
    pieces = [space.piece(int(i)) for i in tok.ids]
    assert pieces[:4] == [b"a", b"\xe3", b"\x80", b"\x80"]
    assert labels[1:4] == ["W", "W", "W"]           # parts of a whitespace character
    assert pieces[-3:] == [b" ", b"\xc3", b"\xbc"]
    assert labels[-3:] == ["W", "N", "N"]           # parts of a letter


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents(), seed=st.integers(0, 2**40), eps=st.floats(0.05, 100.0),
       rank_step=st.booleans())
@example(text="from Acme Corporation charged $2,404 was Born in Sk-proj", seed=1, eps=0.05,
         rank_step=True)
def test_byte_space_output_keeps_the_word_boundary_pattern(text, seed, eps, rank_step):
    mech = research_dx(ByteSpace(seed=seed % 3), rank_constant=0.05,
                       epsilon_range=(0.3, 30.0), rank_step=rank_step)
    res = mech.sanitize(text, [], SanitizeParams(seed=seed, epsilon=eps))
    assert_boundaries_kept(text, res)


def test_unrestricted_research_setting_glues_and_splits_words():
    """Without the classes the same document loses its word pattern (the property above
    is not vacuous on this space)."""
    text = "from Acme Corporation charged the naïve café of the end " * 4
    broken = 0
    for seed in range(5):
        free = UnrestrictedDx(ByteSpace(), rank_constant=0.05, epsilon_range=(0.3, 30.0))
        res = free.sanitize(text, [], SanitizeParams(seed=seed, epsilon=0.3))
        broken += boundary_pattern(res.text) != boundary_pattern(text)
        assert "word boundaries not kept" in res.report.guarantee
    assert broken == 5


def test_restricted_fast_path_equals_the_masked_reference_with_partial_bytes():
    space = ByteSpace(seed=2)
    mech = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    text = "Hello\u3000world — café naïve 👍\r\nthe end\n the\u00a0a"
    prep = mech.prepare(text, [], SanitizeParams(seed=5))
    assert {g.label for g in prep._groups} == {"N", "W", "WN"}
    for e in (0.3, 1.0, 4.0, 30.0, 100.0):
        _, fast = prep.token_outputs(e)
        assert np.array_equal(fast, reference_outputs(prep, e))


def test_guarantee_and_describe_say_the_pattern_is_revealed():
    mech = DxMechanism(ByteSpace(), rank_constant=0.05, epsilon_range=(0.3, 30.0))
    res = mech.sanitize("the end", [], SanitizeParams(seed=1, epsilon=1.0))
    assert "word-boundary pattern" in res.report.guarantee
    assert "revealed" in res.report.guarantee
    d = mech.describe()
    assert "word-boundary pattern" in d["revealed"]
    assert d["word_boundaries"]["kept"] is True
    assert set(d["word_boundaries"]["classes"]) == {"word start", "continuation",
                                                    "whitespace"}


def test_update_after_a_class_change_of_a_partial_token_equals_fresh():
    """A byte token's class depends on its character: the same (id, occurrence) in a
    different class must not reuse the old class's envelope."""
    mech = DxMechanism(ByteSpace(), rank_constant=0.05, epsilon_range=(0.3, 30.0))
    old_text, new_text = "x\u3000y the", "x\u3001y the"   # e3 80 80 vs e3 80 81
    prep = mech.prepare(old_text, [], SanitizeParams(seed=3))
    upd = prep.update(new_text, [])
    fresh = mech.prepare(new_text, [], SanitizeParams(seed=3))
    for e in (0.3, 3.0, 30.0):
        assert upd.at(e).text == fresh.at(e).text
        assert np.array_equal(upd.token_outputs(e)[1], reference_outputs(upd, e))


def test_class_tables_are_stored_apart_from_the_unrestricted_table():
    space = ByteSpace()
    kept = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    free = UnrestrictedDx(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    f_free = free.build_neighbour_table()
    f_kept = kept.build_neighbour_table()
    assert f_free != f_kept and "wb1" in f_kept.name and "wb1" not in f_free.name
    with np.load(f_kept) as z:
        assert {"class_WN_table", "class_N_table", "class_W_table"} <= set(z.files)
        assert "table" not in z.files
    # a fresh mechanism loads its classes' tables, never the unrestricted one
    again = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    f_kept.unlink()
    assert not dx_store.load_tables(space, again.classes, again.geometries)
    assert all(g.table is None for g in again.geometries.values())
    kept2 = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    kept2.build_neighbour_table()
    g = kept2.geometries["WN"]
    assert g.table is not None and g.table.shape[0] == g.C
    fresh = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    assert all(x.table is not None for x in fresh.geometries.values())


# ----- the real installed token space

@pytest.fixture(scope="module")
def real_mech(tmp_path_factory):
    from preflight.runtime.token_space import GGUFTokenSpace

    path = require_model("slm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFLIGHT_HOME", str(tmp_path_factory.mktemp("wbhome")))
        return DxMechanism(GGUFTokenSpace(path))


@pytest.mark.slow
def test_real_space_classes(real_mech):
    cls = real_mech.classes
    assert cls.labels == ("N", "W", "WN")
    sizes = {lab: len(cls.members[lab]) for lab in cls.labels}
    assert sum(sizes.values()) == len(real_mech.space.candidate_ids)
    assert sizes["WN"] > 20_000 and sizes["N"] > 10_000 and 10 < sizes["W"] < 1000


@pytest.mark.slow
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=documents(), seed=st.integers(0, 2**40), frac=st.floats(0.0, 1.0))
@example(text="He was Born in 1970.\nfrom Acme Corporation charged $2,404; key "
              "sk-proj-AbC123xyz\n\nThanks,  Bob", seed=7, frac=0.0)
def test_real_space_output_keeps_the_word_boundary_pattern(real_mech, text, seed, frac):
    lo, hi = real_mech.epsilon_range
    eps = lo * (hi / lo) ** frac
    prep = real_mech.prepare(text, [], SanitizeParams(seed=seed))
    res = prep.at(eps)
    assert_boundaries_kept(text, res)
    if frac == 0.0 and len(text) > 40:
        assert res.report.dx.tokens_changed > 0.5 * res.report.dx.tokens_total


def test_installed_class_tables_are_found_by_a_new_mechanism(tmp_path, monkeypatch):
    """What `preflight models install` does: build into installed_table_path(); a later
    mechanism loads every class's table from there (and not from the cache)."""
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "models"))
    space = ByteSpace(seed=1)
    mech = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    dest = mech.installed_table_path()
    assert dest.is_relative_to(tmp_path / "models") and "wb1" in dest.name
    assert mech.build_neighbour_table(dest=dest) == dest and dest.is_file()
    assert not dx_store.cached_table_path(space, mech.classes).exists()
    later = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    assert all(g.table is not None for g in later.geometries.values())
    assert later.describe()["neighbour_table_cached"] is True
