"""`preflight sweep` and `preflight sanitize --method dx` on the real default embedding."""

from __future__ import annotations

import json

import pytest

from preflight.cli.main import main

pytestmark = pytest.mark.slow

DOC = "Jane Doe met Bob at the Berlin office on 3 May.\r\nCall +49 30 1234567 😀.\n"


@pytest.fixture()
def doc(tmp_path):
    f = tmp_path / "doc.txt"
    f.write_bytes(DOC.encode("utf-8"))
    return f


def test_sweep_json(doc, capsys):
    assert main(["sweep", str(doc), "--seed", "3", "--steps", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lo, hi = out["epsilon_range"]
    assert 0 < lo < hi
    steps = out["steps"]
    assert len(steps) == 5
    assert steps[0]["epsilon"] == pytest.approx(lo) and steps[-1]["epsilon"] == pytest.approx(hi)
    totals = {s["tokens_total"] for s in steps}
    assert len(totals) == 1 and totals.pop() > 10
    # more privacy (low ε) changes more tokens than little privacy (high ε)
    assert steps[0]["tokens_changed"] > steps[-1]["tokens_changed"]
    assert steps[-1]["text"] != steps[0]["text"]


def test_sweep_is_reproducible_with_a_seed(doc, capsys):
    main(["sweep", str(doc), "--seed", "5", "--steps", "3", "--json"])
    a = capsys.readouterr().out
    main(["sweep", str(doc), "--seed", "5", "--steps", "3", "--json"])
    assert capsys.readouterr().out == a


def test_sweep_rejects_bad_steps(doc, capsys):
    assert main(["sweep", str(doc), "--steps", "0", "--json"]) != 0
    assert "--steps" in capsys.readouterr().err


def test_sanitize_dx_without_epsilon_lists_the_range(doc, capsys):
    code = main(["sanitize", str(doc), "--method", "dx", "--seed", "1"])
    assert code != 0
    err = capsys.readouterr().err
    assert "--epsilon" in err and "calibrated range" in err and "Traceback" not in err


def test_sanitize_dx_json(doc, capsys):
    assert main(["sanitize", str(doc), "--method", "dx", "--epsilon", "40", "--seed", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "dx-all" and out["policy"]["dx"] == "all" and out["epsilon"] == 40
    assert out["nearest_neighbour"] == "exact"
    assert "every token" in out["guarantee"]
    assert out["changes"], "no token changed"
    # Outside the changes the output is the source verbatim, in order: rebuilding the text
    # from the source and the changed pieces must give the output back.
    out_at = src_at = 0
    for c in out["changes"]:
        assert out_at <= c["start"] <= c["end"] <= len(out["text"])
        assert src_at <= c["source_start"] <= c["source_end"] <= len(DOC)
        assert out["text"][out_at:c["start"]] == DOC[src_at:c["source_start"]]
        out_at, src_at = c["end"], c["source_end"]
    assert out["text"][out_at:] == DOC[src_at:]
