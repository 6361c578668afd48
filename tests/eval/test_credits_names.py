"""The AUTHORS/THANKS benchmark reads its ground truth from the two layouts it trusts, and
counts a name left in the product's output as gone out."""

from __future__ import annotations

import gzip

from _models import require_model
from preflight_eval import credits_names as cr

AUTHORS = """Full Color Icons
================

Ulisse Perusin <uli.peru@gmail.com>
* Brad Smith <brad comstyle com>
Debian QA Group <qa@debian.org>
John E. Davis <www.jedsoft.org>
See <the manual page> for more.
"""
THANKS = """These people helped:
Andrew Burgess                      aab@cichlid.com
Mailing list                        list@example.org
Andres Soolo andres@soolo.matti.ee
"""


def test_ground_truth_comes_from_the_two_layouts(tmp_path, monkeypatch):
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "AUTHORS").write_text(AUTHORS, encoding="utf-8")
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta" / "THANKS.gz").write_bytes(gzip.compress(THANKS.encode()))
    (tmp_path / "gamma").mkdir()               # the same file again: read once
    (tmp_path / "gamma" / "AUTHORS").write_text(AUTHORS, encoding="utf-8")
    (tmp_path / "delta").mkdir()
    (tmp_path / "delta" / "CREDITS").write_bytes(b"\xff\xfe not utf-8")
    monkeypatch.setattr(cr, "DOC_ROOT", tmp_path)
    files = cr.load(lines=300)
    assert [(f.package, f.kind) for f in files] == [("alpha", "AUTHORS"), ("beta", "THANKS")]
    alpha, beta = files
    # a team is no person, a web page is no address, prose in brackets is neither
    assert alpha.names == ("Ulisse Perusin", "Brad Smith")
    assert alpha.addresses == ("uli.peru@gmail.com", "brad comstyle com", "qa@debian.org")
    # a list is no person; a single space is no column gap
    assert beta.names == ("Andrew Burgess",)
    assert cr.load(lines=4)[0].names == ("Ulisse Perusin",)   # only the first lines


def test_a_name_the_product_keeps_is_counted_as_gone_out(tmp_path, monkeypatch, capsys):
    require_model("ner")
    (tmp_path / "alpha").mkdir()
    # a lower-case handle the detector does not take for a name; "Ann" inside
    # "Announce" must not count as the name going out
    (tmp_path / "alpha" / "AUTHORS").write_text(
        "Announce list below.\nLee Garrett <lee@example.org>\nkay <kay@example.org>\n",
        encoding="utf-8")
    monkeypatch.setattr(cr, "DOC_ROOT", tmp_path)
    assert cr.main([]) == 0
    out = capsys.readouterr().out
    assert "names replaced 1/2 (50.0 %), addresses replaced 2/2" in out
    assert "went out: alpha/AUTHORS: 'kay'" in out


def test_a_degraded_detector_gives_no_number(tmp_path, monkeypatch, capsys):
    # without the NER model the rules alone would be measured: refuse, say why
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "AUTHORS").write_text("Lee Garrett <lee@example.org>\n",
                                                encoding="utf-8")
    monkeypatch.setattr(cr, "DOC_ROOT", tmp_path)
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "no-models"))
    assert cr.main([]) == 1
    captured = capsys.readouterr()
    assert "the detector is degraded" in captured.err
    assert "names replaced" not in captured.out
