"""`preflight detect`: JSON shape, table output, deny/allow options, bad input."""

from __future__ import annotations

import json

import pytest

from preflight.cli.main import main
from preflight.core.pii import detector as detector_module
from preflight.core.types import Category, Span


class _FakeDetector:
    last_settings = None

    def __init__(self, settings=None, **kw):
        type(self).last_settings = settings
        self.settings = settings
        self.warnings = ["example warning"]

    def detect(self, text):
        i = text.index("4111")
        return [Span(i, i + 16, "CREDIT_CARD", Category.DIRECT_IDENTIFIER, 1.0, "Fake", "why")]


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(detector_module, "PiiDetector", _FakeDetector)


def test_json_shape(fake, tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text("card 4111111111111111\n", encoding="utf-8")
    assert main(["detect", str(doc), "--json", "--deny", "Bluebird", "--allow", "Acme"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"entities": [{"start": 5, "end": 21, "type": "CREDIT_CARD",
                                 "category": "direct_identifier", "score": 1.0,
                                 "recognizer": "Fake", "why": "why"}],
                   "warnings": ["example warning"]}
    assert _FakeDetector.last_settings.deny_list == ["Bluebird"]
    assert _FakeDetector.last_settings.allow_list == ["Acme"]


def test_table_output(fake, tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text("card 4111111111111111\n", encoding="utf-8")
    assert main(["detect", str(doc)]) == 0
    captured = capsys.readouterr()
    assert "CREDIT_CARD" in captured.out and "4111111111111111" in captured.out
    assert "1 item(s) found." in captured.out
    assert "example warning" in captured.err


def test_missing_file_is_a_clean_error(fake, tmp_path, capsys):
    assert main(["detect", str(tmp_path / "nope.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_real_detector_through_cli(tmp_path, capsys, monkeypatch):
    doc = tmp_path / "doc.txt"
    doc.write_bytes("Codename Bluebird: card 4111 1111 1111 1111, key AKIAIOSFODNN7EXAMPLE\r\n"
                    .encode("utf-8"))
    assert main(["detect", str(doc), "--json", "--deny", "bluebird"]) == 0
    out = json.loads(capsys.readouterr().out)
    text = doc.read_bytes().decode("utf-8")
    got = {(e["type"], text[e["start"]:e["end"]]) for e in out["entities"]}
    assert {("DENY_LIST", "Bluebird"), ("CREDIT_CARD", "4111 1111 1111 1111"),
            ("API_KEY", "AKIAIOSFODNN7EXAMPLE")} <= got
