"""The composition root serves each provider its own predictor (its refit on the user's
sends, else the shipped prior), and the faces show whether it is calibrated."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "utility"))

from test_predictor import synthetic_rows  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.app.window_doorway import WindowDoorway  # noqa: E402
from preflight.cli.main import main  # noqa: E402
from preflight.core.config import ProviderSettings, Settings, save_settings  # noqa: E402
from preflight.core.tasks import SUMMARIZE  # noqa: E402
from preflight.core.types import SanitizedText  # noqa: E402
from preflight.core.utility.flow import ProviderKey  # noqa: E402
from preflight.core.utility.predictor import shipped_bundle_path  # noqa: E402

ACME = ProviderSettings(name="acme", base_url="https://acme.example/v1", model="acme-l")
OTHER = ProviderSettings(name="other", base_url="https://other.example/v1", model="o-s")
DOC = "Alice Martin wrote about the budget of the Lyon project. The review is late."


def _settings() -> Settings:
    return Settings(providers=[ACME, OTHER], default_provider="acme")


def _teach(services: Services, provider: ProviderSettings, n: int) -> None:
    """``n`` sends to ``provider`` recorded as the send path records them."""
    learner = services.flow_learner()
    for r in synthetic_rows(n_docs=(n + 7) // 8, seed=11)[:n]:
        feats = {k: v for k, v in r.items() if k not in ("target", "variant", "group")}
        learner.record(feats, min(1.0, r["target"] + 0.3),
                       {"provider": provider.name, "model": provider.model})


@pytest.mark.slow
def test_each_provider_gets_its_own_predictor_and_status():
    if not shipped_bundle_path().is_file():
        pytest.skip("no shipped utility regressor")
    services = Services(_settings())
    before = services.assessor(SUMMARIZE, "acme")
    _teach(services, ACME, 20)                        # refit_every = 20: refitted once
    acme, other = services.predictor("acme"), services.predictor("other")
    assert acme.path == services.flow_learner().bundle_path(ProviderKey("acme", "acme-l"))
    assert other.path == shipped_bundle_path()
    assert services.predictor() is acme               # the default provider
    after = services.assessor(SUMMARIZE, "acme")
    assert after is not before and after.predictor is acme   # follows the refit
    assert services.assessor(SUMMARIZE, "other").predictor is other
    assert services.calibration_status("acme").calibrated_on == 20
    assert services.calibration_status("other").calibrated_on == 0

    doorway = WindowDoorway(services=services)
    sanitized = SanitizedText(DOC.replace("Alice Martin", "<PERSON_1>"), "placeholder")
    doorway.set_provider("other")
    assert doorway.predict_fast(DOC, sanitized, []).calibration == \
        "not yet calibrated for this provider"
    doorway.set_provider("acme")
    pred = doorway.predict_fast(DOC, sanitized, [])
    assert pred.calibration.startswith("calibrated on 20 of your sends to acme: on them ")
    assert pred.value == pytest.approx(acme.predict_fast(pred.features), abs=1e-6)


@pytest.mark.slow
def test_assess_prints_the_calibration_line(tmp_path, capsys):
    if not shipped_bundle_path().is_file():
        pytest.skip("no shipped utility regressor")
    save_settings(_settings())
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    args = ["assess", str(doc), "--method", "redact", "--fast"]
    assert main(args) == 0
    assert "not yet calibrated for this provider" in capsys.readouterr().out
    _teach(Services(_settings()), ACME, 20)
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["calibration"].startswith("calibrated on 20 of your sends to acme: on them ")


def test_another_assessor_slm_brings_its_own_bundle_and_learning(monkeypatch):
    """Features C, D and the perplexities differ between SLMs: choosing the other SLM in
    Settings → Models switches to the regressor fitted on its features, and its sends are
    learned apart from the default SLM's."""
    from preflight.app.services import SlmChoice
    from preflight.core.config import ASSESSOR_SLMS

    services = Services(_settings())
    default_flow = services.flow_learner()
    default = services.assessor_slm_role()
    assert default == ASSESSOR_SLMS[0] and services.predictor().slm_role == default
    other = next(r for r in ASSESSOR_SLMS if r != default)
    monkeypatch.setattr(Services, "slm_choice", lambda self: SlmChoice(other, other))
    other_flow = services.flow_learner()
    assert other_flow is not default_flow and other_flow.slm_role == other
    assert other_flow.db_path != default_flow.db_path
    predictor = services.predictor()
    assert predictor.path == shipped_bundle_path(other)
    assert predictor.slm_role == other
    assert services.assessor(SUMMARIZE).predictor is predictor
    _teach(services, ACME, 20)                        # the other learner refits once
    assert services.calibration_status("acme").calibrated_on == 20
    assert services.predictor("acme").slm_role == other
    monkeypatch.undo()
    assert services.flow_learner() is default_flow
    assert services.calibration_status("acme").calibrated_on == 0
