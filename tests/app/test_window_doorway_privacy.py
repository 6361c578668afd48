"""The window's privacy figures through the real WindowDoorway and the real d_X token
space (slow: the attack's first run is cold)."""

from __future__ import annotations

import threading

import pytest
from _models import unavailable

from preflight.core.errors import ModelUnavailableError

pytestmark = pytest.mark.slow

TEXT = ("Jane Doe, a nurse at the Sydney branch of ANZ Bank, wrote to Max Power on 12 March "
        "2023 about the loan her team approved for the new clinic.")


@pytest.fixture(scope="module")
def door_and_prepared():
    from preflight.app.window_doorway import WindowDoorway
    from preflight.core.config import Settings
    from preflight.core.types import Category, Span

    door = WindowDoorway(Settings())
    spans = [Span(0, 8, "PERSON", Category.DIRECT_IDENTIFIER, 1.0, "test", "test"),
             Span(TEXT.index("Sydney"), TEXT.index("Sydney") + 6, "LOCATION",
                  Category.QUASI_IDENTIFIER, 1.0, "test", "test")]
    try:
        prepared = door.prepare(door.policy("dx-all"), TEXT, spans, seed=5)
    except ModelUnavailableError as err:
        unavailable(str(err))
    yield door, prepared, spans
    door.shutdown()


def test_attack_at_a_slider_epsilon_and_its_curve(door_and_prepared):
    door, prepared, spans = door_and_prepared
    lo, hi = door.epsilon_range()
    eps = lo * (hi / lo) ** 0.6180339887       # a slider position: not a round number
    point = door.dx_attack(prepared, eps, spans, False, threading.Event())
    assert [p["epsilon"] for p in point["curve"]] == [pytest.approx(eps, rel=1e-6)]
    assert 0 <= point["identity"] <= point["success"] <= 1
    curve = door.dx_attack(prepared, eps, spans, True, threading.Event())
    assert len(curve["curve"]) >= 9 and curve["success"] == pytest.approx(point["success"])
    shares = [p["success"] for p in curve["curve"]]
    assert shares[-1] > shares[0]              # more ε, more recovered


def test_facts_list_the_quasi_identifiers_and_the_ledger(door_and_prepared):
    door, prepared, spans = door_and_prepared
    sanitized = prepared.at(door.epsilon_range()[1])      # the top of the range
    facts = door.privacy_facts(TEXT, sanitized, spans)
    assert facts["epsilon_ledger"]["this_send"] == pytest.approx(sanitized.epsilon)
    assert facts["epsilon_ledger"]["text"].startswith("ε spent on this document: nothing "
                                                      "yet (first send)")
    left = {q["value"] for q in facts["quasi_identifiers"]}
    # the place detected, a job title found in the payload: each only if still written
    assert left <= {"Sydney", "nurse"}
    for value in ("Sydney", "nurse"):
        assert (value in left) == (f" {value} " in f" {sanitized.text} ")


def test_a_cancelled_attack_stops(door_and_prepared):
    from preflight.core.errors import Cancelled

    door, prepared, spans = door_and_prepared
    stop = threading.Event()
    stop.set()
    with pytest.raises(Cancelled):
        door.dx_attack(prepared, 3.3333333, spans, True, stop)
