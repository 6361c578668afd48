"""Learning on the flow: every real cloud answer becomes a training pair.

The send path calls :meth:`FlowLearner.record` with the features it assessed and the
realized utility E of the answer that came back. Pairs live in a local SQLite file in the
data folder (numbers and a few scalar facts only: never document text). Once enough new
pairs exist the regressor is refitted on the shipped training rows plus the user's pairs
and saved to the data folder, where :meth:`UtilityPredictor.load` prefers it. The metrics
of the model card are recomputed on the user's own history from the predictions that were
made *before* each answer arrived, so they are honest out-of-sample numbers.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import logging
import math
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from preflight.core import paths
from preflight.core.utility.features import ALL_FEATURES, Features, as_mapping
from preflight.core.utility.predictor import (
    CostMetrics,
    UtilityPredictor,
    cost_metrics,
    fit_bundle,
    save_bundle,
    user_bundle_path,
)

log = logging.getLogger(__name__)

TRAINING_ROWS_NAME = "training_features.csv"
_META_KEYS_MAX_LEN = 64

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pairs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    features TEXT NOT NULL,
    realized REAL NOT NULL,
    predicted REAL,
    variant TEXT NOT NULL,
    meta TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def shipped_rows_path() -> Path:
    return paths.resource_path("utility", TRAINING_ROWS_NAME)


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
    pairs_total: int


class FlowLearner:
    """Stores (features, realized utility) pairs and refits the regressor from them.

    Args:
        db_path: SQLite file (default: ``utility_flow.sqlite`` in the data folder).
        predictor: used to record the prediction made before the answer arrived.
        refit_every: refit after this many new pairs.
        bundle_path: where the refitted model goes (default: the user bundle path).
    """

    def __init__(
        self,
        db_path: Path | None = None,
        *,
        predictor: UtilityPredictor | None = None,
        refit_every: int = 20,
        shipped_rows: Path | None = None,
        bundle_path: Path | None = None,
    ) -> None:
        self.db_path = db_path or paths.data_dir() / "utility_flow.sqlite"
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._predictor = predictor
        self.refit_every = refit_every
        self._shipped_rows = shipped_rows or shipped_rows_path()
        self.bundle_path = bundle_path or user_bundle_path()
        self._lock = threading.Lock()
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=10)

    @property
    def predictor(self) -> UtilityPredictor | None:
        if self._predictor is None:
            try:
                self._predictor = UtilityPredictor.load()
            except Exception as exc:  # noqa: BLE001 - recording must not fail for this
                log.warning("no utility model to record predictions with: %s", exc)
        return self._predictor

    # ------------------------------------------------------------------ recording
    def record(
        self, features: Features | Mapping[str, float], realized_utility: float,
        meta: Mapping[str, Any] | None = None,
    ) -> RecordResult:
        """Store one pair; refit when ``refit_every`` new pairs have accumulated.

        ``meta`` may carry scalar facts (method, provider, model, corrected,
        predicted_utility); strings longer than 64 characters are dropped so document
        text can never end up here by accident.
        """
        features = as_mapping(features)
        meta = dict(meta or {})
        corrected = bool(meta.get("corrected", False))
        predicted = meta.get("predicted_utility")
        if predicted is None and self.predictor is not None:
            predicted = self.predictor.predict(dict(features), corrected=corrected)
        clean_meta = {
            k: v for k, v in meta.items()
            if isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= _META_KEYS_MAX_LEN)
        }
        feats = {k: (None if (isinstance(v, float) and math.isnan(v)) else float(v))
                 for k, v in features.items() if k in ALL_FEATURES and v is not None}
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock, self._connect() as db:
            cur = db.execute(
                "INSERT INTO pairs (created, features, realized, predicted, variant, meta) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (now, json.dumps(feats), float(realized_utility),
                 None if predicted is None else float(predicted),
                 "corrected" if corrected else "plain", json.dumps(clean_meta)),
            )
            pair_id = int(cur.lastrowid)
            total = db.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]
        refitted = False
        if self.pairs_since_refit() >= self.refit_every:
            try:
                self.refit()
                refitted = True
            except ValueError as exc:
                log.warning("refit skipped: %s", exc)
        return RecordResult(pair_id, None if predicted is None else float(predicted),
                            refitted, int(total))

    # ------------------------------------------------------------------ history
    def pairs(self) -> list[dict[str, Any]]:
        with self._connect() as db:
            cur = db.execute(
                "SELECT id, features, realized, predicted, variant, meta FROM pairs ORDER BY id"
            )
            out = []
            for pid, feats, realized, predicted, variant, meta in cur:
                out.append({"id": pid, "features": json.loads(feats), "realized": realized,
                            "predicted": predicted, "variant": variant, "meta": json.loads(meta)})
            return out

    def _state(self, key: str, default: str = "") -> str:
        with self._connect() as db:
            row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def pairs_since_refit(self) -> int:
        last = int(self._state("last_refit_pair_id", "0"))
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM pairs WHERE id > ?", (last,)).fetchone()[0])

    def history_metrics(self) -> CostMetrics:
        """Table-2 metrics of the predictions made on the user's own sends."""
        scored = [p for p in self.pairs() if p["predicted"] is not None]
        return cost_metrics([p["realized"] for p in scored], [p["predicted"] for p in scored])

    # ------------------------------------------------------------------ refitting
    def refit(self) -> dict[str, Any]:
        """Refit on shipped rows + user pairs; save the bundle; return its metrics."""
        pairs = self.pairs()
        rows: list[dict[str, Any]] = list(read_training_rows(self._shipped_rows))
        for p in pairs:
            row = {n: (math.nan if p["features"].get(n) is None else p["features"][n])
                   for n in ALL_FEATURES}
            row.update(target=p["realized"], variant=p["variant"], group=f"user:{p['id']}")
            rows.append(row)
        metrics: dict[str, Any] = {}
        if self.predictor is not None:
            metrics.update(self.predictor.metrics)
        metrics["user_history"] = self.history_metrics().to_json()
        metrics["user_pairs"] = len(pairs)
        bundle = fit_bundle(rows, metrics=metrics, source="shipped rows + learning on the flow")
        save_bundle(bundle, self.bundle_path)
        self._write_card(bundle)
        last_id = pairs[-1]["id"] if pairs else 0
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)",
                       ("last_refit_pair_id", str(last_id)))
        self._predictor = UtilityPredictor(bundle, self.bundle_path)
        log.info("utility model refitted on %d rows (%d of them yours)", len(rows), len(pairs))
        return metrics

    def _write_card(self, bundle: Mapping[str, Any]) -> None:
        m = bundle["metrics"].get("user_history", {})
        lines = [
            "# Utility regressor (refitted on this computer)",
            "",
            f"- Refitted: {bundle['created']} with scikit-learn {bundle['sklearn_version']}",
            f"- Rows: {bundle['n_rows']} ({bundle['metrics'].get('user_pairs', 0)} from your sends)",
            "",
            "## Predictions on your own sends (made before each answer arrived)",
            "",
            "| n | R² | RMSE | Wasted $ | Wasted ε | Failed |",
            "|---|---|---|---|---|---|",
            f"| {m.get('n')} | {m.get('r2')} | {m.get('rmse')} | {m.get('wasted_money_pct')} % "
            f"| {m.get('wasted_epsilon_pct')} % | {m.get('failed_pct')} % |",
            "",
        ]
        (self.bundle_path.parent / "MODEL_CARD.md").write_text("\n".join(lines), encoding="utf-8")
