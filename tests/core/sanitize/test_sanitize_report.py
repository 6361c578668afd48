"""What a mechanism reports about its output is a typed, frozen value, printed as the
JSON the CLI always printed; the vault travels beside it, and the product's d_X has no
research switches."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from _dx_spaces import ByteSpace

from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.dx import DxMechanism
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, Span

DOC = "Anna Berger of Acme Ltd in Lyon wrote to the board on Friday about the budget."


def _spans() -> list[Span]:
    def at(value: str, typ: str, cat: Category) -> Span:
        i = DOC.index(value)
        return Span(i, i + len(value), typ, cat, 0.9, "test", "")
    return [at("Anna Berger", "PERSON", Category.DIRECT_IDENTIFIER),
            at("Acme Ltd", "ORGANIZATION", Category.QUASI_IDENTIFIER),
            at("Lyon", "LOCATION", Category.QUASI_IDENTIFIER)]


def _sanitize(policy: str):
    dx = DxMechanism(ByteSpace(), rank_constant=0.05, epsilon_range=(0.3, 30.0))
    mech = PolicyMechanism(PRESETS[policy], dx=dx)
    return mech, mech.sanitize(DOC, _spans(), SanitizeParams(seed=3, epsilon=5.0))


DX_KEYS = ["epsilon", "scope", "tokens_changed", "tokens_total", "tokens_in_text",
           "rank_constant", "rank_step", "word_boundaries", "nearest_neighbour",
           "embedding", "guarantee"]


# the keys `preflight sanitize --json` printed for each policy, in its order
@pytest.mark.parametrize("policy, keys", [
    ("identifiers", ["policy", "reversible", "replaced", "kept", "actions", "kept_spans",
                     "guarantee"]),
    ("redact", ["policy", "reversible", "replaced", "kept", "actions", "kept_spans",
                "guarantee"]),
    ("dx-all", DX_KEYS + ["policy", "kept_spans"]),
    ("dx-pii", DX_KEYS + ["policy", "kept_spans"]),
    ("identifiers-dx", DX_KEYS + ["policy", "reversible", "replaced", "kept", "actions",
                                  "kept_spans"]),
])
def test_json_keeps_the_keys_the_cli_printed(policy, keys):
    _mech, out = _sanitize(policy)
    printed = out.to_json()
    assert list(printed)[:3] == ["text", "method", "changes"]
    assert list(printed)[3:] == keys
    assert printed["policy"]["name"] == policy


def test_report_is_frozen_and_holds_no_vault():
    mech, out = _sanitize("identifiers")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.report.guarantee = "anything"        # type: ignore[misc]
    assert "vault" not in out.to_json()
    # the vault that restores the answer is the mechanism's, beside the output
    assert [e.original for e in mech.vault.entries] == ["Anna Berger"]
    assert out.report.kept_spans == ((15, 23), (27, 31))
    assert out.report.policy.title == PRESETS["identifiers"].title


def test_hybrid_reports_its_noise_and_its_policy():
    _mech, out = _sanitize("identifiers-dx")
    assert out.epsilon == 5.0 and out.report.dx.scope == "rest"
    assert out.report.actions == {"placeholder": 1, "keep": 2}
    assert out.report.guarantee.startswith("The 1 protected span(s)")


def test_product_dx_has_no_research_switches():
    assert "rank_step" not in {f.name for f in dataclasses.fields(SanitizeParams)}
    assert "word_boundaries" not in inspect.signature(DxMechanism).parameters
