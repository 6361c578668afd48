"""Learning on the flow: pairs in SQLite, refit after enough new pairs, honest metrics."""

from __future__ import annotations

import json
import sqlite3

import pytest

from preflight.app.presentation import calibration_text
from preflight.core.utility.flow import (
    FlowLearner, ProviderKey, read_training_rows, write_training_rows,
)
from preflight.core.utility.predictor import UtilityPredictor, fit_bundle, load_bundle

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


A = {"provider": "acme", "model": "acme-large"}
B = {"provider": "other", "model": "other-small"}
KEY_A, KEY_B = ProviderKey("acme", "acme-large"), ProviderKey("other", "other-small")


def _feats(r):
    return {k: v for k, v in r.items() if k not in ("target", "variant", "group")}


def _learner(shipped, tmp_path, **kw):
    rows_path, predictor = shipped
    return FlowLearner(tmp_path / "flow.sqlite", predictor=predictor, shipped_rows=rows_path,
                       bundle_root=tmp_path / "utility", **kw)


def test_record_stores_numbers_only_and_refits_after_enough_pairs(shipped, tmp_path):
    learner = _learner(shipped, tmp_path, refit_every=5)
    results = []
    for r in synthetic_rows(n_docs=1, seed=5)[:5]:
        meta = {"method": "dx", **A, "document": "x" * 500}
        results.append(learner.record(_feats(r), r["target"], meta))
    assert [r.refitted for r in results] == [False] * 4 + [True]
    assert all(r.predicted is not None for r in results)   # prediction made before the answer
    bundle = learner.bundle_path(KEY_A)
    assert bundle.is_file() and bundle.parent.parent == tmp_path / "utility"
    assert "acme" in bundle.parent.name
    card = (bundle.parent / "MODEL_CARD.md").read_text()
    assert "your sends" in card and "acme" in card
    with sqlite3.connect(tmp_path / "flow.sqlite") as con:
        rows = con.execute("SELECT meta, provider, model FROM pairs").fetchall()
    metas = [json.loads(m) for m, _, _ in rows]
    assert all("document" not in m and m["method"] == "dx" for m in metas)
    assert {(p, m) for _, p, m in rows} == {("acme", "acme-large")}
    assert learner.pairs_since_refit(KEY_A) == 0
    m = learner.history_metrics(KEY_A)
    assert m.n == 5 and 0.0 <= m.failed <= 100.0


def test_pairs_of_one_provider_never_change_another_providers_model(shipped, tmp_path):
    _, prior = shipped
    learner = _learner(shipped, tmp_path, refit_every=1000)
    for r in synthetic_rows(n_docs=2, seed=8):
        learner.record(_feats(r), r["target"], B)
    learner.refit(KEY_B)
    b_before = learner.bundle_path(KEY_B).read_bytes()
    # provider A's answers are consistently far better than the shipped data says
    for r in synthetic_rows(n_docs=6, seed=3):
        learner.record(_feats(r), min(1.0, r["target"] + 0.3), A)
    metrics = learner.refit(KEY_A)
    assert metrics["user_pairs"] == 48
    assert learner.bundle_path(KEY_B).read_bytes() == b_before      # B untouched
    assert load_bundle(learner.bundle_path(KEY_B))["metrics"]["user_pairs"] == 16
    probe = dict(synthetic_rows(n_docs=1, seed=3)[6])
    # a fresh learner loads each provider's own refit from disk
    fresh = _learner(shipped, tmp_path)
    pa, pb = fresh.predictor_for(KEY_A), fresh.predictor_for(KEY_B)
    assert pa.path == fresh.bundle_path(KEY_A) and pb.path == fresh.bundle_path(KEY_B)
    assert pa.predict(probe) > prior.predict(probe) + 0.05
    assert pa.predict(probe) > pb.predict(probe) + 0.05
    # a provider never seen uses the prior
    assert fresh.predictor_for(ProviderKey("new", "m")) is prior
    assert fresh.predictor_for(ProviderKey("acme", "another-model")) is prior


def test_user_pairs_weigh_more_than_prior_rows(shipped, tmp_path):
    learner = _learner(shipped, tmp_path, refit_every=1000, user_weight=4)
    for r in synthetic_rows(n_docs=1, seed=2):
        learner.record(_feats(r), r["target"], A)
    rows = learner.training_rows(KEY_A)
    shipped_n = len(read_training_rows(shipped[0]))
    # one row per pair, weighing four shipped rows (a sample weight, not four copies)
    assert len(rows) == shipped_n + 8
    assert [r.get("weight", 1.0) for r in rows[shipped_n:]] == [4.0] * 8
    assert all("weight" not in r for r in rows[:shipped_n])
    assert learner.refit(KEY_A)["user_weight"] == 4


def test_a_sample_weight_counts_like_copies_of_the_row():
    """fit_model's ``weight``: a row weighing k moves the fit as k copies of it do."""
    import numpy as np

    from preflight.core.utility.fitting import fit_model, predict_rows

    rng = np.random.default_rng(0)
    base = [{"epsilon": float(e), "target": float(e) / 100 + rng.normal(0, 0.02)}
            for e in rng.uniform(1, 100, 300)]
    odd = {"epsilon": 50.0, "target": 0.95}
    copies = fit_model(base + [dict(odd) for _ in range(40)], ["epsilon"], min_leaf=5)
    weighted = fit_model(base + [dict(odd, weight=40.0)], ["epsilon"], min_leaf=5)
    plain = fit_model(base + [dict(odd)], ["epsilon"], min_leaf=5)
    at = [{"epsilon": 50.0}]
    p_copies, p_weighted, p_plain = (float(predict_rows(m, at, ["epsilon"])[0])
                                     for m in (copies, weighted, plain))
    assert p_weighted > p_plain + 0.02
    assert abs(p_weighted - p_copies) < abs(p_plain - p_copies)


def test_unreadable_refit_falls_back_to_the_prior(shipped, tmp_path):
    _, prior = shipped
    learner = _learner(shipped, tmp_path)
    path = learner.bundle_path(KEY_A)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a joblib file")
    assert learner.predictor_for(KEY_A) is prior
    assert learner.status(KEY_A).calibrated_on == 0


def test_status_wording_per_provider(shipped, tmp_path):
    learner = _learner(shipped, tmp_path, refit_every=20)
    rows = synthetic_rows(n_docs=5, seed=4)[:37]
    for r in rows:
        learner.record(_feats(r), r["target"], A)
    status = learner.status(KEY_A)
    assert (status.sends, status.calibrated_on) == (37, 20)    # refitted at the 20th send
    learner.refit(KEY_A)
    status = learner.status(KEY_A)
    assert calibration_text(status) == (
        f"calibrated on 37 of your sends to acme: on them it is off by more than 0.1 "
        f"{status.failed_refit_pct:.0f} % of the time, the shipped estimate "
        f"{status.failed_prior_pct:.0f} %")
    assert calibration_text(learner.status(KEY_B)) == "not yet calibrated for this provider"
    assert calibration_text(None) == "not yet calibrated for this provider"


def test_old_database_without_provider_columns_is_migrated(shipped, tmp_path):
    db = tmp_path / "flow.sqlite"
    with sqlite3.connect(db) as con:
        con.executescript("""CREATE TABLE pairs (id INTEGER PRIMARY KEY AUTOINCREMENT,
            created TEXT NOT NULL, features TEXT NOT NULL, realized REAL NOT NULL,
            predicted REAL, variant TEXT NOT NULL, meta TEXT NOT NULL);""")
        con.execute("INSERT INTO pairs (created, features, realized, predicted, variant, meta)"
                    " VALUES ('t', '{}', 0.5, 0.4, 'plain', ?)", (json.dumps(A),))
    learner = _learner(shipped, tmp_path)
    assert len(learner.pairs(KEY_A)) == 1 and learner.pairs(KEY_B) == []


def test_the_refit_says_what_it_changed_on_the_users_sends(shipped, tmp_path):
    """A provider whose answers score 0.3 above what the shipped model expects: out of
    fold on those sends, the refit misses far less often than the shipped estimate; with
    fewer than ten sends nothing is claimed. (A heavy user weight, so that 31 sends can
    move the refit against the shipped rows: the measurement is under test here.)"""
    learner = _learner(shipped, tmp_path, refit_every=1000, user_weight=50)
    rows = [r for r in synthetic_rows(n_docs=8, seed=9) if r["variant"] == "plain"][:40]
    prior = shipped[1]
    for r in rows[:9]:
        learner.record(_feats(r), min(1.0, prior.predict_fast(_feats(r)) + 0.3), A)
    learner.refit(KEY_A)
    assert learner.status(KEY_A).failed_prior_pct is None       # 9 sends: not measured
    for r in rows[9:]:
        learner.record(_feats(r), min(1.0, prior.predict_fast(_feats(r)) + 0.3), A)
    learner.refit(KEY_A)
    status = learner.status(KEY_A)
    assert status.failed_prior_pct >= 90.0
    assert status.failed_refit_pct <= status.failed_prior_pct - 30.0
