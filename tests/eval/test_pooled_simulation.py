"""The pooled-training simulation runs end to end on a small synthetic data set: pairs
come only from TRAIN documents, and scores are on the TEST documents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from preflight_eval import pooled_simulation
from preflight_eval.utility_data.rows import load
from test_eval_utility import _write


def test_small_simulation_prints_the_table(tmp_path: Path, capsys) -> None:
    _write(tmp_path / "features-cloud_x-slm_y.jsonl.gz", docs=40)
    out = tmp_path / "report.json"
    assert pooled_simulation.main(["--data", str(tmp_path), "--cloud-role", "cloud_x",
                                   "--slm-role", "slm_y", "--sizes", "40,120",
                                   "--seeds", "2", "--per-user", "10",
                                   "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| pooled pairs | 40 | 4 |" in table and "| pooled pairs | 120 | 12 |" in table
    report = json.loads(out.read_text())
    assert [p["pairs"] for p in report["pooled"]] == [40, 120]
    assert report["test_rows"] > 0 and len(report["pooled"][0]["runs"]) == 2
    # E follows B in these rows: pooled pairs learn it, far better than a coin flip
    assert report["pooled"][1]["mae"] < 0.1


def test_pairs_come_from_train_documents_with_per_user_noise(tmp_path: Path) -> None:
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path, docs=30)
    data = load(path)
    train = data.split("train")
    pairs = pooled_simulation.simulate_pairs(train, 60, np.random.default_rng(0),
                                             sigma_user=0.05, sigma_send=0.0, per_user=20)
    train_docs = {r["group"] for r in train}
    assert {p["document"] for p in pairs} <= train_docs
    assert len({p["laptop"] for p in pairs}) == 3 and all("split" not in p for p in pairs)
    by_row = {(r["group"], r["key"] if "key" in r else r["epsilon_setting"]): r["target"]
              for r in train}
    shifts = {}
    for p in pairs:                   # without send noise each user's shift is constant
        base = by_row[(p["document"], p.get("key", p["epsilon_setting"]))]
        shifts.setdefault(p["laptop"], set()).add(round(p["target"] - base, 6))
    assert all(len(s) == 1 for s in shifts.values()) and len(
        {next(iter(s)) for s in shifts.values()}) == 3
