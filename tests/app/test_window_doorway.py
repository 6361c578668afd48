"""WindowDoorway over substituted services: what it hands the core."""

from __future__ import annotations

from preflight.app.services import Services
from preflight.app.window_doorway import WindowDoorway
from preflight.core.config import ProviderSettings, Settings
from preflight.core.send.cost import TokenCount
from preflight.core.tasks import SUMMARIZE
from preflight.core.types import SanitizedText


class RecordingSession:
    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def prepare_send(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "plan"

    def provider(self, name):
        return ProviderSettings(name=name, base_url="http://127.0.0.1:9/v1", model="m",
                                price_input_per_mtok=2.0, price_output_per_mtok=4.0)


class FixedCounter:
    def count(self, text: str) -> TokenCount:
        return TokenCount(1000, "tokenizer: test.gguf")


class Substituted(Services):
    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.session = RecordingSession()

    def send_session(self, **_collaborators):
        return self.session

    def token_counter(self):
        return FixedCounter()


def test_the_secret_seed_never_reaches_the_send_plan() -> None:
    services = Substituted(Settings())
    door = WindowDoorway(services=services)
    sanitized = SanitizedText("<PERSON_1> wrote.", "pseudonym", ())
    assert door.prepare_send("Jane wrote.", sanitized, [], SUMMARIZE, "p", None) == "plan"
    (args, kwargs), = services.session.calls
    params = args[3]
    assert params.seed is None and "seed" not in kwargs
    assert kwargs["sanitized"] is sanitized


class RealSessionServices(Substituted):
    """The core's own SendSession, with the fixed counter: the estimate is the core's."""

    def send_session(self, **_collaborators):
        from preflight.core.send.session import SendSession

        return SendSession(self.settings, token_counter=FixedCounter())


def test_estimate_uses_the_core_cost_estimate() -> None:
    provider = RecordingSession().provider("p")
    door = WindowDoorway(services=RealSessionServices(Settings(providers=[provider])))
    priced = door.estimate("text", SUMMARIZE, "p")
    assert priced.priced and priced.input_tokens == 1000
    assert priced.input_cost == 1000 * 2.0 / 1e6
    unpriced = door.estimate("text", SUMMARIZE, None)
    assert not unpriced.priced and unpriced.max_total == 0.0
    assert unpriced.token_method == "tokenizer: test.gguf"


def test_policies_save_and_activate_through_the_settings(tmp_path, monkeypatch) -> None:
    import pytest

    from preflight.core.config import load_settings
    from preflight.core.errors import ConfigError
    from preflight.core.sanitize.policy import Action

    monkeypatch.setenv("PREFLIGHT_HOME", str(tmp_path))
    door = WindowDoorway(services=Services(Settings()))
    names = [n for n, _t, _d in door.policies()]
    assert names[:3] == ["identifiers", "identifiers-dx", "everything"]
    assert dict((n, d) for n, _t, d in door.policies())["identifiers-dx"] is True
    base = door.policy()
    assert base.name == "identifiers"
    with pytest.raises(ConfigError):
        door.save_policy(base)                                # a preset's name
    mine = base.with_actions({"ORGANIZATION": Action.REDACT})
    from dataclasses import replace
    door.save_policy(replace(mine, name="mine", title="Mine"))
    door.set_active_policy("mine")
    with pytest.raises(ConfigError):
        door.set_active_policy("no-such-policy")
    # A restart: a new doorway over the settings file.
    again = WindowDoorway(services=Services(load_settings()))
    assert ("mine", "Mine", False) in again.policies()
    assert again.policy().name == "mine"
    text = "Jane Doe works at Acme Corp."
    from preflight.core.types import Category, Span
    spans = [Span(0, 8, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", ""),
             Span(18, 27, "ORGANIZATION", Category.QUASI_IDENTIFIER, 0.9, "t", "")]
    out, vault = again.sanitize(again.policy(), text, spans, seed=1)
    assert out.text == "<PERSON_1> works at [REDACTED]."
    assert vault is not None and out.report.policy.name == "mine"
    kept, _ = again.sanitize(again.policy("identifiers"), text, spans, seed=1)
    assert kept.text == "<PERSON_1> works at Acme Corp."

class RecordingDetectorProcess:
    """Stands in for DetectorProcess (same two detection methods)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def detect(self, text, *, progress=None, cancel=None):
        self.calls.append(("full", text))
        return []

    def detect_incremental(self, text, *, progress=None, cancel=None):
        self.calls.append(("incremental", text))
        return []


def test_window_detection_is_incremental_and_send_path_gets_the_process():
    import inspect

    from preflight.app.detect_process import DetectorProcess

    for name in ("detect", "detect_incremental"):     # the fake matches the real one
        assert list(inspect.signature(getattr(RecordingDetectorProcess, name)).parameters) \
            == list(inspect.signature(getattr(DetectorProcess, name)).parameters)
    door = WindowDoorway(services=Substituted(Settings()))
    door._detector = proc = RecordingDetectorProcess()
    door.detect("Jane Roe wrote.")
    assert proc.calls == [("incremental", "Jane Roe wrote.")]


def test_an_opened_file_keeps_its_placeholders_across_sessions(tmp_path, monkeypatch):
    """The window's placeholders of a file are the CLI's for that path: reopening it (a
    new window) gives the same placeholder to the same name after an edit."""
    from preflight.core.sanitize.policy import PRESETS
    from preflight.core.types import Category, Span

    monkeypatch.setenv("PREFLIGHT_HOME", str(tmp_path / "home"))
    path = tmp_path / "letter.txt"
    first = "Bob Stone met Ann Lee."
    path.write_text(first)

    def spans(text):
        return [Span(text.index(n), text.index(n) + len(n), "PERSON",
                     Category.DIRECT_IDENTIFIER, 0.9, "t", "") for n in ("Bob Stone", "Ann Lee")
                if n in text]

    door = WindowDoorway(services=Services(Settings()))
    door.new_document(path, first)
    out, _ = door.sanitize(PRESETS["everything"], first, spans(first), seed=1)
    assert out.text == "<PERSON_1> met <PERSON_2>."
    edited = "Ann Lee wrote. Bob Stone met Ann Lee."
    again = WindowDoorway(services=Services(Settings()))
    again.new_document(path, edited)
    every = [Span(i, i + len(n), "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", "")
             for n, i in (("Ann Lee", 0), ("Bob Stone", edited.index("Bob")),
                          ("Ann Lee", edited.rindex("Ann Lee")))]
    out, _ = again.sanitize(PRESETS["everything"], edited, every, seed=1)
    assert out.text == "<PERSON_2> wrote. <PERSON_1> met <PERSON_2>."
    pasted = WindowDoorway(services=Services(Settings()))
    pasted.new_document(None, edited)
    out, _ = pasted.sanitize(PRESETS["everything"], edited,
                             [Span(0, 7, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", "")],
                             seed=1)
    assert out.text.startswith("<PERSON_1> wrote.")
