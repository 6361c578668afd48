"""The window's cost estimate asks for the answer length the request will ask for, with a
provider chosen or not (Settings → Answers, not the task's built-in default)."""

from __future__ import annotations

from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import Settings
from preflight.core.tasks import SUMMARIZE
from test_window_doorway import RealSessionServices, RecordingSession


def test_estimate_without_a_provider_uses_the_answer_length_setting() -> None:
    provider = RecordingSession().provider("p")
    settings = Settings(providers=[provider], answer_max_tokens=777)
    assert SUMMARIZE.max_tokens != 777
    door = WindowDoorway(services=RealSessionServices(settings))
    unpriced = door.estimate("text", SUMMARIZE, None)
    priced = door.estimate("text", SUMMARIZE, "p")
    assert unpriced.max_output_tokens == priced.max_output_tokens == 777
    door.settings.answer_max_tokens = 1500            # changed in Settings → Answers
    assert door.estimate("text", SUMMARIZE, None).max_output_tokens == 1500
