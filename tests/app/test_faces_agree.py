"""The CLI and the window produce the same results for the same document and settings,
because both obtain everything from ``build_services`` and apply the same rules
(:mod:`preflight.app.rules`).

The first two tests run the real detector (spaCy + Presidio) — in-process for the CLI, in
the window's child process for the window — on a .docx, with a deny-list and an
allow-list entry to show the user's detection settings are applied by both faces. The
rules' tests run both faces over the fake ports of ``tests/qt/ports.py``.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest
from cli_out import cli_json

from preflight.app.documents import read_for_window
from preflight.app.window_doorway import WindowDoorway
from preflight.cli import main as cli
from preflight.core.config import DetectionSettings, Settings, load_settings, save_settings
from preflight.core.pii import deny_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docfiles import make_docx  # noqa: E402


PARAGRAPHS = [
    "Jane Doe met Max Power in Berlin to plan Project Bluebird.",
    "Write to jane.doe@example.com or call +1 415 555 0100 before Friday.",
]


def _user_settings() -> Settings:
    """A saved deny-list entry (a keyed hash: the key is this profile's) and an allow-list."""
    settings = Settings(detection=DetectionSettings(allow_list=["Berlin"]))
    deny_store.add(settings.detection.deny_entries, "Bluebird")
    return settings


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    doc = make_docx(tmp_path_factory.mktemp("doc") / "report.docx", PARAGRAPHS)
    return doc


@pytest.mark.slow
def test_cli_and_window_agree(faces: Path) -> None:
    save_settings(_user_settings())               # the (isolated) user's settings file
    doc = faces
    text = read_for_window(doc)
    cli_spans = cli_json("detect", str(doc), "--json")["entities"]

    door = WindowDoorway()
    try:
        spans = door.detect(text)
        assert [s.to_json() for s in spans] == cli_spans
        values = {text[s.start:s.end] for s in spans}
        assert "Bluebird" in values                            # deny-list applied
        assert not any("Berlin" in v for v in values)          # allow-list applied
        assert {"Jane Doe", "jane.doe@example.com"} <= values

        for method in ("placeholder", "redact", "mask"):
            cli_out = cli_json("sanitize", str(doc), "-m", method, "--json")
            win_out, _vault = door.sanitize(method, text, spans, seed=7)
            assert win_out.text == cli_out["text"], method
            assert "jane.doe@example.com" not in win_out.text
    finally:
        door.shutdown()


@pytest.mark.slow
def test_without_the_settings_the_faces_would_differ(faces: Path) -> None:
    """Guards the test above: the lists do change what is detected."""
    save_settings(Settings())
    text = read_for_window(faces)
    values = {text[e["start"]:e["end"]]
              for e in cli_json("detect", str(faces), "--json")["entities"]}
    assert "Bluebird" not in values and any("Berlin" in v for v in values)


# --- the rules both faces apply (preflight.app.rules), one test each ---------------------
# The CLI builds its own services from the settings file; with the window's fake ports
# plugged into every Services of the process, both faces run the same fakes and only the
# rule under test can make them differ.



def _org(text: str) -> None:
    import os

    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text("version = 1\n" + text,
                                                         encoding="utf-8")


def _doc(tmp_path: Path) -> Path:
    doc = tmp_path / "memo.txt"
    doc.write_text(" ".join(PARAGRAPHS).replace("Project ", ""), encoding="utf-8")
    return doc


RANGES = {   # the settings' ε bounds, the company's, what both faces must then use
    "calibrated": ((None, None), None, None),
    "settings": ((3.0, 25.0), None, (3.0, 25.0)),
    "company-narrows-settings": ((3.0, 25.0), (5.0, 20.0), (5.0, 20.0)),
    "company-only": ((None, None), (5.0, 20.0), (5.0, 20.0)),
}


@pytest.mark.parametrize("case", RANGES)
def test_both_faces_offer_the_same_epsilon_range(case, rig, tmp_path):
    (lo, hi), company, want = RANGES[case]
    if company:
        _org(f"[epsilon]\nmin = {company[0]}\nmax = {company[1]}\n")
    settings = Settings()
    settings.policy.epsilon_min, settings.policy.epsilon_max = lo, hi
    save_settings(settings)
    door = rig.doorway(settings)
    window = door.epsilon_range()
    swept = cli_json("sweep", str(_doc(tmp_path)), "--steps", "3", "--json")
    assert tuple(swept["epsilon_range"]) == pytest.approx(window)
    assert window == pytest.approx(want or door.services.dx().epsilon_range)
    searched = cli_json("recommend", str(_doc(tmp_path)), "--policy", "dx-all", "--json")
    assert all(window[0] - 1e-3 <= p["epsilon"] <= window[1] + 1e-3
               for p in searched["probes"])           # the search stays in the same range


def test_both_faces_demand_the_same_minimum_utility(rig, tmp_path):
    import threading

    from preflight.core.tasks import SUMMARIZE

    _org("min_utility = 0.5\n")
    settings = Settings()
    settings.policy.min_utility = 0.55
    save_settings(settings)
    door = rig.doorway(load_settings())
    text = read_for_window(_doc(tmp_path))
    spans = door.detect(text)
    prepared = door.prepare(door.policy("dx-all"), text, spans, 3)
    window = door.recommend(text, prepared, spans, SUMMARIZE, threading.Event())
    searched = cli_json("recommend", str(_doc(tmp_path)), "--policy", "dx-all", "--json")
    assert window.min_utility == searched["min_utility"] == door.min_utility() == 0.55
    # below the company's floor: both refuse, in the same words
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["recommend", str(_doc(tmp_path)), "--min-utility", "0.4"]) != 0
    low = load_settings()
    low.policy.min_utility = 0.4
    with pytest.raises(Exception) as refused:
        door.save_settings(low)
    assert refused.value.message in err.getvalue()


def test_both_faces_send_to_the_same_provider(rig, tmp_path):
    """Two providers and no default (the window's Settings can leave it unset): the
    window's Send goes to the first; so does `preflight send` without --provider."""
    from loopback import LoopbackLLM

    from preflight.core.config import ProviderSettings

    with LoopbackLLM(["One", "line."]) as first, LoopbackLLM(["Other."]) as second:
        settings = Settings(providers=[
            ProviderSettings(name="first", base_url=first.base_url, model="m"),
            ProviderSettings(name="second", base_url=second.base_url, model="m")])
        save_settings(settings)
        door = rig.doorway(load_settings())
        assert door.default_provider() == "first"
        cli_json("send", str(_doc(tmp_path)), "--policy", "placeholder", "--yes", "--json")
        assert len(first.bodies) == 1 and second.bodies == []
        # the predictions are the same provider's (its calibration, its refit)
        assert door.services.provider_key().provider == "first"


def test_both_faces_keep_the_company_locks(rig, tmp_path):
    from preflight.core.errors import ConfigError
    from preflight.core.sanitize.policy import Action

    _org('[minimum.types]\nPERSON = "placeholder"\n')
    mine = tmp_path / "loose.toml"
    mine.write_text('name = "loose"\ntitle = "Loose"\n[types]\nPERSON = "keep"\n',
                    encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["sanitize", str(_doc(tmp_path)), "--policy", str(mine)]) != 0
    assert "PERSON" in err.getvalue() and out.getvalue() == ""
    door = rig.doorway(Settings())
    with pytest.raises(ConfigError, match="PERSON"):
        door.with_actions(door.policy("identifiers"), {"PERSON": Action.KEEP})
    with pytest.raises(ConfigError, match="PERSON"):
        door.policy(str(mine))
