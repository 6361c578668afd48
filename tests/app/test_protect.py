"""Settings → Policy → "Always protected entity types" has a real effect: spans of those
types never reach the output readable, whatever the method (d_X included)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from preflight.app.protect import ProtectedPrepared, enforce_always_protect
from preflight.app.services import Services
from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import PolicySettings, Settings
from preflight.core.types import Category, Change, SanitizedText, Span, apply_replacements

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qt"))
from fakes import FakePrepared, fake_detect  # noqa: E402

TEXT = "Mail jane.doe@example.com or call Max Power today."
EMAIL = Span(5, 25, "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER, 1.0, "t", "t")
NAME = Span(34, 43, "PERSON", Category.DIRECT_IDENTIFIER, 0.8, "t", "t")


def token_changes(text: str, pieces: list[tuple[int, int, str]]) -> SanitizedText:
    out, changes = apply_replacements(text, [(s, e, new, "TOKEN") for s, e, new in pieces])
    return SanitizedText(out, "dx", changes, {"epsilon": 3.0})


def consistent(original: str, res: SanitizedText) -> bool:
    """Text outside the changes is the source, and each change maps its output range."""
    pos_out = pos_src = 0
    for c in res.changes:
        if res.text[pos_out:c.start] != original[pos_src:c.source_start]:
            return False
        pos_out, pos_src = c.end, c.source_end
        if res.text[c.start:c.end] != c.replacement:
            return False
    return res.text[pos_out:] == original[pos_src:]


def test_untouched_protected_span_is_replaced() -> None:
    dx = token_changes(TEXT, [(0, 4, "Send"), (34, 37, "Bob")])      # e-mail left as it was
    res = enforce_always_protect(TEXT, [EMAIL, NAME], dx, ["EMAIL_ADDRESS"])
    assert res.text == "Send [EMAIL_ADDRESS] or call Bob Power today."
    assert "jane" not in res.text and consistent(TEXT, res)
    assert res.info["always_protected"] == 1 and res.info["epsilon"] == 3.0


def test_partly_perturbed_span_is_replaced_whole_with_straddling_tokens() -> None:
    # a d_X token change straddles the span's start ("l jane" -> "x")
    dx = token_changes(TEXT, [(3, 9, "x"), (14, 18, "qq")])
    res = enforce_always_protect(TEXT, [EMAIL], dx, ["EMAIL_ADDRESS"])
    assert res.text == "Mai[EMAIL_ADDRESS] or call Max Power today."
    (c,) = res.changes
    assert (c.source_start, c.source_end, c.original) == (3, 25, TEXT[3:25])
    assert consistent(TEXT, res)


def test_types_not_listed_are_left_to_the_mechanism() -> None:
    dx = token_changes(TEXT, [(0, 4, "Send")])
    assert enforce_always_protect(TEXT, [EMAIL, NAME], dx, ["CREDIT_CARD"]) is dx


def test_operator_output_is_unchanged() -> None:
    out, changes = apply_replacements(TEXT, [(5, 25, "<EMAIL_ADDRESS_1>", "EMAIL_ADDRESS")])
    placeholder = SanitizedText(out, "placeholder", changes)
    assert enforce_always_protect(TEXT, [EMAIL], placeholder, ["EMAIL_ADDRESS"]) is placeholder


@pytest.mark.parametrize("eps", [0.5, 5.0, 50.0, 1e6])
def test_prepared_dx_protects_at_every_epsilon(eps: float) -> None:
    spans = fake_detect(TEXT)
    prepared = ProtectedPrepared(FakePrepared(TEXT, spans, seed=3, scope="all"), spans,
                                 ["EMAIL_ADDRESS"])
    res = prepared.at(eps)
    assert "[EMAIL_ADDRESS]" in res.text and "example.com" not in res.text
    assert consistent(TEXT, res)
    assert "[EMAIL_ADDRESS]" in prepared.resample(9).at(eps).text


def test_the_window_doorway_applies_the_setting() -> None:
    class FakeDx:
        epsilon_range = (1.0, 100.0)

        def prepare(self, text, spans, params):
            return FakePrepared(text, list(spans), params.seed, params.scope)

    class FakeServices(Services):
        def dx(self):
            return FakeDx()

    spans = fake_detect(TEXT)
    on = WindowDoorway(services=FakeServices(Settings()))
    off = WindowDoorway(services=FakeServices(Settings(policy=PolicySettings(always_protect=[]))))
    eps = 1e6                          # almost every word kept: the e-mail would survive
    assert "jane.doe@example.com" in off.dx_prepare(TEXT, spans, 1, "all").at(eps).text
    assert "[EMAIL_ADDRESS]" in on.dx_prepare(TEXT, spans, 1, "all").at(eps).text


def test_change_type_is_kept_for_markers() -> None:
    dx = token_changes(TEXT, [])
    res = enforce_always_protect(TEXT, [EMAIL], dx, ["EMAIL_ADDRESS"])
    assert res.changes == (Change(5, 20, 5, 25, "EMAIL_ADDRESS", TEXT[5:25],
                                  "[EMAIL_ADDRESS]"),)
