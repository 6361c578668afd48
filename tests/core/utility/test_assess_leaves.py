"""`preflight assess` says what will leave in the same words as the window's banner."""

from __future__ import annotations

import json
import re

from _utility_fakes import DOC, FakeDx, FakeEmbedder, FakeSLM, LinearPredictor
from preflight.cli.main import main
from preflight.core.types import Category, Span
from preflight.core.utility import assess as assess_mod

_REAL_ASSESSOR = assess_mod.UtilityAssessor


class Names:
    def detect(self, text):
        return [Span(m.start(), m.end(), "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "t", "t")
                for m in re.finditer(r"Alice Martin|Bob Stone", text)]


def test_assess_prints_what_will_leave(monkeypatch, tmp_path, capsys):
    from preflight.app.services import Services

    real_mechanism = Services.mechanism
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: Names())
    monkeypatch.setattr(Services, "mechanism", lambda self, name, **kw: FakeDx()
                        if name == "dx" else real_mechanism(self, name, **kw))
    monkeypatch.setattr(Services, "assessor", lambda self, task=None: _REAL_ASSESSOR(
        FakeSLM(), FakeEmbedder(), LinearPredictor(0.0)))
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    # d_X at the top ε changes no word: both names leave as written
    assert main(["assess", str(doc), "--method", "dx", "--epsilon", "100", "--fast"]) == 0
    assert "2 names will leave your computer." in capsys.readouterr().out
    assert main(["assess", str(doc), "--method", "placeholder", "--fast", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["leaves"] == "Nothing identifying will leave your computer."
