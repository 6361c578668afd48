"""`preflight restore`: answers with tolerant spellings, and clean errors."""

from __future__ import annotations

import pytest

from preflight.cli import main as cli
from preflight.core.sanitize.vault import PLACEHOLDER, Vault, VaultEntry


@pytest.fixture()
def vault_file(tmp_path):
    v = Vault()
    v.reset("placeholder", "", [VaultEntry("<PERSON_1>", "PERSON", "Ann Lee", PLACEHOLDER),
                                VaultEntry("<ORGANIZATION_1>", "ORGANIZATION", "Acme",
                                           PLACEHOLDER)])
    return v.save(tmp_path / "v.json")


def test_restores_an_llm_answer(capsys, tmp_path, vault_file):
    answer = tmp_path / "answer.txt"
    answer.write_text("PERSON_1 leads <organization_1>; <PERSON_1>'s plan is fine.\n",
                      encoding="utf-8")
    assert cli.main(["restore", str(answer), "--vault", str(vault_file)]) == 0
    assert capsys.readouterr().out == "Ann Lee leads Acme; Ann Lee's plan is fine.\n"


@pytest.mark.parametrize("content, needle", [
    (b"{broken", "damaged"),
    (b'{"schema_version": 7, "entries": []}', "newer Preflight"),
])
def test_damaged_vault_is_a_clean_error(capsys, tmp_path, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    doc = tmp_path / "d.txt"
    doc.write_text("x", encoding="utf-8")
    assert cli.main(["restore", str(doc), "--vault", str(bad)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_missing_vault_is_a_clean_error(capsys, tmp_path):
    doc = tmp_path / "d.txt"
    doc.write_text("x", encoding="utf-8")
    assert cli.main(["restore", str(doc), "--vault", str(tmp_path / "none.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_vault_is_required(capsys, tmp_path):
    with pytest.raises(SystemExit):
        cli.main(["restore", "-"])
    assert "--vault" in capsys.readouterr().err
