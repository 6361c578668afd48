"""Learning on the flow: pairs in SQLite, refit after enough new pairs, honest metrics."""

from __future__ import annotations

import json
import sqlite3

import pytest

from preflight.core.utility.flow import FlowLearner, read_training_rows, write_training_rows
from preflight.core.utility.predictor import UtilityPredictor, fit_bundle, user_bundle_path

from test_predictor import synthetic_rows


@pytest.fixture
def shipped(tmp_path):
    rows = synthetic_rows(n_docs=12)
    path = tmp_path / "training_features.csv"
    write_training_rows(rows, path)
    return path, UtilityPredictor(fit_bundle(rows))


def test_training_rows_round_trip_through_csv(tmp_path):
    rows = synthetic_rows(n_docs=3)
    write_training_rows(rows, tmp_path / "t.csv")
    back = read_training_rows(tmp_path / "t.csv")
    assert len(back) == len(rows)
    assert back[5]["target"] == pytest.approx(rows[5]["target"], rel=1e-5)
    assert back[5]["epsilon"] == pytest.approx(rows[5]["epsilon"])


def test_record_stores_numbers_only_and_refits_after_enough_pairs(shipped, tmp_path):
    rows_path, predictor = shipped
    db = tmp_path / "flow.sqlite"
    learner = FlowLearner(db, predictor=predictor, refit_every=5, shipped_rows=rows_path,
                          bundle_path=tmp_path / "user" / "regressor.joblib")
    new = synthetic_rows(n_docs=1, seed=5)
    results = []
    for i, r in enumerate(new[:5]):
        feats = {k: v for k, v in r.items() if k not in ("target", "variant", "group")}
        meta = {"method": "dx", "provider": "test", "document": "x" * 500}
        results.append(learner.record(feats, r["target"], meta))
    assert [r.refitted for r in results] == [False] * 4 + [True]
    assert all(r.predicted is not None for r in results)   # prediction made before the answer
    assert (tmp_path / "user" / "regressor.joblib").is_file()
    card = (tmp_path / "user" / "MODEL_CARD.md").read_text()
    assert "your sends" in card
    with sqlite3.connect(db) as con:
        metas = [json.loads(m) for (m,) in con.execute("SELECT meta FROM pairs")]
    assert all("document" not in m and m["method"] == "dx" for m in metas)
    assert learner.pairs_since_refit() == 0
    m = learner.history_metrics()
    assert m.n == 5 and 0.0 <= m.failed <= 100.0


def test_refitted_bundle_includes_user_pairs_and_is_preferred_on_load(shipped, tmp_path):
    rows_path, predictor = shipped
    learner = FlowLearner(tmp_path / "f.sqlite", predictor=predictor, refit_every=1000,
                          shipped_rows=rows_path)
    # the user's cloud model is consistently far better than the shipped data says
    for r in synthetic_rows(n_docs=6, seed=3):
        feats = {k: v for k, v in r.items() if k not in ("target", "variant", "group")}
        learner.record(feats, min(1.0, r["target"] + 0.3))
    metrics = learner.refit()
    assert metrics["user_pairs"] == 48
    bundle_path = user_bundle_path()         # default location under PREFLIGHT_HOME
    assert bundle_path.is_file()
    loaded = UtilityPredictor.load()
    assert loaded.path == bundle_path
    probe = dict(synthetic_rows(n_docs=1, seed=3)[6])
    assert loaded.predict(probe) > predictor.predict(probe) + 0.05
