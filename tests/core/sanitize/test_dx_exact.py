"""The slider's fast path returns exactly what the per-ε exact search returns.

The reference (preflight_eval.dx_reference: reference_outputs / exact_outputs) scans the whole
vocabulary at every ε with the canonical float64 distance and lowest-id tie-breaking;
the fast path (dx_engine.envelope_outputs, what DxPrepared.at uses) only
walks the prepared envelope and neighbour lists. Same noise, so the
output token of every token must be identical at every ε, including ε outside the
prepared range and on spaces full of exact ties.
"""

from __future__ import annotations

import numpy as np
import pytest
from _dx_spaces import ByteSpace, SpacedWordSpace, random_space
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight.core.sanitize.dx_engine import (
    build_envelope,
    draw_noise,
    envelope_outputs,
    envelope_pivots,
    plan_depths,
)
from preflight.core.sanitize.dx_geometry import Geometry
from preflight_eval.dx_reference import exact_outputs, exact_pivots, reference_outputs
from preflight_eval.dx_variants import research_dx


def test_canonical_distance_does_not_depend_on_batch_shape():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((700, 33)).astype(np.float32) * 4
    geom = Geometry(M, np.arange(700))
    point = rng.standard_normal(33)
    full = geom.canon_sqdist(np.arange(700), point)
    for rows in (np.array([5]), rng.choice(700, 17), rng.choice(700, 300)):
        assert np.array_equal(geom.canon_sqdist(rows, point), full[rows])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    V=st.integers(20, 90),
    dim=st.integers(2, 7),
    space_seed=st.integers(0, 10_000),
    noise_seed=st.integers(0, 2**40),
    integer=st.booleans(),
    duplicates=st.integers(0, 3),
    T=st.integers(1, 25),
    lo=st.floats(0.05, 5.0),
    ratio=st.floats(1.0, 200.0),
    c=st.floats(0.01, 2.0),
)
def test_engine_fast_path_equals_exact_search(V, dim, space_seed, noise_seed, integer,
                                              duplicates, T, lo, ratio, c):
    space = random_space(V, dim, space_seed, integer=integer, duplicates=duplicates)
    geom = Geometry(space.matrix, space.candidate_ids)
    rng = np.random.default_rng(space_seed + 1)
    ids = rng.integers(0, V, T)
    noise = draw_noise(noise_seed, ids, np.arange(T), dim)
    P64 = space.matrix[ids].astype(np.float64)
    hi = lo * ratio
    env = build_envelope(geom, space.matrix[ids], noise, lo, hi, token_ids=ids, rank_c=c)
    geom.ensure_neighbours(plan_depths(env, noise, c, geom.C))
    for eps in list(np.geomspace(lo, hi, 7)) + [lo, hi]:
        assert np.array_equal(envelope_pivots(geom, env, P64, noise, eps),
                              exact_pivots(geom, P64, noise, eps))
        assert np.array_equal(envelope_outputs(geom, env, P64, noise, eps, c),
                              exact_outputs(geom, P64, noise, eps, c))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.integers(0, 59), min_size=0, max_size=30),
    seed=st.integers(0, 2**31),
    eps=st.lists(st.floats(0.02, 500.0), min_size=1, max_size=6),
    rank_step=st.booleans(),
)
def test_prepared_at_equals_reference_at_any_epsilon(words, seed, eps, rank_step):
    space = random_space(60, 5, 11, integer=True, duplicates=2)
    mech = research_dx(space, rank_constant=0.3, epsilon_range=(0.5, 50.0),
                       rank_step=rank_step)
    text = " ".join(f"w{i}" for i in words)
    prep = mech.prepare(text, [], SanitizeParams(seed=seed))
    for e in eps:   # some outside the prepared range: the range is extended exactly
        _, fast = prep.token_outputs(e)
        assert np.array_equal(fast, reference_outputs(prep, e))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.tuples(st.integers(0, 59), st.sampled_from(["", " ", "\n", "  "])),
                   min_size=0, max_size=30),
    seed=st.integers(0, 2**31),
    eps=st.lists(st.floats(0.02, 500.0), min_size=1, max_size=6),
    rank_step=st.booleans(),
)
def test_word_boundary_classes_prepared_at_equals_masked_reference(words, seed, eps,
                                                                   rank_step):
    """Per-class geometries (fast path) == the whole-vocabulary search masked to the
    token's class (reference), across word starts, continuations and whitespace."""
    space = SpacedWordSpace(60, 5, seed=11)
    mech = research_dx(space, rank_constant=0.3, epsilon_range=(0.5, 50.0),
                       rank_step=rank_step)
    text = "".join(space.piece(i).decode() + sep for i, sep in words)
    prep = mech.prepare(text, [], SanitizeParams(seed=seed))
    for e in eps:
        _, fast = prep.token_outputs(e)
        assert np.array_equal(fast, reference_outputs(prep, e))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_byte_level_space_fast_equals_reference(seed):
    space = ByteSpace(dim=6, seed=seed)
    mech = DxMechanism(space, rank_constant=0.05, epsilon_range=(0.3, 30.0))
    text = "Hello world — café naïve 👍\r\nthe end\n"
    prep = mech.prepare(text, [], SanitizeParams(seed=seed))
    for e in (0.3, 1.0, 4.0, 30.0, 100.0):
        _, fast = prep.token_outputs(e)
        assert np.array_equal(fast, reference_outputs(prep, e))


@pytest.mark.parametrize("integer", [False, True])
def test_neighbour_table_gives_the_same_outputs(integer):
    """With the whole-vocabulary neighbour table (warm_up) the outputs do not change."""
    space = random_space(120, 5, 21, integer=integer, duplicates=2)
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 120, 40)
    noise = draw_noise(17, ids, np.arange(40), 5)
    P64 = space.matrix[ids].astype(np.float64)
    geom = Geometry(space.matrix, space.candidate_ids)
    table, tlen = geom.build_table(K=8)
    for p in range(geom.C):
        assert np.array_equal(table[p, : tlen[p]], geom.full_ranking(p)[: tlen[p]])
    fresh = Geometry(space.matrix, space.candidate_ids)
    fresh.set_table(table, tlen)
    env = build_envelope(fresh, space.matrix[ids], noise, 0.2, 20.0)
    for eps in (0.2, 1.0, 5.0, 20.0):
        assert np.array_equal(envelope_outputs(fresh, env, P64, noise, eps, 0.05),
                              exact_outputs(geom, P64, noise, eps, 0.05))


def test_describe_reports_space_and_calibration():
    mech = DxMechanism(ByteSpace(), rank_constant=0.05, epsilon_range=(0.3, 30.0))
    d = mech.describe()
    assert d["rank_constant"] == 0.05 and d["epsilon_range"] == [0.3, 30.0]
    assert d["vocab_size"] == 276 and d["dim"] == 6
    f = d["vocabulary_filter"]
    assert f["kept"] + sum(f["dropped"].values()) == f["total"] == 276
    assert f["dropped"]["partial_utf8"] == 128     # bytes 0x80-0xff alone
