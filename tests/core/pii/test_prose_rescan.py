"""The confirmation's re-scan sees what detection now sees (issue 15, item 3): meeting
notes with a password, an SSN and an employee id are sanitized by the default policy with
nothing left, and a payload that still carries them (sanitized by a detector that missed
them) is blocked — never "no identifier or secret was found"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from preflight.core.config import ProviderSettings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.operators import PlaceholderOperator
from preflight.core.sanitize.policy import PRESETS, Action
from preflight.core.send.providers import create_client
from preflight.core.send.rescan import rescan
from preflight.core.tasks import SUMMARIZE
from preflight.core.types import SanitizedText

pytestmark = pytest.mark.slow

NOTES = ("Hi all,\n\nnotes from today's onboarding sync. Dana set up the laptop for the new "
         "hire; the admin password is Falcon#2025!admin until IT rotates it. HR still needs "
         "the SSN 123-45-6789 and the employee ID NW-204871 for payroll. The guest wifi "
         "password for the lobby network is Summer2024! and the door PIN 4821.\n\n"
         "Password reset is handled by IT; reset your password on the portal.\n")
VALUES = {"Falcon#2025!admin": "SECRET", "123-45-6789": "US_SSN", "NW-204871": "ID_NUMBER",
          "Summer2024!": "SECRET", "4821": "SECRET"}


def _send(detector, spans, text=NOTES):
    """The default policy's placeholders over ``spans`` (every other detection kept) and
    the re-scan of the request a provider client builds from it."""
    policy = PRESETS["identifiers"]
    actions = [(s, policy.action_for(s, text[s.start:s.end])) for s in spans]
    protected = [s for s, a in actions if a is Action.PLACEHOLDER]
    out = PlaceholderOperator().sanitize(text, protected, SanitizeParams())
    kept = tuple((s.start, s.end) for s, a in actions if a is Action.KEEP)
    sanitized = SanitizedText(out.text, policy.name, out.changes,
                              replace(out.report, policy=policy.summary(), kept_spans=kept))
    client = create_client(ProviderSettings("p", "http://127.0.0.1:9/v1", "m"))
    request = client.build_request(SUMMARIZE, sanitized.text)
    return sanitized, rescan(detector, text, sanitized, request, spans)


def test_the_default_policy_replaces_every_credential_and_id(real_detector):
    spans = real_detector.detect(NOTES)
    found = {NOTES[s.start:s.end]: s.type for s in spans}
    assert {v: found.get(v) for v in VALUES} == VALUES
    sanitized, findings = _send(real_detector, spans)
    assert not any(v in sanitized.text for v in VALUES)
    assert "Password reset is handled by IT" in sanitized.text     # the prose stays
    assert [f for f in findings if f.blocking] == []


def test_a_payload_that_still_carries_them_is_blocked(real_detector):
    spans = [s for s in real_detector.detect(NOTES) if NOTES[s.start:s.end] not in VALUES]
    _, findings = _send(real_detector, spans)    # as the old detector left it
    blocking = {f.value: f.type for f in findings if f.blocking}
    assert {v: blocking.get(v) for v in VALUES} == VALUES
