"""DxMechanism / DxPrepared behaviour: offsets, scope, info, errors, update, resample."""

from __future__ import annotations

import numpy as np
import pytest
from _change_checks import assert_change_invariants, span
from _dx_spaces import ByteSpace, random_space

from preflight.core.errors import ConfigError, PreflightError
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.dx import DxMechanism, DxPrepared
from preflight_eval.dx_variants import PivotOnlyDx

TEXT = "Hello world — café naïve 👍\r\nthe end\n caf the"


def byte_mech(seed: int = 0) -> DxMechanism:
    return DxMechanism(ByteSpace(seed=seed), rank_constant=0.05, epsilon_range=(0.3, 30.0))


def test_registry_builds_dx_with_collaborators():
    mech = create_mechanism("dx", space=ByteSpace(), rank_constant=0.05,
                            epsilon_range=(0.3, 30.0))
    assert isinstance(mech, DxMechanism) and mech.name == "dx"
    assert mech.epsilon_range == (0.3, 30.0)


def test_dx_without_a_token_space_is_a_clear_error():
    """The core never loads a model itself: the space comes from the caller."""
    with pytest.raises(ConfigError) as err:
        create_mechanism("dx")
    assert "token embedding space" in err.value.message
    assert "space=" in err.value.hint


def test_space_is_a_typed_collaborator_and_caches_are_the_mechanism_s():
    from preflight.core.ports import TokenSpace

    space = ByteSpace()
    assert isinstance(space, TokenSpace)
    a = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    b = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    assert a.space is space
    assert a.geometries is a.geometries             # built once, kept by the mechanism
    assert a.geometry is a.geometry
    assert a.geometries["WN"] is not b.geometries["WN"]   # no state shared between mechanisms
    prep = a.prepare(TEXT, [], SanitizeParams(seed=1))
    prep.at(1.0)
    # a's neighbour memos are a's alone
    assert any(g._nb for g in a.geometries.values())
    assert not any(g._nb for g in b.geometries.values())
    assert prep.epsilon_range == (0.3, 30.0)        # one name for the range everywhere
    prep.at(100.0)
    assert prep.epsilon_range == (0.3, 100.0)       # extended exactly on demand


def test_concurrent_preparations_on_one_mechanism_match_serial_ones():
    from concurrent.futures import ThreadPoolExecutor

    mech = byte_mech()
    serial = {s: mech.prepare(TEXT, [], SanitizeParams(seed=s)).at(1.0).text for s in range(8)}
    fresh = byte_mech()
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(
            lambda s: fresh.prepare(TEXT, [], SanitizeParams(seed=s)).at(1.0).text, range(8)))
    assert texts == [serial[s] for s in range(8)]


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0, 30.0])
def test_changes_map_exact_offsets_with_emoji_and_crlf(eps):
    res = byte_mech().sanitize(TEXT, [], SanitizeParams(seed=4, epsilon=eps))
    assert_change_invariants(TEXT, res)
    assert res.method == "dx"
    assert res.text.isprintable() or set(res.text) - set(filter(str.isprintable, res.text)) <= set("\r\n\t")
    for c in res.changes:
        assert c.type == "TOKEN"


def test_low_epsilon_changes_most_tokens_high_epsilon_few():
    prep = byte_mech().prepare(TEXT, [], SanitizeParams(seed=1))
    low, high = prep.at(0.3), prep.at(1e4)
    assert low.report.dx.tokens_changed > 0.5 * low.report.dx.tokens_total
    # at a huge ε nothing moves except tokens that are not in the output vocabulary
    # (partial UTF-8 byte tokens of 👍, é, —, ï) — those are always replaced
    assert high.report.dx.tokens_changed < 0.5 * high.report.dx.tokens_total
    assert high.text != TEXT or high.report.dx.tokens_changed == 0


def test_info_fields_and_guarantee_for_scope_all():
    res = byte_mech().sanitize(TEXT, [], SanitizeParams(seed=2, epsilon=3.0))
    for key in ("epsilon", "scope", "tokens_changed", "tokens_total", "rank_constant",
                "nearest_neighbour", "guarantee"):
        assert key in res.to_json()
    assert res.epsilon == 3.0 and res.report.dx.scope == "all"
    assert res.to_json()["nearest_neighbour"] == "exact" and res.report.dx.rank_constant == 0.05
    assert "every token" in res.report.guarantee
    assert res.to_json()["guarantee"] == res.report.guarantee


def test_scope_pii_changes_only_detected_spans():
    text = "Hello world the end the café"
    spans = [span(text, "world", "PERSON"), span(text, "café", "LOCATION")]
    res = byte_mech().sanitize(text, spans, SanitizeParams(seed=3, epsilon=0.3, scope="pii"))
    assert_change_invariants(text, res)
    for c in res.changes:
        assert any(c.source_start < s.end and c.source_end > s.start for s in spans)
    assert res.report.dx.tokens_changed > 0
    assert "only for the tokens of the 2 detected" in res.report.guarantee
    none = byte_mech().sanitize(text, [], SanitizeParams(seed=3, epsilon=0.3, scope="pii"))
    assert none.text == text and none.report.dx.tokens_total == 0
    assert "No PII was detected" in none.report.guarantee


def test_missing_epsilon_lists_the_calibrated_range():
    with pytest.raises(ConfigError) as err:
        byte_mech().sanitize(TEXT, [], SanitizeParams(seed=1))
    assert "0.3" in str(err.value) and "30" in str(err.value)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_is_a_user_error(bad):
    with pytest.raises(PreflightError):
        byte_mech().sanitize(TEXT, [], SanitizeParams(seed=1, epsilon=bad))


def test_unknown_scope_is_a_user_error():
    with pytest.raises(ConfigError):
        byte_mech().prepare(TEXT, [], SanitizeParams(seed=1, scope="some"))


def test_same_seed_same_text_different_seed_differs():
    m = byte_mech()
    a = m.sanitize(TEXT * 3, [], SanitizeParams(seed=7, epsilon=1.0)).text
    b = m.sanitize(TEXT * 3, [], SanitizeParams(seed=7, epsilon=1.0)).text
    c = m.sanitize(TEXT * 3, [], SanitizeParams(seed=8, epsilon=1.0)).text
    assert a == b and a != c


def test_resample_draws_fresh_noise_and_is_reproducible_with_a_seed():
    prep = byte_mech().prepare(TEXT * 3, [], SanitizeParams(seed=7))
    assert prep.resample(8).at(1.0).text == byte_mech().prepare(
        TEXT * 3, [], SanitizeParams(seed=8)).at(1.0).text
    assert prep.resample().at(1.0).text != prep.at(1.0).text


def test_update_equals_a_fresh_preparation_of_the_new_text():
    m = byte_mech()
    prep = m.prepare(TEXT, [], SanitizeParams(seed=11))
    new_text = "the café " + TEXT.replace("world", "the world") + " naïve"
    upd = prep.update(new_text, [])
    fresh = m.prepare(new_text, [], SanitizeParams(seed=11))
    for eps in (0.3, 2.0, 30.0):
        assert upd.at(eps).text == fresh.at(eps).text
    assert isinstance(upd, DxPrepared)


def test_no_rank_step_outputs_the_pivot():
    m = DxMechanism(random_space(80, 4, 1), rank_constant=0.2, epsilon_range=(0.5, 20.0))
    text = " ".join(f"w{i}" for i in range(80))
    with_rank = m.prepare(text, [], SanitizeParams(seed=5))
    without = PivotOnlyDx(m.space, rank_constant=0.2, epsilon_range=(0.5, 20.0)).prepare(
        text, [], SanitizeParams(seed=5))
    _, out_rank = with_rank.token_outputs(2.0)
    _, out_piv = without.token_outputs(2.0)
    assert not np.array_equal(out_rank, out_piv)      # the rank step moves some tokens
    assert "without the rank step" in without.at(2.0).report.guarantee


def test_empty_document():
    res = byte_mech().sanitize("", [], SanitizeParams(seed=1, epsilon=1.0))
    assert res.text == "" and res.report.dx.tokens_total == 0 and res.changes == ()


def test_outputs_are_candidate_tokens_only():
    m = byte_mech()
    prep = m.prepare(TEXT * 4, [], SanitizeParams(seed=6))
    cand = set(m.space.candidate_ids.tolist())
    for eps in (0.3, 3.0):
        _, out = prep.token_outputs(eps)
        assert set(out.tolist()) <= cand


@pytest.mark.parametrize("eps", [0.3, 2.5, 30.0])
def test_one_shot_sanitize_equals_the_prepared_slider(eps):
    m = byte_mech()
    one = m.sanitize(TEXT * 2, [], SanitizeParams(seed=21, epsilon=eps))
    slider = m.prepare(TEXT * 2, [], SanitizeParams(seed=21)).at(eps)
    assert one.text == slider.text and one.changes == slider.changes
