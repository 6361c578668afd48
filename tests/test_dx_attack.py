"""The optimal context-free attack on d_X output, on small embeddings (fast).

The brute-force check runs the product's real mechanism (``DxMechanism.prepare`` on a
document repeating one token: every occurrence gets its own noise draw) 20,000 times and
compares the output frequencies with the attack's Monte Carlo estimate of P(y | x, ε),
within four combined standard errors.
"""

from __future__ import annotations

import threading
from functools import cache

import numpy as np
import pytest
from preflight.core.errors import Cancelled, ConfigError
from preflight.core.privacy.dx_attack import DxAttack
from preflight.core.privacy.dx_prior import CountsPrior, load_prior
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight.runtime.token_space import ArraySpace

N_BRUTE = 20_000


def small_mech(V: int, dim: int, seed: int, c: float = 0.2) -> DxMechanism:
    M = np.random.default_rng(seed).standard_normal((V, dim)).astype(np.float32)
    space = ArraySpace(M, [f"w{i}" for i in range(V)], name=f"random {V}x{dim}")
    return DxMechanism(space, rank_constant=c, epsilon_range=(1.0, 30.0))


@cache
def brute_force(x: int):
    """The real mechanism on a document repeating w<x> N_BRUTE times (one preparation
    serves every ε: the same draws, as the slider uses them)."""
    mech = small_mech(30, 4, seed=5)
    return mech, mech.prepare(" ".join([f"w{x}"] * N_BRUTE), [], SanitizeParams(seed=11))


@pytest.mark.parametrize("x,eps", [(3, 2.0), (3, 6.0), (17, 4.0)])
def test_estimate_agrees_with_the_real_mechanism_by_brute_force(x, eps):
    mech, prep = brute_force(x)
    _, out = prep.token_outputs(eps)
    freq = np.bincount(out, minlength=30) / N_BRUTE
    attack = DxAttack(mech, CountsPrior(np.ones(30), "flat"), samples=4000)
    label = mech.classes.labels[0]
    geom = mech.geometries[label]
    est, se = np.zeros(30), np.zeros(30)
    for y in range(30):
        m, s = attack.likelihood(label, np.asarray([geom.index_of[x]]), int(geom.index_of[y]),
                                 eps)
        est[y], se[y] = m[0], s[0]
    assert est.sum() == pytest.approx(1.0, abs=1e-3)     # the rank step's mass is all there
    assert freq.max() < 0.9                               # a spread distribution, not trivial
    tol = 4 * np.sqrt(se ** 2 + freq * (1 - freq) / N_BRUTE) + 1e-4
    assert np.all(np.abs(est - freq) <= tol), np.c_[est, freq, tol][np.abs(est - freq) > tol]


def zipf_document(V: int, n: int, seed: int) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, V + 1) ** 1.1
    p /= p.sum()
    ids = rng.choice(V, size=n, p=p)
    return " ".join(f"w{i}" for i in ids), np.round(p * 1e5)


def test_optimal_attack_beats_the_naive_attacks():
    mech = small_mech(60, 4, seed=2)
    text, counts = zipf_document(60, 400, seed=3)
    attack = DxAttack(mech, CountsPrior(counts, "zipf"), samples=64, max_tokens=400)
    prep = mech.prepare(text, [], SanitizeParams(seed=4))
    res = attack.run(prep, epsilon=3.0, grid=np.geomspace(1.0, 30.0, 6))
    opt = np.array([p.success for p in res.curve])
    ident = np.array([p.identity for p in res.curve])
    near = np.array([p.nearest for p in res.curve])
    assert opt.mean() >= ident.mean() and opt.mean() >= near.mean()
    # at the noisiest end the prior alone recovers the frequent tokens the output lost
    assert opt[0] > ident[0] + 0.05
    assert res.curve[0].epsilon == 1.0 and res.epsilon == 3.0
    assert res.tokens == res.evaluated == 400 and res.sampling_error == 0.0
    # at the top of the range the attack finds what the mechanism left unchanged
    assert abs(res.curve[-1].success - res.curve[-1].identity) <= 0.05


def test_success_in_pii_spans_and_token_budget():
    from preflight.core.types import Category, Span

    mech = small_mech(60, 4, seed=2)
    text, counts = zipf_document(60, 300, seed=8)
    span = Span(0, 40, "PERSON", Category.DIRECT_IDENTIFIER, 1.0, "test", "test")
    prep = mech.prepare(text, [span], SanitizeParams(seed=4, scope="all"))
    res = DxAttack(mech, CountsPrior(counts, "zipf"), samples=32, max_tokens=120).run(
        prep, epsilon=5.0, grid=[2.0, 20.0])
    assert res.evaluated == 120 and res.tokens == 300 and res.sampling_error > 0
    assert 0 < res.pii_tokens < 120 and res.success_pii is not None
    assert [p.epsilon for p in res.curve] == [2.0, 5.0, 20.0]
    assert set(res.to_json()) >= {"success", "success_pii", "curve", "mc_error", "seconds"}


def test_cancel_stops_the_attack():
    mech = small_mech(40, 4, seed=1)
    text, counts = zipf_document(40, 100, seed=1)
    prep = mech.prepare(text, [], SanitizeParams(seed=1))
    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        DxAttack(mech, CountsPrior(counts, "zipf")).run(prep, epsilon=3.0, cancel=stop)


def test_a_space_without_a_prior_says_how_to_build_one():
    mech = small_mech(20, 4, seed=0)
    with pytest.raises(ConfigError) as err:
        load_prior(mech.space)
    assert "build_dx_prior" in err.value.hint
