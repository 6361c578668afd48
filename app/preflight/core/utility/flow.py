"""Learning on the flow, per provider: every real cloud answer becomes a training pair.

Size (~410 lines): one store (its SQLite schema, recording, refits, status) behind one lock.

The send path calls :meth:`FlowLearner.record` with the features it assessed, the realized
utility E of the answer that came back, and the provider's name and model id. Pairs live
in a local SQLite file in the data folder (numbers and a few short scalar facts only:
never document text). Each (provider, model) learns on its own: once enough new pairs of
one provider exist, a regressor is refitted on the shipped training rows plus *that*
provider's pairs and saved to ``data_dir/utility/<slug>/regressor.joblib``; predictions
for that provider use it (:meth:`FlowLearner.predictor_for`), every other provider keeps
its own refit or the shipped prior. The metrics of the model card are recomputed on the
provider's history from the predictions made *before* each answer arrived, so they are
honest out-of-sample numbers.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import json
import logging
import math
import re
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from preflight.core import paths
from preflight.core.errors import ModelUnavailableError
from preflight.core.fsutil import atomic_write_text, check_database_files
from preflight.core.utility.features import ALL_FEATURES, Features, as_mapping
from preflight.core.utility.flow_effect import effect
from preflight.core.utility.predictor import (
    BUNDLE_NAME,
    CostMetrics,
    UtilityPredictor,
    cost_metrics,
    fit_bundle,
    load_bundle,
    save_bundle,
    shipped_bundle_path,
)
from preflight.core.utility.slm_roles import BASE_SLM_ROLE, DEFAULT_SLM_ROLE, shipped_folder

log = logging.getLogger(__name__)

TRAINING_ROWS_NAME = "training_features.csv"
_META_KEYS_MAX_LEN = 64
#: How many shipped rows each of the user's own pairs weighs when refitting (its sample
#: weight). The user's answers may come from another model than the stand-in of the
#: shipped rows (3,278 rows), so a few dozen of their pairs must weigh against them.
#: Chosen out of fold on a transfer to a model the prior never saw (issue 47):
#: Qwen2.5-Coder-0.5B-Instruct answering SpamAssassin e-mails in no split, 50 stream
#: sends of 17 documents, each document's sends predicted by a refit on the others'
#: (``python -m preflight_eval.flow_weight --weights 1,5,20,100,300``): Failed 66.0 % with
#: the prior alone, 60.0 / 62.0 / **52.0** / 62.0 / 68.0 % at weights 1 / 5 / 20 / 100 /
#: 300 (RMSE 0.205 → 0.191 at 20). On the transfer's 48 evaluation sends (``flow_experiment
#: --docs unseen-email``) weight 20 goes 62.5 → 58.3 → 60.4 % after 0 / 20 / 50 sends.
USER_WEIGHT = 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pairs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    features TEXT NOT NULL,
    realized REAL NOT NULL,
    predicted REAL,
    variant TEXT NOT NULL,
    meta TEXT NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class ProviderKey:
    """Whose answers a pair describes: the provider's name and its model id."""

    provider: str
    model: str

    @property
    def slug(self) -> str:
        """A folder name safe on every file system, unique per (provider, model)."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{self.provider}--{self.model}")
        digest = hashlib.sha256(f"{self.provider}\0{self.model}".encode()).hexdigest()[:8]
        return f"{readable.strip('-.')[:48]}-{digest}"

    @classmethod
    def of(cls, meta: Mapping[str, Any]) -> "ProviderKey":
        return cls(str(meta.get("provider") or ""), str(meta.get("model") or ""))


@dataclass(frozen=True)
class CalibrationStatus:
    """How far the predictions for one provider are fitted to the user's own sends."""

    provider: str
    model: str
    sends: int            # pairs recorded for this provider
    calibrated_on: int    # pairs in the refit in use (0: the shipped prior is used)
    # on those sends (plain, out of fold, flow_effect): the share of instant predictions
    # off by more than 0.1 with the shipped model and with the refit; None: not measured
    failed_prior_pct: float | None = None
    failed_refit_pct: float | None = None


def shipped_rows_path(slm_role: str = DEFAULT_SLM_ROLE) -> Path:
    """The training rows of ``slm_role``'s shipped bundle (the prior of its refits)."""
    return paths.resource_path(*shipped_folder(slm_role), TRAINING_ROWS_NAME)


def read_training_rows(path: Path) -> list[dict[str, Any]]:
    """The shipped training rows (features, target, variant, group) from CSV."""
    rows: list[dict[str, Any]] = []
    if not path.is_file():
        return rows
    with path.open(newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            row: dict[str, Any] = {}
            for name in ALL_FEATURES:
                value = rec.get(name, "")
                row[name] = float(value) if value not in ("", None) else math.nan
            row["target"] = float(rec["target"])
            row["variant"] = rec.get("variant") or "plain"
            row["group"] = rec.get("group", "")
            rows.append(row)
    return rows


def write_training_rows(rows: list[Mapping[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = list(ALL_FEATURES) + ["target", "variant", "group", "method"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            out = {}
            for c in cols:
                v = r.get(c, "")
                if isinstance(v, float):
                    v = "" if math.isnan(v) else f"{v:.6g}"
                out[c] = v
            writer.writerow(out)


@dataclass(frozen=True)
class RecordResult:
    pair_id: int
    predicted: float | None
    refitted: bool
    pairs_total: int      # pairs of this provider


class FlowLearner:
    """Stores (features, realized utility) pairs per provider and refits from them.

    Args:
        db_path: SQLite file (default: ``utility_flow.sqlite`` in the data folder).
        predictor: the prior (default: the shipped bundle); used for every provider
            without a refit of its own.
        refit_every: refit a provider's model after this many new pairs of it.
        shipped_rows: the prior's training rows (default: the shipped CSV).
        bundle_root: folder of the per-provider refits (default: ``data_dir/utility``).
        user_weight: how many shipped rows one of the user's pairs weighs (its sample
            weight in the refit).
        slm_role: the assessor SLM whose features are recorded and learned from. Its
            features differ from another SLM's, so each SLM has its own prior, pairs and
            refits: the defaults above are SmolLM2's (``BASE_SLM_ROLE``, the first
            default: an install keeps what it learned), another's are kept apart
            (``utility_flow-<role>.sqlite``, ``data_dir/utility/<role>/``).
    """

    def __init__(
        self,
        db_path: Path | None = None,
        *,
        predictor: UtilityPredictor | None = None,
        refit_every: int = 20,
        shipped_rows: Path | None = None,
        bundle_root: Path | None = None,
        user_weight: int = USER_WEIGHT,
        slm_role: str = DEFAULT_SLM_ROLE,
    ) -> None:
        if user_weight < 1:
            raise ValueError("user_weight must be 1 or more")
        own = slm_role != BASE_SLM_ROLE     # SmolLM2's files keep their first names
        self.slm_role = slm_role
        self.db_path = db_path or paths.data_dir() / (
            f"utility_flow-{slm_role}.sqlite" if own else "utility_flow.sqlite")
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._prior = predictor
        self.refit_every = refit_every
        self.user_weight = user_weight
        self._shipped_rows = shipped_rows or shipped_rows_path(slm_role)
        self.bundle_root = bundle_root or paths.data_dir().joinpath(
            "utility", *((slm_role,) if own else ()))
        self._lock = threading.RLock()
        self._predictors: dict[ProviderKey, UtilityPredictor | None] = {}
        with self._connect() as db:
            db.executescript(_SCHEMA)
            _migrate(db)

    def _connect(self) -> sqlite3.Connection:
        check_database_files(self.db_path)
        return sqlite3.connect(self.db_path, timeout=10)

    # ------------------------------------------------------------------ predictors
    @property
    def prior(self) -> UtilityPredictor | None:
        """The shipped predictor (None when it cannot be loaded: recording still works)."""
        if self._prior is None:
            try:
                self._prior = UtilityPredictor.load(shipped_bundle_path(self.slm_role))
            except ModelUnavailableError as exc:
                log.warning("no utility model to record predictions with: %s", exc.message)
        return self._prior

    def bundle_path(self, key: ProviderKey) -> Path:
        return self.bundle_root / key.slug / BUNDLE_NAME

    def predictor_for(self, key: ProviderKey | None) -> UtilityPredictor | None:
        """The provider's own refit when present and readable, else the prior."""
        if key is None:
            return self.prior
        with self._lock:
            if key not in self._predictors:
                path = self.bundle_path(key)
                if path.is_file():
                    try:
                        self._predictors[key] = UtilityPredictor(load_bundle(path), path)
                    except ModelUnavailableError as err:
                        log.warning("ignoring the refitted utility model: %s", err.message)
                        self._predictors[key] = None   # said once; the prior serves
            return self._predictors.get(key) or self.prior

    def status(self, key: ProviderKey | None) -> CalibrationStatus:
        """Sends recorded for the provider and how many of them its refit in use saw."""
        if key is None:
            return CalibrationStatus("", "", 0, 0)
        sends = self._count(key)
        predictor = self.predictor_for(key)
        if predictor is None or predictor is self.prior:
            return CalibrationStatus(key.provider, key.model, sends, 0)
        eff = predictor.metrics.get("user_effect") or {}
        return CalibrationStatus(key.provider, key.model, sends,
                                 int(predictor.metrics.get("user_pairs", 0)),
                                 eff.get("failed_prior_pct"), eff.get("failed_refit_pct"))

    # ------------------------------------------------------------------ recording
    def record(
        self, features: Features | Mapping[str, float], realized_utility: float,
        meta: Mapping[str, Any] | None = None,
    ) -> RecordResult:
        """Store one pair; refit its provider's model when ``refit_every`` new pairs of
        that provider have accumulated.

        ``meta`` carries scalar facts (provider, model, method, corrected,
        predicted_utility); strings longer than 64 characters are dropped so document
        text can never end up here by accident.
        """
        features = as_mapping(features)
        meta = dict(meta or {})
        key = ProviderKey.of(meta)
        corrected = bool(meta.get("corrected", False))
        predicted = meta.get("predicted_utility")
        predictor = self.predictor_for(key)
        if predicted is None and predictor is not None:
            predicted = predictor.predict(dict(features), corrected=corrected)
        clean_meta = {
            k: v for k, v in meta.items()
            if isinstance(v, (int, float, bool))
            or (isinstance(v, str) and len(v) <= _META_KEYS_MAX_LEN)
        }
        feats = {k: (None if (isinstance(v, float) and math.isnan(v)) else float(v))
                 for k, v in features.items() if k in ALL_FEATURES and v is not None}
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock, self._connect() as db:
            cur = db.execute(
                "INSERT INTO pairs (created, features, realized, predicted, variant, meta, "
                "provider, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (now, json.dumps(feats), float(realized_utility),
                 None if predicted is None else float(predicted),
                 "corrected" if corrected else "plain", json.dumps(clean_meta),
                 key.provider[:_META_KEYS_MAX_LEN], key.model[:_META_KEYS_MAX_LEN]),
            )
            pair_id = int(cur.lastrowid)
        refitted = False
        # Pairs of an unnamed provider (an old record) are kept but never refit anything.
        if key.provider and self.pairs_since_refit(key) >= self.refit_every:
            try:
                self.refit(key)
                refitted = True
            except ValueError as exc:
                log.warning("refit skipped: %s", exc)
        return RecordResult(pair_id, None if predicted is None else float(predicted),
                            refitted, self._count(key))

    # ------------------------------------------------------------------ history
    def pairs(self, key: ProviderKey | None = None) -> list[dict[str, Any]]:
        """Every pair in order, or only those of ``key``."""
        sql = "SELECT id, features, realized, predicted, variant, meta FROM pairs"
        args: tuple = ()
        if key is not None:
            sql += " WHERE provider = ? AND model = ?"
            args = (key.provider, key.model)
        with self._connect() as db:
            return [{"id": pid, "features": json.loads(feats), "realized": realized,
                     "predicted": predicted, "variant": variant, "meta": json.loads(meta)}
                    for pid, feats, realized, predicted, variant, meta
                    in db.execute(sql + " ORDER BY id", args)]

    def _count(self, key: ProviderKey, after_id: int = 0) -> int:
        with self._connect() as db:
            return int(db.execute(
                "SELECT COUNT(*) FROM pairs WHERE provider = ? AND model = ? AND id > ?",
                (key.provider, key.model, after_id)).fetchone()[0])

    def _state(self, key: str, default: str = "") -> str:
        with self._connect() as db:
            row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def laptop_pseudonym(self) -> str:
        """A random id of this pair store, made once: the company's pooled store tells
        laptops apart by it (pair ids restart with a new file, and so does the id)."""
        import secrets

        with self._lock, self._connect() as db:
            db.execute("INSERT OR IGNORE INTO state (key, value) VALUES (?, ?)",
                       ("laptop_pseudonym", secrets.token_hex(12)))
        return self._state("laptop_pseudonym")

    def pairs_since_refit(self, key: ProviderKey) -> int:
        return self._count(key, int(self._state(f"last_refit_pair_id:{key.slug}", "0")))

    def history_metrics(self, key: ProviderKey | None = None) -> CostMetrics:
        """Table-2 metrics of the predictions made on the user's own sends (to ``key``)."""
        scored = [p for p in self.pairs(key) if p["predicted"] is not None]
        return cost_metrics([p["realized"] for p in scored], [p["predicted"] for p in scored])

    # ------------------------------------------------------------------ refitting
    def training_rows(self, key: ProviderKey) -> list[dict[str, Any]]:
        """Shipped rows + the provider's pairs, each pair with sample weight
        ``user_weight`` (one row weighing that many shipped rows, not copies of it)."""
        rows: list[dict[str, Any]] = list(read_training_rows(self._shipped_rows))
        for p in self.pairs(key):
            row = {n: (math.nan if p["features"].get(n) is None else p["features"][n])
                   for n in ALL_FEATURES}
            row.update(target=p["realized"], variant=p["variant"], group=f"user:{p['id']}",
                       weight=float(self.user_weight))
            rows.append(row)
        return rows

    def refit(self, key: ProviderKey) -> dict[str, Any]:
        """Refit ``key``'s model on shipped rows + its pairs; save it; return its metrics."""
        pairs = self.pairs(key)
        rows = self.training_rows(key)
        metrics: dict[str, Any] = {}
        if self.prior is not None:
            metrics.update(self.prior.metrics)
        metrics["user_history"] = self.history_metrics(key).to_json()
        metrics["user_pairs"] = len(pairs)
        metrics["user_weight"] = self.user_weight
        metrics["provider"] = {"name": key.provider, "model": key.model}
        shipped = [r for r in rows if "weight" not in r]
        metrics["user_effect"] = effect(self.prior, shipped, rows[len(shipped):])
        bundle = fit_bundle(rows, metrics=metrics, measure=False,
                            source=f"shipped rows + learning on the flow ({key.provider})")
        prior = self.prior
        # the same SLM and answer cap as the rows it refits on (the prior's)
        bundle["slm_role"] = self.slm_role
        if prior is not None and "slm_answer_tokens" in prior.bundle:
            bundle["slm_answer_tokens"] = prior.bundle["slm_answer_tokens"]
        path = self.bundle_path(key)
        save_bundle(bundle, path)
        _write_card(bundle, path.parent / "MODEL_CARD.md", key)
        last_id = pairs[-1]["id"] if pairs else 0
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)",
                       (f"last_refit_pair_id:{key.slug}", str(last_id)))
            self._predictors[key] = UtilityPredictor(bundle, path)
        log.info("utility model for one provider refitted on %d rows (%d pairs of yours)",
                 len(rows), len(pairs))
        return metrics


def _migrate(db: sqlite3.Connection) -> None:
    """Files written before pairs were kept per provider: add the columns, fill them from
    each pair's meta."""
    cols = {row[1] for row in db.execute("PRAGMA table_info(pairs)")}
    for col in ("provider", "model"):
        if col not in cols:
            db.execute(f"ALTER TABLE pairs ADD COLUMN {col} TEXT NOT NULL DEFAULT ''")
            db.execute(f"UPDATE pairs SET {col} = COALESCE(json_extract(meta, '$.{col}'), '')")


def _write_card(bundle: Mapping[str, Any], path: Path, key: ProviderKey) -> None:
    m = bundle["metrics"].get("user_history", {})
    lines = [
        f"# Utility regressor for {key.provider} ({key.model}), refitted on this computer",
        "",
        f"- Refitted: {bundle['created']} with scikit-learn {bundle['sklearn_version']}",
        f"- Rows: {bundle['n_rows']} ({bundle['metrics'].get('user_pairs', 0)} of your sends, "
        f"each weighing {bundle['metrics'].get('user_weight', 1)} shipped rows)",
        "",
        "## Predictions on your own sends (made before each answer arrived)",
        "",
        "| n | R² | RMSE | Wasted $ | Wasted ε | Failed |",
        "|---|---|---|---|---|---|",
        f"| {m.get('n')} | {m.get('r2')} | {m.get('rmse')} | {m.get('wasted_money_pct')} % "
        f"| {m.get('wasted_epsilon_pct')} % | {m.get('failed_pct')} % |",
        "",
    ]
    atomic_write_text(path, "\n".join(lines))
