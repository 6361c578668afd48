"""One source for "left": the window's count (the banner's summary, the panel's "PII left
in payload") and the confirmation's blocking list agree on documents where they used to
differ — a protected person's surname written alone, a protected value the detector saw
once and the text repeats in another spelling."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeCounter, FakeDetector, FakeEmbedder, FakeFlow  # noqa: E402
from _loopback import CaptureServer  # noqa: E402
from preflight.app.leave_summary import summarize_leaving  # noqa: E402
from preflight.core.config import ProviderSettings, Settings  # noqa: E402
from preflight.core.sanitize.base import SanitizeParams, create_mechanism  # noqa: E402
from preflight.core.send.audit import AuditLog  # noqa: E402
from preflight.core.send.session import SendSession  # noqa: E402
from preflight.core.tasks import SUMMARIZE  # noqa: E402

CASES = [
    # the detector found the full name once; the minutes go on with the surname alone
    ("Karin Lindqvist chaired the safety committee on 3 May. After the vote Lindqvist "
     "asked the site managers to report every near miss within a day.", ("Karin Lindqvist",)),
    # two people; one surname recurs alone in a later paragraph
    ("Present: Tomas Berglund, Aino Virtanen.\n\nThe budget was approved. Virtanen will "
     "send the figures to the board before the end of the quarter.",
     ("Tomas Berglund", "Aino Virtanen")),
]


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.mark.parametrize("text,names", CASES)
def test_window_count_equals_the_confirmations_blocking_list(server, tmp_path, text, names):
    provider = ProviderSettings("loop", server.url, "m-1")
    session = SendSession(Settings(providers=[provider], default_provider="loop"),
                          detector=FakeDetector(names=names, cities=()),
                          audit=AuditLog(tmp_path / "a.sqlite3"), token_counter=FakeCounter(),
                          embedder=FakeEmbedder(), flow=FakeFlow())
    spans = session.detector.detect(text)
    mech = create_mechanism("placeholder")
    sanitized = mech.sanitize(text, spans, SanitizeParams(seed=1))
    window = summarize_leaving(text, sanitized, spans)
    plan = session.prepare_send(text, "loop", "placeholder", SanitizeParams(), SUMMARIZE,
                                spans=spans, sanitized=sanitized, vault=mech.vault)
    assert plan.blocking                            # the confirmation blocks something
    assert len(window.leaving) == len(plan.blocking)
    assert {i.value for i in window.leaving} == {f.value for f in plan.blocking}
    assert "will leave your computer" in window.sentence


def test_a_value_changed_in_part_is_one_item_in_both_lists(server, tmp_path):
    # d_X drew "narrowly" for "jane" and let the rest of the address through: the window
    # counts the original's address as left, the re-scan finds "narrowly.doe@…" across
    # the change; both must name one value (the window counted two before)
    from preflight.core.types import Change, SanitizedText, SanitizeReport

    text = "Write to jane.doe@example.com about the budget before Friday."
    provider = ProviderSettings("loop", server.url, "m-1")
    session = SendSession(Settings(providers=[provider], default_provider="loop"),
                          detector=FakeDetector(names=(), cities=()),
                          audit=AuditLog(tmp_path / "a.sqlite3"), token_counter=FakeCounter(),
                          embedder=FakeEmbedder(), flow=FakeFlow())
    spans = session.detector.detect(text)
    at = text.index("jane")
    sanitized = SanitizedText(text.replace("jane", "narrowly", 1), "dx", (
        Change(at, at + 8, at, at + 4, "TOKEN", "jane", "narrowly"),),
        SanitizeReport(kept_spans=()))
    plan = session.prepare_send(text, "loop", "placeholder", SanitizeParams(), SUMMARIZE,
                                spans=spans, sanitized=sanitized, vault=None)
    assert [f.value for f in plan.blocking] == ["jane.doe@example.com"]
    window = summarize_leaving(text, sanitized, spans, findings=plan.blocking)
    assert [i.value for i in window.leaving] == ["jane.doe@example.com"]
