"""The utility shown over ε never falls as ε rises (for one document, policy and seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _models import unavailable
from _utility_fakes import DOC, FakePrepared

from preflight.core.errors import ModelUnavailableError
from preflight.core.utility.assess import UtilityAssessor
from preflight.core.utility.curve import monotone_curve, CurvePoint, utility_curve
from preflight.core.utility.features import FAST_FEATURES
from preflight.core.utility.predictor import Estimate, UtilityPredictor
from preflight.core.utility.recommend import log_grid, recommend

DOCS = (
    DOC,
    "From: Jane Porter <jane.porter@example.com>\nSubject: Library budget\n\nThe city "
    "council of Springfield voted on Tuesday to build a new public library next to the "
    "central station. The building will cost twelve million dollars and open in 2027.",
    "Dear Dr. Alvarez, the blood test of your patient Tom Becker (born 12 March 1961) shows "
    "a raised glucose level. Please call me at 555-0143 before Friday so we can adjust the "
    "dose. Kind regards, Nurse Emma Clark, Riverside Clinic, 14 Elm Street, Boston.",
)


def _non_decreasing(values) -> bool:
    return all(b >= a - 1e-12 for a, b in zip(values, values[1:]))


def test_the_shipped_model_is_monotone_in_epsilon_and_in_the_unchanged_share():
    pred = UtilityPredictor.load(prefer_user=False)
    base = {n: 0.0 for n in FAST_FEATURES}
    # a 300-word document with 5 detected values, d_X on the whole text
    base.update(method_dx=1.0, length_ratio=1.0, dx_share=1.0, spans_replaced_share=0.0,
                log_words=math.log(300), pii_total=5.0, pii_left=2.0, frac_pii_left=0.4)
    by_eps = [pred.predict_fast(dict(base, epsilon=e, log_epsilon=math.log(e),
                                     frac_tokens_changed=0.5, frac_chars_changed=0.5))
              for e in log_grid(10, 300, 25)]
    by_change = [pred.predict_fast(dict(base, epsilon=60.0, log_epsilon=math.log(60.0),
                                        frac_tokens_changed=c, frac_chars_changed=c))
                 for c in [1 - k / 24 for k in range(25)]]
    assert _non_decreasing(by_eps) and _non_decreasing(by_change)
    # At a fixed ε the share left unchanged still counts (ε explains most of it: in the
    # data the two move together, so the trees split on it less than on ε).
    assert by_change[-1] > by_change[0] + 0.05
    assert by_eps[-1] > by_eps[0] + 0.2


@pytest.fixture(scope="module")
def services():
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    services = build_services(Settings())
    try:
        services.dx()
    except ModelUnavailableError as err:
        unavailable(str(err))
    return services


@pytest.mark.parametrize("policy", ["dx-all", "identifiers-dx"])
def test_the_curve_of_real_documents_never_falls(services, fake_slm, fake_embedder, policy):
    from preflight.core.sanitize.base import SanitizeParams

    assessor = UtilityAssessor(fake_slm, fake_embedder, UtilityPredictor.load(prefer_user=False))
    for k, text in enumerate(DOCS):
        pol = services.policy(policy)
        spans = [] if policy == "dx-all" else services.detector().detect(text)
        prepared = services.mechanism(pol).prepare(text, spans, SanitizeParams(seed=k + 1))
        lo, hi = prepared.epsilon_range
        curve = utility_curve(assessor, text, prepared, log_grid(lo, hi, 12), spans)
        values = [u for _e, u in curve]
        assert len(values) == 12 and _non_decreasing(values), (policy, k, values)
        assert values[-1] > values[0]                  # ε does matter on these documents
        lows = [lo_ for _e, lo_, _h in curve.band()]
        highs = [h for _e, _l, h in curve.band()]
        assert _non_decreasing(lows) and _non_decreasing(highs)
        assert all(lo_ <= u <= h for lo_, u, h in zip(lows, values, highs))
        assert curve.level == pytest.approx(0.8)


def test_projection_pools_a_dip_instead_of_raising_the_curve():
    raw = [CurvePoint(e, u, u - 0.1, u + 0.1) for e, u in
           [(1, 0.2), (2, 0.6), (3, 0.4), (4, 0.7)]]
    curve = monotone_curve(raw, 0.8)
    assert [round(u, 6) for _e, u in curve] == [0.2, 0.5, 0.5, 0.7]  # least squares, not max
    assert [round(p.low, 6) for p in curve.points] == [0.1, 0.4, 0.4, 0.6]


class SpikyPredictor:
    """Utility jumps to 0.9 for one narrow band of the change share, else follows it."""

    metrics: dict = {}

    def _value(self, features):
        share = 1.0 - float(features.as_dict()["frac_tokens_changed"])
        return 0.9 if 0.15 <= share <= 0.25 else share

    def predict_fast(self, features, corrected=False):
        return self._value(features)

    predict = predict_fast

    def reads(self, feature):
        return False

    def estimate(self, features, *, refined=True, corrected=False, explain=True):
        return Estimate(self._value(features), "full" if refined else "fast")


def test_recommend_does_not_stop_at_a_spike_of_the_raw_prediction(fake_slm, fake_embedder):
    # raw predictions pass 0.6 at ε ≈ 20 (the spike), fall below, and pass for good at 60
    assessor = UtilityAssessor(fake_slm, fake_embedder, SpikyPredictor())
    rec = recommend(DOC, FakePrepared(DOC), assessor, 0.6)
    values = [u for _e, u in rec.curve]
    assert _non_decreasing(values)
    assert rec.decision == "send" and rec.epsilon > 40.0


def test_a_single_epsilon_is_read_from_the_curve():
    from preflight.core.utility.curve import CurvePoint, monotone_curve, read_curve

    curve = monotone_curve([CurvePoint(10, 0.2, 0.1, 0.3), CurvePoint(40, 0.5, 0.4, 0.6),
                            CurvePoint(160, 0.7, 0.6, 0.8)]).points
    p = read_curve(curve, 20)           # halfway between 10 and 40 in log ε
    assert (p.epsilon, p.utility, p.low, p.high) == pytest.approx((20, 0.35, 0.25, 0.45))
    assert read_curve(curve, 5).utility == 0.2 and read_curve(curve, 500).utility == 0.7
    assert read_curve(curve, 40).utility == pytest.approx(0.5)
    # read at any ε of a fine sweep, the values never fall
    sweep = [read_curve(curve, e).utility for e in np.geomspace(1, 1000, 200)]
    assert all(b >= a - 1e-12 for a, b in zip(sweep, sweep[1:]))
    assert read_curve([], 5) is None
