"""The rules both faces apply (preflight.app.rules), each on its own: where each bound of
the ε range comes from, the minimum utility's checks, the default provider, the company's
locks on a per-document change. ``test_faces_agree.py`` shows both faces use them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from preflight.app import rules
from preflight.core.config import ProviderSettings, Settings
from preflight.core.errors import ConfigError
from preflight.core.org_policy import OrgPolicy, load_org_policy
from preflight.core.sanitize.policy import PRESETS, Action

CALIBRATED = (15.2, 253.0)


def company(tmp_path: Path, text: str) -> OrgPolicy:
    path = tmp_path / "policy.toml"
    path.write_text("version = 1\n" + text, encoding="utf-8")
    return load_org_policy(path)


def settings(lo=None, hi=None, min_utility=0.5) -> Settings:
    s = Settings()
    s.policy.epsilon_min, s.policy.epsilon_max, s.policy.min_utility = lo, hi, min_utility
    return s


@pytest.mark.parametrize("settings_bounds,flags,company_bounds,want", [
    ((None, None), (None, None), None, CALIBRATED),
    ((20.0, None), (None, None), None, (20.0, 253.0)),          # one bound from the settings
    ((20.0, 100.0), (30.0, None), None, (30.0, 100.0)),          # a flag beats the settings
    ((None, None), (None, None), (40, 80), (40.0, 80.0)),        # the company narrows
    ((20.0, 100.0), (None, None), (50, 500), (50.0, 100.0)),
    ((300.0, 400.0), (None, None), (40, 80), (40.0, 80.0)),      # disjoint: the company's
])
def test_where_each_bound_of_the_range_comes_from(tmp_path, settings_bounds, flags,
                                                  company_bounds, want):
    org = (company(tmp_path, f"[epsilon]\nmin = {company_bounds[0]}\n"
                             f"max = {company_bounds[1]}\n")
           if company_bounds else OrgPolicy.none())
    got = rules.epsilon_range(CALIBRATED, settings(*settings_bounds), org, *flags)
    assert got == pytest.approx(want)


@pytest.mark.parametrize("flags", [(50.0, 20.0), (0.0, 20.0), (-1.0, 20.0), (10.0, math.nan),
                                   (10.0, math.inf), (20.0, 20.0)])
def test_bounds_that_are_no_range_are_refused_with_the_fix(flags):
    with pytest.raises(ConfigError) as err:
        rules.epsilon_range(CALIBRATED, settings(), OrgPolicy.none(), *flags,
                            fix="Give 0 < --min-epsilon < --max-epsilon.")
    assert "not a valid range" in err.value.message
    assert err.value.hint == "Give 0 < --min-epsilon < --max-epsilon."


def test_the_minimum_utility(tmp_path):
    floor = company(tmp_path, "min_utility = 0.6\n")
    assert rules.min_utility(settings(min_utility=0.7), floor) == 0.7
    assert rules.min_utility(settings(min_utility=0.7), floor, 0.65) == 0.65   # a flag
    with pytest.raises(ConfigError, match="requires at least 0.6"):
        rules.min_utility(settings(min_utility=0.7), floor, 0.5)
    for bad in (1.5, -2.0, math.nan):
        with pytest.raises(ConfigError, match="between -1 and 1"):
            rules.min_utility(settings(), OrgPolicy.none(), bad)


def test_the_default_provider():
    a, b = (ProviderSettings(name=n, base_url=f"https://{n}.example/v1", model="m")
            for n in ("a", "b"))
    assert rules.default_provider(Settings(providers=[a, b], default_provider="b")) == "b"
    assert rules.default_provider(Settings(providers=[a, b])) == "a"          # none set
    assert rules.default_provider(Settings(providers=[a, b], default_provider="gone")) == "a"
    assert rules.default_provider(Settings()) is None


def test_a_change_of_a_locked_type_is_refused(tmp_path):
    org = company(tmp_path, '[minimum.types]\nPERSON = "placeholder"\n')
    base = PRESETS["identifiers"]
    with pytest.raises(ConfigError, match="PERSON"):
        rules.modified_policy(org, base, {"ORGANIZATION": Action.MASK, "PERSON": Action.KEEP})
    changed = rules.modified_policy(org, base, {"ORGANIZATION": Action.MASK,
                                                "PERSON": Action.REDACT})
    assert changed.by_type["ORGANIZATION"] is Action.MASK
    assert changed.by_type["PERSON"] is Action.REDACT          # stricter: allowed
