"""The mechanism's output distribution is Algorithm 1 + the rank step.

Goodness of fit: for a few tokens and ε on a small embedding (200 random vectors in 8
dimensions), 3,000 outputs of DxPrepared (one document repeating the token: every
occurrence gets its own noise draw) are compared with the distribution computed by an
independent brute-force implementation (direct sampling of the noisy point and exact
argmin, 200,000 draws, then the rank step's exact probabilities). Pearson's chi-square
with bins of expected count < 5 pooled, false-alarm rate α = 1e-3 per test; all seeds
are fixed, so the outcome is deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest
from _dx_spaces import SpacedWordSpace, random_space
from scipy import stats

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight_eval.dx_variants import research_dx

ALPHA = 1e-3
N_OURS = 3000
N_REF = 200_000


def reference_distribution(M: np.ndarray, x: int, eps: float, c: float, rank_step: bool,
                           seed: int = 12345) -> np.ndarray:
    """P(output = z) by brute force: Monte Carlo over the pivot, exact rank step."""
    rng = np.random.default_rng(seed)
    M = M.astype(np.float64)
    V, n = M.shape
    counts = np.zeros(V)
    for _ in range(N_REF // 20_000):
        v = rng.standard_normal((20_000, n))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        r = rng.gamma(shape=n, scale=1.0 / eps, size=20_000)
        e = M[x] + r[:, None] * v
        d = (M * M).sum(1)[None, :] - 2 * e @ M.T
        counts += np.bincount(d.argmin(axis=1), minlength=V)
    p_pivot = counts / counts.sum()
    if not rank_step:
        return p_pivot
    p_out = np.zeros(V)
    w = np.exp(-c * eps * np.arange(V))
    w /= w.sum()
    for e_idx in np.flatnonzero(p_pivot):
        dist = ((M - M[e_idx]) ** 2).sum(1)
        order = np.lexsort((np.arange(V), dist, np.arange(V) != e_idx))
        p_out[order] += p_pivot[e_idx] * w
    return p_out


def our_counts(mech: DxMechanism, x: int, eps: float, rank_step: bool, seed: int) -> np.ndarray:
    text = " ".join([f"w{x}"] * N_OURS)
    prep = mech.prepare(text, [], SanitizeParams(seed=seed))
    _, out = prep.token_outputs(eps)
    return np.bincount(out, minlength=mech.space.matrix.shape[0])


def chi_square_pvalue(observed: np.ndarray, p: np.ndarray) -> float:
    expected = p * observed.sum()
    big = expected >= 5
    obs = list(observed[big]) + [observed[~big].sum()]
    exp = list(expected[big]) + [expected[~big].sum()]
    if exp[-1] == 0:
        if obs[-1] > 0:
            return 0.0
        obs, exp = obs[:-1], exp[:-1]
    if len(obs) < 2:
        return 1.0
    return float(stats.chisquare(obs, exp).pvalue)


SPACE = random_space(200, 8, seed=7)
C = 0.1


@pytest.mark.parametrize("x,eps,rank_step,seed", [
    (3, 2.0, True, 101),
    (3, 8.0, True, 102),
    (50, 8.0, False, 103),
    (50, 30.0, True, 104),
    (120, 4.0, False, 105),
])
def test_output_distribution_matches_brute_force(x, eps, rank_step, seed):
    mech = research_dx(SPACE, rank_constant=C, epsilon_range=(1.0, 50.0), rank_step=rank_step)
    observed = our_counts(mech, x, eps, rank_step, seed)
    p = reference_distribution(SPACE.matrix, x, eps, C, rank_step)
    assert chi_square_pvalue(observed, p) > ALPHA


SPACED = SpacedWordSpace(200, 8, seed=7)


@pytest.mark.parametrize("x,eps,rank_step,seed", [
    (3, 2.0, True, 301),        # a word start: " w3"
    (50, 8.0, False, 302),      # a continuation: "w50"
    (51, 30.0, True, 303),
])
def test_word_boundary_class_distribution_matches_brute_force_over_the_class(
        x, eps, rank_step, seed):
    """With word boundaries kept the output is the mechanism run over the token's class:
    the brute force over that class's vectors alone (a different class's tokens never
    come out)."""
    mech = research_dx(SPACED, rank_constant=C, epsilon_range=(1.0, 50.0),
                       rank_step=rank_step)
    members = mech.classes.members["WN" if x % 2 else "N"]
    piece = SPACED.piece(x).decode()
    prep = mech.prepare(piece * N_OURS, [], SanitizeParams(seed=seed))
    _, out = prep.token_outputs(eps)
    assert np.isin(out, members).all()
    observed = np.bincount(np.searchsorted(members, out), minlength=len(members))
    p = reference_distribution(SPACED.matrix[members], int(np.searchsorted(members, x)),
                               eps, C, rank_step)
    assert chi_square_pvalue(observed, p) > ALPHA


def test_goodness_of_fit_has_power_against_a_wrong_mechanism():
    # The same test must reject a mechanism that differs only in the rank constant.
    wrong = DxMechanism(SPACE, rank_constant=3 * C, epsilon_range=(1.0, 50.0))
    observed = our_counts(wrong, 3, 8.0, True, 201)
    p = reference_distribution(SPACE.matrix, 3, 8.0, C, True)
    assert chi_square_pvalue(observed, p) < ALPHA
