"""`preflight info`: JSON shape, the human table, extensible sections, never a traceback."""

from __future__ import annotations

import json
import sys

import pytest

from preflight.cli import main as cli
from preflight.cli.commands import info
from preflight.core.config import settings_path
from preflight.core.errors import ConfigError


@pytest.fixture
def empty_models(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


def run_json(capsys) -> dict:
    assert cli.main(["info", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_version_models_and_paths(capsys, empty_models, _isolated_home):
    data = run_json(capsys)
    assert data["version"] == cli.__version__
    assert data["python"].endswith(".".join(map(str, sys.version_info[:3])))
    roles = [m["role"] for m in data["models"]]
    assert roles == ["slm", "dx_space", "similarity", "ner", "cloud_standin", "cloud_qwen15",
                     "slm_qwen05"]
    assert set(data["models"][0]) == {"role", "name", "file", "sha256", "status", "licence"}
    assert {m["status"] for m in data["models"]} == {"missing"}
    assert data["models"][0]["file"].startswith(str(empty_models))
    assert data["paths"]["models"] == str(empty_models)
    for key in ("config", "data", "cache"):
        assert data["paths"][key].startswith(str(_isolated_home))


def test_sections_ok_and_failing(capsys, empty_models, monkeypatch):
    def broken():
        raise ConfigError("The vault is locked.", "Unlock it in the settings.")

    def crashing():
        raise RuntimeError("boom")

    monkeypatch.setattr(info, "SECTIONS", [
        ("good", lambda: {"answer": 42}), ("bad", broken), ("crash", crashing),
        ("odd", lambda: {"path": info.paths.models_dir()}),
    ])
    data = run_json(capsys)
    assert data["good"] == {"answer": 42}
    assert data["bad"] == {"error": "The vault is locked. Unlock it in the settings."}
    assert data["crash"] == {"error": "RuntimeError: boom"}
    assert data["odd"] == {"path": str(empty_models)}      # made JSON-safe, not a crash


def test_dx_section_comes_from_the_dx_mechanism(capsys, empty_models, monkeypatch):
    from preflight.core.sanitize import dx

    facts = {"embedding": "SmolLM2 49152x576", "filter": "printable only"}
    monkeypatch.setattr(dx.DxMechanism, "describe", lambda self: facts)
    assert run_json(capsys)["dx"] == facts

    def fails(self):
        raise ConfigError("No token embedding.", "Run preflight models install.")

    monkeypatch.setattr(dx.DxMechanism, "describe", fails)
    assert run_json(capsys)["dx"] == {"error": "No token embedding. Run preflight models install."}


def test_human_output_is_a_table(capsys, empty_models, monkeypatch):
    monkeypatch.setattr(info, "SECTIONS", [("dx", lambda: {"scope": "all tokens"})])
    assert cli.main(["info"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("ROLE"))
    assert header.split() == ["ROLE", "STATUS", "MODEL", "LICENCE"]
    assert any(line.startswith("slm") and "missing" in line for line in lines)
    assert "Folders:" in out and str(empty_models) in out
    assert "dx:" in out and "scope: all tokens" in out
    assert "Traceback" not in out + err


def test_info_survives_damaged_settings(capsys, empty_models):
    settings_path().write_text("{broken json")
    data = run_json(capsys)
    assert len(data["models"]) == 7


def test_policy_section_names_the_active_policy(capsys, empty_models, monkeypatch):
    from preflight.core.config import load_settings, save_settings

    monkeypatch.setattr(info, "SECTIONS", [("policy", info._policy)])
    assert run_json(capsys)["policy"]["active"] == "identifiers"
    settings = load_settings()
    settings.policy.active = "identifiers-dx"
    save_settings(settings)
    data = run_json(capsys)["policy"]
    assert data["active"] == "identifiers-dx" and data["dx"] == "rest"
    assert "everything" in data["available"]
