"""Broken settings and unusable folders end in one line naming the key or folder, never in
a traceback (exit 70) or, worse, in silently changed behaviour (a threshold above 1
used to switch detection off)."""

from __future__ import annotations

import json
import errno
import os
from pathlib import Path

import pytest

from preflight.cli import main as cli
from preflight.core import paths
from preflight.core.config import Settings, load_settings, save_settings, settings_path
from preflight.core.errors import ConfigError


def write_settings(data) -> Path:
    path = settings_path()
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture()
def doc(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("Hello world.", encoding="utf-8")
    return path


def run_detect(capsys, doc) -> tuple[int, str]:
    code = cli.main(["detect", str(doc), "--json"])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("preflight: error:"), err
    return lines[0]


BAD = [
    ({"detection": {"score_threshold": 1.5}},
     "detection.score_threshold must be between 0 and 1 (found 1.5)"),
    ({"detection": {"score_threshold": -0.1}}, "detection.score_threshold must be between"),
    ({"detection": {"score_threshold": "high"}},
     'detection.score_threshold must be a number (found "high")'),
    ({"detection": {"score_threshold": True}}, "detection.score_threshold must be a number"),
    ({"detection": {"deny_list": "ACME"}}, "detection.deny_list must be a list"),
    ({"detection": {"deny_list": ["ok", 7]}}, "detection.deny_list[1] must be text (found 7)"),
    ({"detection": {"deny_list_category": "very_secret"}},
     "detection.deny_list_category must be one of"),
    ({"detection": []}, "detection must be an object"),
    ({"policy": {"min_utility": 2}}, "policy.min_utility must be between -1 and 1"),
    ({"policy": {"epsilon_min": 0}}, "policy.epsilon_min must be positive"),
    ({"policy": {"epsilon_min": 50, "epsilon_max": 5}},
     "policy.epsilon_min must not exceed policy.epsilon_max"),
    ({"theme": "purple"}, "theme must be one of system, light, dark"),
    ({"model_paths": {"slm": 3}}, "model_paths.slm must be text"),
    ({"providers": [{"name": "x", "base_url": "http://h", "model": "m", "api_style": "soap"}]},
     "providers[0].api_style must be one of chat, completions"),
    ({"providers": [{"name": "x", "base_url": "http://h"}]}, "providers[0].model is missing"),
    ({"store_original_in_audit": "yes"}, "store_original_in_audit must be true or false"),
    ([1, 2], "must be an object"),
    ("{not json", "damaged"),
    ("[" * 100_000 + "]" * 100_000, "damaged"),
]


@pytest.mark.parametrize(("data", "needle"), BAD, ids=[n[:40] for _, n in BAD])
def test_bad_value_is_rejected_on_load_naming_the_key(capsys, doc, data, needle):
    write_settings(data)
    code, err = run_detect(capsys, doc)
    assert code == 2
    line = one_line(err)
    assert needle in line, line
    assert "Fix or delete" in line


def test_threshold_above_one_no_longer_switches_detection_off():
    write_settings({"detection": {"score_threshold": 1.5}})
    with pytest.raises(ConfigError, match="settings.json: detection.score_threshold"):
        load_settings()


def test_valid_settings_round_trip_and_ints_are_numbers(tmp_path):
    write_settings({"detection": {"score_threshold": 1, "deny_list": ["ACME"]},
                    "policy": {"epsilon_min": 2, "epsilon_max": None}, "unknown_key": 1})
    s = load_settings()
    assert s.detection.score_threshold == 1.0 and isinstance(s.detection.score_threshold, float)
    assert s.detection.deny_list == [] and s.policy.epsilon_max is None   # moved, hashed
    assert [e.hint for e in s.detection.deny_entries] == ["••••"]
    save_settings(s)
    assert load_settings() == s
    assert oct(settings_path().stat().st_mode & 0o777) == "0o600"


def test_settings_path_that_is_a_folder(capsys, doc):
    settings_path().mkdir()
    code, err = run_detect(capsys, doc)
    assert code == 2
    line = one_line(err)
    assert "is a folder" in line and "delete that folder" in line


def test_settings_path_that_is_a_fifo(capsys, doc):
    os.mkfifo(settings_path())
    code, err = run_detect(capsys, doc)
    assert code == 2 and "named pipe" in one_line(err)


def test_config_folder_that_cannot_be_created(capsys, doc, monkeypatch, tmp_path):
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("PREFLIGHT_HOME", str(blocker))
    code, err = run_detect(capsys, doc)
    assert code == 2
    line = one_line(err)
    assert "config folder" in line and "PREFLIGHT_HOME" in line


def test_read_only_config_folder_on_save(monkeypatch):
    """A config folder the user cannot write (simulated at the one place the file is
    created: permission bits do not stop root, and CI runs as root)."""
    import tempfile

    def refuse(*_args, **_kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(paths.config_dir()))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(ConfigError, match="cannot be saved"):
        save_settings(Settings())


def test_unwritable_data_folder_for_the_vault(capsys, doc, monkeypatch):

    class NoPii:
        warnings: list[str] = []

        def detect(self, text):
            return []

    from preflight.app.services import Services

    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: NoPii())
    (paths.data_dir() / "vaults").write_text("in the way", encoding="utf-8")
    code = cli.main(["sanitize", str(doc), "--method", "placeholder"])
    _, err = capsys.readouterr()
    assert code == 2
    line = one_line(err)
    assert "vault" in line and ("cannot be written" in line or "cannot be used" in line)


def test_info_reports_broken_settings(capsys):
    write_settings({"detection": {"score_threshold": 3}})
    assert cli.main(["info", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "detection.score_threshold" in json.loads(out)["settings"]["error"]
    assert "warning: settings" in err and "Traceback" not in err
    write_settings({})
    assert cli.main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["status"] == "ok"
