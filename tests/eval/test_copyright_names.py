"""The copyright-file benchmark knows a person from a field that writes them with an
address, counts the fields that write them without one, and counts a holder left in the
product's output as gone out."""

from __future__ import annotations

from _models import require_model
from preflight_eval import copyright_names as cn

FORMAT = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
ALPHA = FORMAT + """
Files: *
Copyright: 2008 Andy Polyakov <appro@openssl.org>
           2010 Jane Q. Roe <jane@example.org>
           2011 All rights reserved <legal@example.org>
           2012 Debian QA Group <qa@debian.org>
License: BSD
"""
BETA = FORMAT + """
Files: *
Copyright: 1995 Patrick Powell, 2001 Andy Polyakov
           2004 Jane Q. Roe
License: GPL-2+
 Andy Polyakov wrote the first version.
"""


def _tree(tmp_path, files: dict[str, str]) -> None:
    for package, text in files.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "copyright").write_text(text, encoding="utf-8")


def test_ground_truth_comes_from_the_addressed_fields(tmp_path, monkeypatch):
    _tree(tmp_path, {"alpha": ALPHA, "beta": BETA, "gamma": BETA,     # gamma: read once
                     "delta": "Not the machine-readable format\nCopyright: 2004 Jane Q. Roe\n"})
    (tmp_path / "epsilon").mkdir()
    (tmp_path / "epsilon" / "copyright").write_bytes(b"\xff\xfe not utf-8")
    monkeypatch.setattr(cn, "DOC_ROOT", tmp_path)
    # persons: written with an address in a Copyright field; boilerplate and teams are not
    assert cn.persons([ALPHA]) == {"Andy Polyakov", "Jane Q. Roe"}
    files = cn.load(lines=400)
    # alpha writes its persons with addresses only: nothing to count there; Patrick Powell
    # is on no addressed field, the licence's prose is no Copyright field
    assert [(f.package, f.names) for f in files] == [("beta", ("Andy Polyakov", "Jane Q. Roe"))]
    assert cn.load(lines=3) == []                     # only the first lines are read


def test_a_holder_the_product_keeps_is_counted_as_gone_out(tmp_path, monkeypatch, capsys):
    require_model("ner")
    # "brian d foy" in lower case is no name to the detector; its addressed field says it is
    _tree(tmp_path, {"alpha": FORMAT + "Copyright: 2001 Lee Garrett <lee@example.org>\n"
                                       "           2002 brian d foy <bdfoy@example.org>\n",
                     "beta": FORMAT + "Copyright: 2005 Lee Garrett\n"
                                      "           2006 brian d foy\n"})
    monkeypatch.setattr(cn, "DOC_ROOT", tmp_path)
    assert cn.main([]) == 0
    out = capsys.readouterr().out
    assert "holders without address replaced 1/2 (50.0 %)" in out
    assert "went out: beta: 'brian d foy'" in out


def test_a_degraded_detector_gives_no_number(tmp_path, monkeypatch, capsys):
    _tree(tmp_path, {"alpha": ALPHA, "beta": BETA})
    monkeypatch.setattr(cn, "DOC_ROOT", tmp_path)
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "no-models"))
    assert cn.main([]) == 1
    captured = capsys.readouterr()
    assert "the detector is degraded" in captured.err
    assert "replaced" not in captured.out
