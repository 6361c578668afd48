"""`preflight send --yes` on a news story with the real detector (Presidio + spaCy) and the
real placeholder operator, against the loopback capture server: names leave as
placeholders, and tickers the NER model may read as names do not block the send."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _loopback import CaptureServer, Reply  # noqa: E402
from _models import require_model  # noqa: E402

from preflight.cli import main as cli  # noqa: E402

pytestmark = pytest.mark.slow

NEWS = ("STOCKHOLM, March 3 (Reuters) - Swedish truck maker Volvo <VOLV ST> said on Tuesday "
        "that chief executive Martin Lundstedt would meet analysts in Gothenburg, while "
        "shares of satellite group AST SpaceMobile, listed as ASTS ST in Stockholm, rose 4 "
        "percent after the listing. Reporting by Johan Ahlander; editing by Susan Fenton.")


def test_send_yes_on_a_sanitized_news_story_exits_0(tmp_path, monkeypatch, capsys):
    require_model("ner")
    doc = tmp_path / "news.txt"
    doc.write_text(NEWS, encoding="utf-8")
    with CaptureServer() as server:
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["providers", "add", "loop", "--base-url", server.url,
                             "--model", "m"]) == 0
        server.script(Reply(deltas=["<PERSON_1> spoke."]))
        code = cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                         "--no-learn"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        out = json.loads(captured.out)
        body = server.requests[0].body.decode()
    for name in ("Martin Lundstedt", "Johan Ahlander", "Susan Fenton"):
        assert name not in body
    assert out["plan"]["blocking"] == []
    assert out["result"]["answer"].endswith(" spoke.") and "<PERSON" not in out["result"]["answer"]
