"""`preflight privacy` and the "privacy" object of `assess --json` (no model: the attack
is skipped; the detector finds nothing so the policy's operators have nothing to do)."""

from __future__ import annotations

import json

import pytest

from preflight.cli.main import main

DOC = ("Our senior software engineer moved from Oslo to Bergen in March 2021 and now works "
       "for the harbour authority as a project manager.")


class NoPii:
    warnings: list[str] = []

    def detect(self, text):
        return []


@pytest.fixture
def doc(tmp_path, monkeypatch):
    from preflight.app.services import Services

    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: NoPii())
    path = tmp_path / "doc.txt"
    path.write_text(DOC, encoding="utf-8")
    return path


def test_privacy_json_lists_titles_and_the_ledger(doc, capsys):
    assert main(["privacy", str(doc), "--policy", "identifiers", "--no-attack",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["privacy"]
    values = [q["value"] for q in out["quasi_identifiers"]]
    assert values == ["senior software engineer", "project manager"]
    assert out["quasi_warning"] is None            # one kind only
    assert out["epsilon_ledger"]["total"] == 0.0 and out["reconstruction"] is None
    assert out["dx_attack"] is None


def test_privacy_text_output(doc, capsys):
    assert main(["privacy", str(doc), "--policy", "identifiers", "--no-attack"]) == 0
    text = capsys.readouterr().out
    assert "Quasi-identifiers left in the payload: 2" in text
    assert "ε spent on this document: nothing yet (first send)" in text
