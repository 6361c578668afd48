"""The utility prediction end to end, as a user meets it: `assess`, then a real send.

For held-out documents (TEST split of ``split.json``, taken from the end of the generation
order, so no model was fitted on them and the data generator reaches them last), each
setting a user can pick — the default policy "Protect identifiers", "Everything
detected", pseudonyms, d_X on the whole text at a low, middle and high ε of the
document's calibrated range, and the hybrid at the middle ε — is

1. sanitized by the policy's own mechanism (d_X prepared once per document and policy,
   read at each ε, as the window does) and assessed as ``preflight assess`` does
   (``UtilityAssessor.refine`` with the local SLM; the instant number read from the
   document's utility curve by the CLI's own ``instant_on_curve``);
2. sent through the product's send path to the stand-in cloud LLM (the same
   ``ProductSender`` as the data set: the product's request, streamed) — and the realized
   utility E measured on its restored answer.

Each (document, setting) is one checkpointed row of
``data/utility/e2e-<stand-in>.jsonl.gz`` (resumable). The report scores the stored
features with the bundle shipped now (so it follows retraining without resending),
against the reference the issue measured the first cut by: for each setting, the mean
realized utility of the OTHER documents.

    nice -n 19 python -m preflight_eval.e2e_utility --docs 6 --time-limit 40
    python -m preflight_eval.e2e_utility --report          # no sends, the table only
    python -m preflight_eval.e2e_utility --report --bundle old.joblib   # another bundle
"""

from __future__ import annotations

import argparse
import logging
import math
import signal
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from preflight.core.errors import PreflightError, ProviderError
from preflight.core.utility.predictor import UtilityPredictor, cost_metrics, shipped_bundle_path
from preflight.core.utility.slm_roles import BASE_SLM_ROLE
from preflight_eval.eval_utility import ci_text, reduction_interval
from preflight_eval.utility_data.corpus import (
    DATA_DIR, E2E_RESERVED, SEED, Document, held_out_documents,
)
from preflight_eval.utility_data.rows import rewrite_rows
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.e2e_utility")

#: (name, policy preset, where ε sits in the calibrated range: None / 0 low … 1 high)
SETTINGS: tuple[tuple[str, str, float | None], ...] = (
    ("original", "", None),
    ("identifiers (default)", "identifiers", None),
    ("everything detected", "everything", None),
    ("pseudonym", "pseudonym", None),
    ("d_X whole text, low ε", "dx-all", 0.15),
    ("d_X whole text, middle ε", "dx-all", 0.5),
    ("d_X whole text, high ε", "dx-all", 0.85),
    ("hybrid, middle ε", "identifiers-dx", 0.5),
)
SEED_DX = 7


def _epsilon_at(epsilon_range: tuple[float, float], where: float) -> float:
    lo, hi = epsilon_range
    return float(math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * where))


class EndToEnd:
    def __init__(self, services: Any, sender: Any, path: Path, predictor: UtilityPredictor
                 ) -> None:
        from preflight.core.utility.assess import UtilityAssessor

        self.services = services
        self.sender = sender
        models = services.assessor_models()
        self.assessor = UtilityAssessor(slm=models.slm, original_slm=models.original,
                                        embedder=services.embedder(), predictor=predictor)
        self.slm_role = services.assessor_slm_role()
        self.dx_range = services.dx().epsilon_range
        self.writer = ShardWriter(path)
        self.done = {(r["doc_id"], r["setting"]) for r in read_rows(path)}

    def run(self, docs: Sequence[Document], deadline: float) -> int:
        from preflight_eval.utility_data.settings import Setting

        n = 0
        for doc in docs:
            spans = self.services.detector().detect(doc.text)
            prepared_by: dict[str, tuple[Any, Any]] = {}   # policy → (mechanism, prepared)
            for name, preset, _where in SETTINGS:
                if (doc.doc_id, name) in self.done:
                    continue
                if time.monotonic() > deadline:
                    log.warning("time limit reached; rerun the same command to resume")
                    return n
                t0 = time.monotonic()
                row: dict[str, Any] = {
                    "doc_id": doc.doc_id, "doc_kind": doc.kind, "setting": name,
                    "policy": preset or "none", "bundle": str(self.assessor.predictor.bundle
                                                              .get("created", "")),
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
                try:
                    sanitized, vault = self._assess(doc, spans, name, row, prepared_by)
                    setting = Setting(name, sanitized.method, row.get("epsilon"), SEED_DX)
                    plan = self.sender.plan(doc.text, sanitized, spans, vault, setting)
                    answer = self.sender.send(plan).answer
                    row.update(answer=answer,
                               realized=self.assessor.realized_utility(doc.text, answer))
                except ProviderError:
                    raise
                except PreflightError as err:
                    row["error"] = err.message
                row["seconds"] = round(time.monotonic() - t0, 1)
                self.writer.append(row)
                self.done.add((doc.doc_id, name))
                n += 1
                log.info("%s · %s: predicted %s, realized %s (%.0f s)", doc.doc_id, name,
                         _fmt(row.get("predicted_full")), _fmt(row.get("realized")),
                         row["seconds"])
        return n


    def _assess(self, doc: Document, spans: Sequence[Any], name: str, row: dict[str, Any],
                prepared_by: dict[str, tuple[Any, Any]]) -> tuple[Any, Any]:
        """Sanitize for setting ``name`` and assess as ``preflight assess`` does; the
        features, the three predictions and the payload go into ``row``. Returns the
        sanitized text and its vault (None when nothing is restored)."""
        from preflight.cli.commands.assess import instant_on_curve

        _name, preset, where = next(s for s in SETTINGS if s[0] == name)
        sanitized, vault, prepared = self._sanitize(doc, spans, preset, where, row,
                                                    prepared_by)
        result = self.assessor.refine(doc.text, sanitized, spans)
        placed = instant_on_curve(self.assessor, doc.text, prepared, sanitized, spans,
                                  result, correct=False) if prepared is not None else None
        row.update(features=dict(result.features.as_dict()), slm_role=self.slm_role,
                   predicted_fast=result.predicted_fast, predicted_full=result.predicted,
                   predicted_on_curve=None if placed is None else placed.utility,
                   payload=sanitized.text)
        return sanitized, vault

    def refeature(self, docs: Sequence[Document]) -> dict[str, int]:
        """Recompute every stored send's features and predictions with today's assessor,
        keeping the send itself (its answer and realized E): after a change to how the
        features are computed (e.g. the SLM's answer cap), the report scores what the
        product computes today without sending again. A row whose sanitization no longer
        reproduces its stored payload keeps its old features, and is counted."""
        path = self.writer.path
        by_id = {d.doc_id: d for d in docs}
        stored = read_rows(path)
        counts = {"recomputed": 0, "payload differs": 0, "not re-sanitized": 0}
        out: list[dict[str, Any]] = []
        spans_by: dict[str, Any] = {}
        prepared: dict[str, dict[str, tuple[Any, Any]]] = {}
        for old in stored:
            doc = by_id.get(old["doc_id"])
            if doc is None or old["setting"] == "original" or "payload" not in old:
                counts["not re-sanitized"] += old["setting"] != "original"
                out.append(old)
                continue
            if doc.doc_id not in spans_by:
                spans_by[doc.doc_id] = self.services.detector().detect(doc.text)
            row = dict(old)
            self._assess(doc, spans_by[doc.doc_id], old["setting"], row,
                         prepared.setdefault(doc.doc_id, {}))
            if row["payload"] != old["payload"]:
                counts["payload differs"] += 1
                out.append(old)
                continue
            row["bundle"] = str(self.assessor.predictor.bundle.get("created", ""))
            row["refeatured"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            out.append(row)
            counts["recomputed"] += 1
            log.info("%s · %s: predicted %s (was %s), realized %s", doc.doc_id,
                     old["setting"], _fmt(row.get("predicted_full")),
                     _fmt(old.get("predicted_full")), _fmt(row.get("realized")))
        rewrite_rows(path, out)
        return counts

    def _sanitize(self, doc: Document, spans: Sequence[Any], preset: str, where: float | None,
                  row: dict[str, Any], prepared_by: dict[str, tuple[Any, Any]]
                  ) -> tuple[Any, Any, Any]:
        """(sanitized, vault or None, d_X preparation or None) as the faces make them: a
        policy's own mechanism (one per document: it owns the vault that restores the
        answer, placeholders of the hybrid included), d_X prepared once per document and
        policy and read at each ε, as the window's slider does."""
        from preflight.core.types import SanitizedText

        if not preset:
            return SanitizedText(doc.text, "none"), None, None
        policy = self.services.policy(preset)
        if not policy.uses_dx:
            sanitized, vault = self.services.sanitize(policy, doc.text, spans,
                                                      _params(SEED_DX, None))
            return sanitized, vault, None
        if preset not in prepared_by:
            mech = self.services.mechanism(policy)
            prepared_by[preset] = mech, mech.prepare(doc.text, list(spans),
                                                     _params(SEED_DX, None))
        mech, prepared = prepared_by[preset]
        row["epsilon"] = _epsilon_at(self.dx_range, where if where is not None else 0.5)
        return (prepared.at(row["epsilon"]), mech.vault if getattr(mech, "reversible", False)
                else None, prepared)


def _params(seed: int, epsilon: float | None) -> Any:
    from preflight.core.sanitize.base import SanitizeParams

    return SanitizeParams(seed=seed, epsilon=epsilon)


def row_slm_role(row: dict[str, Any]) -> str:
    """The assessor SLM whose features a stored send holds (SmolLM2's before rows said)."""
    return str(row.get("slm_role", BASE_SLM_ROLE))


def stored_slm_role(path: Path) -> str | None:
    """The SLM of most stored sends (None: no sends): the report's default bundle."""
    import collections

    roles = collections.Counter(row_slm_role(r) for r in read_rows(path)
                                if r["setting"] != "original")
    return roles.most_common(1)[0][0] if roles else None


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{float(v):.3f}"


# ---------------------------------------------------------------- the report
FULL = "full (with the local SLM)"
BASELINE = "ε-only baseline (A + method, same bundle)"


def report(path: Path, predictor: UtilityPredictor,
           data_set_docs: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Scores of the stored sends: the shipped bundle's full and instant predictions
    (recomputed from the stored features), the number the CLI showed, the bundle's
    ε-only baseline model, and the leave-one-document-out setting mean. Only the sends
    whose features came from the bundle's SLM are scored (the others are counted).

    ``data_set_docs``: the document ids of the training data set's rows; the report
    counts the sent documents among them (0, or the sends are not held out)."""
    sent = [r for r in read_rows(path) if r.get("realized") is not None
            and r["setting"] != "original"]
    rows = [r for r in sent if row_slm_role(r) == predictor.slm_role]
    if not rows:
        return {"rows": 0, **({"other_slm": len(sent)} if sent else {})}
    y = np.asarray([float(r["realized"]) for r in rows])
    full = np.asarray([predictor.predict(r["features"]) for r in rows])
    fast = np.asarray([predictor.predict_fast(r["features"]) for r in rows])
    # the acceptance rule's reference: the bundle's own ε-only model (A + method)
    base = np.asarray([predictor.predict_with("baseline", r["features"]) for r in rows]) \
        if predictor.has("baseline") else None
    # rows assessed with this very bundle: what `assess` printed must be what is scored
    same = [i for i, r in enumerate(rows) if r["bundle"] == str(predictor.bundle.get("created"))]
    mismatched = sum(abs(float(rows[i]["predicted_full"]) - full[i]) > 1e-6 for i in same)
    others = np.asarray([np.mean([float(o["realized"]) for o in rows
                                  if o["setting"] == r["setting"]
                                  and o["doc_id"] != r["doc_id"]] or [np.nan])
                         for r in rows])
    ok = ~np.isnan(others)

    def scores(p: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
        from scipy.stats import spearmanr

        m = cost_metrics(y[mask], p[mask]).to_json()
        m["spearman"] = round(float(spearmanr(y[mask], p[mask]).statistic), 3)
        return m

    by_setting = {}
    for name, _preset, _w in SETTINGS[1:]:
        idx = [i for i, r in enumerate(rows) if r["setting"] == name]
        if idx:
            by_setting[name] = {"n": len(idx), "predicted": round(float(full[idx].mean()), 3),
                                "realized": round(float(y[idx].mean()), 3)}
    return {
        "rows": len(rows), "documents": len({r["doc_id"] for r in rows}),
        "slm_role": predictor.slm_role, "other_slm": len(sent) - len(rows),
        "in_data_set": len({r["doc_id"] for r in rows} & data_set_docs),
        "bundle": str(predictor.bundle.get("created", "")),
        "assessed_with_this_bundle": len(same), "printed_differs": mismatched,
        "models": {FULL: scores(full, ok),
                   "instant (no model call)": scores(fast, ok),
                   **({} if base is None else {
                       BASELINE: scores(base, ok)}),
                   "other documents' mean per setting (reference)": scores(others, ok)},
        "by_setting": by_setting,
        "reduction_ci": None if base is None else reduction_interval(
            [{"target": y[i], "group": rows[i]["doc_id"]} for i in np.flatnonzero(ok)],
            base[ok], full[ok]),
    }


def format_report(rep: dict[str, Any]) -> str:
    if not rep.get("rows"):
        if rep.get("other_slm"):
            return (f"{rep['other_slm']} sends, none with features of this bundle's SLM: "
                    "run with --refeature (or --bundle the SLM's bundle)")
        return "no end-to-end sends yet: run without --report first"
    lines = [f"{rep['rows']} sends over {rep['documents']} held-out documents "
             f"({rep.get('in_data_set', 0)} of them in the data set's rows; "
             f"features of {rep.get('slm_role', BASE_SLM_ROLE)}"
             + (f", {rep['other_slm']} sends of another SLM left out" if rep.get("other_slm")
                else "")
             + f"; bundle {rep['bundle']}; {rep['assessed_with_this_bundle']} assessed with "
             f"it, {rep['printed_differs']} of them printed another number)",
             f"{'prediction':<48} {'n':>4} {'RMSE':>6} {'Failed':>7} {'Spearman':>9}"]
    for name, m in rep["models"].items():
        lines.append(f"{name:<48} {m['n']:>4} {m['rmse']:>6.3f} {m['failed_pct']:>6.1f}% "
                     f"{m['spearman']:>9.3f}")
    if rep.get("reduction_ci"):
        m = rep["models"]
        gap = m[BASELINE]["failed_pct"] - m[FULL]["failed_pct"]
        lines.append(f"full vs ε-only baseline: Failed {gap:+.1f} points "
                     f"({ci_text(rep['reduction_ci'], rep['documents'])})")
    lines.append("")
    lines.append(f"{'setting':<28} {'n':>3} {'predicted':>10} {'realized':>9}")
    for name, s in rep["by_setting"].items():
        lines.append(f"{name:<28} {s['n']:>3} {s['predicted']:>10.3f} {s['realized']:>9.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DATA_DIR))
    ap.add_argument("--docs", type=int, default=6, help="held-out documents to send")
    ap.add_argument("--time-limit", type=float, default=40.0, help="minutes; rerun resumes")
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    ap.add_argument("--cloud-url", default=None, help="an already running OpenAI-style server")
    ap.add_argument("--n-threads", type=int, default=1)
    ap.add_argument("--report", action="store_true", help="print the report only")
    ap.add_argument("--refeature", action="store_true",
                    help="recompute the stored sends' features and predictions with today's "
                         "assessor (no sends), e.g. after the SLM's answer cap changed")
    ap.add_argument("--bundle", default=None, metavar="JOBLIB",
                    help="score with this bundle instead of the shipped one (e.g. an older "
                         "one from git, to compare on the same sends)")
    args = ap.parse_args(argv)
    if args.docs > E2E_RESERVED:
        ap.error(f"--docs {args.docs}: at most {E2E_RESERVED}, the test documents the "
                 "generator never sends (E2E_RESERVED in utility_data/corpus.py)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    path = Path(args.out) / f"e2e-{args.cloud_role}.jsonl.gz"
    if args.report:
        # the bundle of the SLM that computed the stored features
        predictor = UtilityPredictor.load(Path(args.bundle) if args.bundle else
                                          shipped_bundle_path(stored_slm_role(path)
                                                              or BASE_SLM_ROLE),
                                          prefer_user=False)
        data_set = Path(args.out) / f"{args.cloud_role}.jsonl.gz"
        print(format_report(report(path, predictor,
                                   frozenset(r["doc_id"] for r in read_rows(data_set)))))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight_eval.utility_common import local_cloud_server
    from preflight_eval.utility_data.generate import (
        ProductSender, corpus_documents, standin_provider,
    )

    services = build_services(Settings())      # the defaults, not this user's settings
    role = services.assessor_slm_role()
    predictor = UtilityPredictor.load(Path(args.bundle) if args.bundle else
                                      shipped_bundle_path(role), prefer_user=False)
    stored = stored_slm_role(path)
    if not args.refeature and stored not in (None, role):
        log.error("the stored sends hold features of %s, the assessor uses %s: run with "
                  "--refeature first, so the report never mixes two SLMs' features",
                  stored, role)
        return 2
    detector = services.detector()
    detector.load()
    if detector.warnings:
        log.error("the detector is degraded: %s", " ".join(detector.warnings))
        return 1
    if args.refeature:
        all_test = held_out_documents(corpus_documents(DATA_DIR, SEED), 10 ** 6)
        counts = EndToEnd(services, None, path, predictor).refeature(all_test)
        log.info("refeatured %s: %s", path, counts)
        print(format_report(report(path, predictor)))
        return 0 if counts["recomputed"] else 1
    docs = held_out_documents(corpus_documents(DATA_DIR, SEED), args.docs)
    deadline = time.monotonic() + args.time_limit * 60
    with tempfile.TemporaryDirectory(prefix="pf-e2e-") as tmp:
        def go(url: str) -> int:
            base = url.rstrip("/")
            provider = standin_provider(base if base.endswith("/v1") else base + "/v1",
                                        args.cloud_role)
            sender = ProductSender(provider, detector, Path(tmp) / "audit.sqlite3")
            n = EndToEnd(services, sender, path, predictor).run(docs, deadline)
            log.info("%d new sends in %s", n, path)
            return 0

        try:
            if args.cloud_url:
                go(args.cloud_url)
            else:
                with local_cloud_server(services.models.path(args.cloud_role), n_ctx=4096,
                                        n_threads=args.n_threads,
                                        log_path=Path(tmp) / "server.log",
                                        start_timeout=600) as url:
                    go(url)
        except KeyboardInterrupt:
            log.warning("stopped; rerun the same command to resume")
            return 130
        except ProviderError as err:
            log.error("the stand-in failed: %s — rerun to resume", err.message)
            return 1
    print(format_report(report(path, predictor)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
