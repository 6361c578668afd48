"""The CLI's face of the deny-list: ``--deny`` protects for one run and is never stored;
the saved (hashed) entries are found as the window finds them."""

from __future__ import annotations

import json

from preflight.cli.main import main
from preflight.core.config import Settings, load_settings, save_settings
from preflight.core.pii import deny_store


def test_deny_is_per_run_and_saved_entries_are_found(_isolated_home, tmp_path, capsys,
                                                     monkeypatch):
    monkeypatch.setenv("PREFLIGHT_MODELS_DIR", str(tmp_path / "no-models"))  # patterns only
    settings = Settings()
    deny_store.add(settings.detection.deny_entries, "Wq8#zKe41Tn")
    save_settings(settings)
    doc = tmp_path / "memo.txt"
    doc.write_text("Project Lapwing uses Wq8#zKe41Tn on staging.\n", encoding="utf-8")

    assert main(["detect", str(doc), "--json", "--deny", "project lapwing"]) == 0
    found = {(e["type"], e["category"]) for e in json.loads(capsys.readouterr().out)["entities"]}
    assert ("DENY_LIST", "direct_identifier") in found and ("SECRET", "secret") in found

    stored = [p for p in _isolated_home.rglob("*") if p.is_file()
              and b"lapwing" in p.read_bytes().lower()]
    assert stored == []                                   # --deny is never written
    assert len(load_settings().detection.deny_entries) == 1
