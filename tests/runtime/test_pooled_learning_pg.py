"""Pooled learning on a real PostgreSQL: laptops share their learning pairs (numbers only)
through `preflight audit sync` when the company policy says so, train_company trains a
bundle per provider on them, and the app loads it after checking its sha256."""

from __future__ import annotations

import math
import os
import random
import sqlite3
from pathlib import Path

import pytest

from _postgres import PASSWORD, Cluster
from preflight.cli.main import main
from preflight.core.org_policy_audit import CentralAuditSettings
from preflight.core.org_policy_learning import CompanyModelSettings
from preflight.core.send.audit import AuditLog, Fingerprint
from preflight.core.send.audit_sync import central_password, sync_pairs
from preflight.core.send.learning import FlowRecorder
from preflight.core.utility.features import ALL_FEATURES
from preflight.core.utility.flow import FlowLearner
from preflight.runtime.audit_pg import PgAuditSink
from preflight.runtime.company_model import load_company_predictor
from preflight_eval import train_company

pytestmark = pytest.mark.slow

SENTINEL = "Zebulon Quagmire-Vasquez"


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.close()


def _policy(cluster, share: bool | None) -> None:
    line = "" if share is None else f"share_learning_pairs = {str(share).lower()}\n"
    Path(os.environ["PREFLIGHT_ORG_POLICY"]).write_text(
        f'version = 1\n{line}[audit.central]\nurl = "{cluster.url()}"\n'
        'password_env = "PF_TEST_AUDIT_PW"\nsslmode = "disable"\n', encoding="utf-8")


@pytest.fixture
def central(cluster, monkeypatch):
    monkeypatch.setenv("PF_TEST_AUDIT_PW", PASSWORD)
    return cluster


def _features(quality: float, eps: float) -> dict[str, float | None]:
    feats: dict[str, float | None] = {n: None for n in ALL_FEATURES}
    feats.update(epsilon=eps, log_epsilon=math.log(eps), method_dx=1.0,
                 frac_tokens_changed=1 - quality, frac_chars_changed=1 - quality,
                 length_ratio=1.0, sim_sanitized=quality, sim_slm_original=0.7,
                 sim_slm_sanitized=quality * 0.9, slm_d_minus_c=quality * 0.9 - 0.7)
    return feats


class _Embedder:
    """Similarity from the answer's share of the original's words (a real number, no
    model): enough for the recorder to compute a realized utility."""

    def similarity(self, a: str, b: str) -> float:
        wa, wb = set(a.split()), set(b.split())
        return len(wa & wb) / max(1, len(wa | wb))


def _learn(flow: FlowLearner, n: int, seed: int, provider: str = "acme") -> None:
    rng = random.Random(seed)
    for i in range(n):
        quality = rng.random()
        eps = (20.0, 60.0, 150.0)[i % 3]
        # the meta may hold short strings locally: one that names the document's person
        flow.record(_features(quality, eps), 0.2 + 0.6 * quality + rng.gauss(0, 0.03),
                    {"provider": provider, "model": "acme-1", "note": SENTINEL})


def _rows(cluster) -> list[str]:
    import psycopg

    with psycopg.connect(cluster.url(), password=PASSWORD) as conn:
        return [r[0] for r in conn.execute(
            "SELECT t::text FROM preflight_learning_pairs t").fetchall()]


def _sink(cluster) -> PgAuditSink:
    settings = CentralAuditSettings(cluster.url(), password_env="PF_TEST_AUDIT_PW",
                                    sslmode="disable")
    return PgAuditSink(settings, lambda: central_password(settings, None))


def test_policy_default_off_shares_nothing(central, capsys):
    _policy(central, None)
    before = len(_rows(central)) if _table_exists(central) else 0
    _learn(FlowLearner(refit_every=10**9), 25, seed=1)
    _send_with_sentinel(FlowLearner(refit_every=10**9))
    assert main(["audit", "sync"]) == 0
    out = capsys.readouterr().out
    assert "of 1 record(s)" in out and "learning pair" not in out
    assert len(_rows(central)) == before         # audit events went, pairs did not


def _table_exists(cluster) -> bool:
    import psycopg

    with psycopg.connect(cluster.url(), password=PASSWORD) as conn:
        return conn.execute("SELECT to_regclass('preflight_learning_pairs')").fetchone()[0] \
            is not None


def _send_with_sentinel(flow: FlowLearner) -> None:
    """A send of a document naming the sentinel person, learned through the real
    recorder: the audit log keeps the original (opt-in), the pair only numbers."""
    log = AuditLog()
    text = f"Memo: {SENTINEL} joins the board on Monday. {SENTINEL} chairs it."
    rid = log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(text),
                    provider="acme", model="acme-1", method="dx", epsilon=60.0,
                    original_text=text, payload=text.encode())
    log.update(rid, status="done", answer_raw=f"{SENTINEL} joins the board.")
    realized, state = FlowRecorder(log, _Embedder(), flow).learn(
        rid, text, f"{SENTINEL} joins the board.", _features(0.5, 60.0), None, None,
        {"provider": "acme", "model": "acme-1"})
    assert state == "recorded" and realized is not None
    log.close()


def test_pairs_round_trip_to_a_company_model_without_any_text(central, tmp_path, capsys):
    _policy(central, True)
    laptop = FlowLearner(refit_every=10**9)
    _learn(laptop, 40, seed=2)
    _send_with_sentinel(laptop)
    assert main(["audit", "sync"]) == 0
    assert "Shared 41 learning pair(s)" in capsys.readouterr().out
    # a second laptop (its own pair store) syncs through the same path
    other = FlowLearner(tmp_path / "other.sqlite", refit_every=10**9)
    _learn(other, 30, seed=3)
    sink = _sink(central)
    try:
        assert sync_pairs(other, sink) == 30
        assert sync_pairs(other, sink) == 0                    # nothing twice
    finally:
        sink.close()

    stored = _rows(central)
    assert len(stored) >= 71
    assert not any(SENTINEL in row or "Zebulon" in row for row in stored)
    # …while the laptop's own store does hold it (the test could fail)
    with sqlite3.connect(laptop.db_path) as db:
        local = " ".join(r[0] for r in db.execute("SELECT meta FROM pairs"))
    assert SENTINEL in local
    assert {laptop.laptop_pseudonym(), other.laptop_pseudonym()} <= {
        r.strip("()").split(",")[0] for r in stored}

    out = tmp_path / "company"
    assert train_company.main(["--from", central.url(), "--password-env",
                               "PF_TEST_AUDIT_PW", "--sslmode", "disable",
                               "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    bundle = next(out.glob("acme*/regressor.joblib"))
    digest = bundle.with_name("regressor.joblib.sha256").read_text().split()[0]
    card = bundle.with_name("MODEL_CARD.md").read_text()
    assert f"sha256 = \"{digest}\"" in printed and "laptop(s)" in card and digest in card
    predictor = load_company_predictor(CompanyModelSettings(str(bundle), digest))
    assert predictor.metrics["company"]["laptops"] >= 2
    low = predictor.predict(_features(0.1, 60.0))
    high = predictor.predict(_features(0.9, 60.0))
    assert -1.0 <= low < high <= 1.0                           # learned E follows quality
