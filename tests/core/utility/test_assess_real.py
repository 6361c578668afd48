"""Real SLM + embedder + d_X + shipped regressor (skipped until the models are installed)."""

from __future__ import annotations

import pytest

from preflight.core.errors import ModelUnavailableError

pytestmark = pytest.mark.slow

DOC = (
    "From: Jane Porter <jane.porter@example.com>\nSubject: Library budget\n\n"
    "The city council of Springfield voted on Tuesday to build a new public library next "
    "to the central station. The building will cost twelve million dollars and open in "
    "2027. The library will offer free computer classes, a children's wing and a rooftop "
    "garden. Opponents argued that the money should go to road repairs instead, but the "
    "measure passed by seven votes to two."
)


@pytest.fixture(scope="module")
def parts():
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.utility.assess import UtilityAssessor
    from preflight.core.utility.predictor import UtilityPredictor

    services = build_services(Settings())
    try:
        slm, emb = services.slm(), services.embedder()
        slm.load()
        emb.load()
        predictor = UtilityPredictor.load(prefer_user=False)
        prepared = services.dx().prepare(DOC, [], SanitizeParams(seed=3, scope="all"))
    except ModelUnavailableError as err:
        pytest.skip(str(err))
    yield UtilityAssessor(slm, emb, predictor), prepared
    slm.close()


def test_refined_prediction_rises_with_epsilon(parts):
    from preflight.core.utility.recommend import prepared_range

    assessor, prepared = parts
    lo, hi = prepared_range(prepared)
    noisy = assessor.refine(DOC, prepared.at(lo))
    clean = assessor.refine(DOC, prepared.at(hi))
    assert noisy.features.sim_sanitized < clean.features.sim_sanitized
    assert noisy.predicted < clean.predicted
    assert clean.slm_answer and -1.0 <= noisy.predicted <= 1.0
