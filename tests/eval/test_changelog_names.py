"""The changelog benchmark reads its ground truth from the format, and scores the product's
output: a name left in the sanitized text counts as gone out."""

from __future__ import annotations

import gzip

import pytest

from _models import require_model
from preflight_eval import changelog_names as cl

ENTRY = """{pkg} (1.0-{n}) unstable; urgency=medium

  * Fix a crash (thx {credit}; closes: #1{n}).

 -- {signer} <{addr}>  Tue, 07 Oct 2025 14:22:08 +0200

"""


def _tree(tmp_path, packages):
    for pkg, entries in packages.items():
        folder = tmp_path / pkg
        folder.mkdir()
        text = "".join(ENTRY.format(pkg=pkg, n=i, **e) for i, e in enumerate(entries))
        (folder / "changelog.Debian.gz").write_bytes(gzip.compress(text.encode()))
    return tmp_path


def test_ground_truth_comes_from_the_sign_off_lines(tmp_path, monkeypatch):
    root = _tree(tmp_path, {
        "alpha": [dict(credit="Ann Lee", signer="Lee Garrett", addr="lee@example.org"),
                  dict(credit="Bo", signer="Debian Security Team", addr="team@debian.org"),
                  dict(credit="Cy", signer="Old Entry", addr="old@example.org")],
        "beta": [dict(credit="Di", signer="Debian QA Group", addr="qa@debian.org")],
    })
    (root / "broken").mkdir()
    (root / "broken" / "changelog.Debian.gz").write_bytes(b"not gzip")
    monkeypatch.setattr(cl, "DOC_ROOT", root)
    logs = cl.load(entries=2)
    # beta signs only as a team (no person: left out); broken is skipped; the third
    # entry of alpha is past --entries
    assert [log.package for log in logs] == ["alpha"]
    (log,) = logs
    assert log.names == ("Lee Garrett",)
    assert log.addresses == ("lee@example.org", "team@debian.org")
    assert "Old Entry" not in log.text


def test_a_name_the_product_keeps_is_counted_as_gone_out(tmp_path, monkeypatch, capsys):
    require_model("ner")
    root = _tree(tmp_path, {
        "alpha": [dict(credit="Sven Joachim", signer="Lee Garrett", addr="lee@example.org")],
        # a lower-case signer the detector does not take for a name
        "gamma": [dict(credit="x", signer="intrigeri", addr="intrigeri@boum.org")],
    })
    monkeypatch.setattr(cl, "DOC_ROOT", root)
    assert cl.main(["--entries", "1"]) == 0
    out = capsys.readouterr().out
    assert "signers' names replaced 1/2 (50.0 %), addresses replaced 2/2" in out
    assert "went out: gamma: 'intrigeri'" in out
