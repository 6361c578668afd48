"""Learning on the flow, measured: does a provider's own refit beat the shipped prior?

The shipped regressor was fitted on answers of one stand-in cloud model (Qwen2.5-Coder-1.5B,
``cloud_qwen15``). This script plays a user whose provider is another model — Gemma 3
270M (manifest role ``cloud_standin``, a base model on ``/v1/completions``) served by
``python -m llama_cpp.server`` — and sends held-out documents of the utility corpus
(the test split of ``data/utility/split.json``; read only) through the product's send
path: ``SendSession.prepare_send`` + ``execute``, whose :class:`FlowRecorder` computes
the realized utility and hands (features, realized, meta) to the flow learner, exactly as
a real send does. Those pairs are cached (``--cache``); then, for every weight and every
checkpoint n (0, 20, 50, 100 sends), a fresh :class:`FlowLearner` records the first n
stream pairs (``FlowLearner.record``, as the send path calls it), refits that provider's
model, and is scored (Table-2 metrics, :func:`cost_metrics`) on the evaluation sends:
other test-split documents, never in the stream.

    nice -n 19 python -m preflight_eval.flow_experiment --cache /tmp/pf-flow \\
        --sends 0,20,50,100 --weights 1,3,5 --time-limit 40

The transfer to an instruct model the prior never saw, on documents it never read (issue
47): ``--cloud-role slm_qwen05 --docs unseen-email`` (Qwen2.5-Coder-0.5B-Instruct on chat
completions, SpamAssassin e-mails in no split and not in the frozen test set); the table
gives the instant prediction's Failed (the value both faces show) beside the refined one.

Rerunning the same command resumes (cached sends are not repeated). Everything it
writes — the audit log, the learner's files, the cache — lives under ``--cache``; an
empty cache starts from the sends committed in ``data/utility/flow-sends-ROLE.jsonl.gz``
(``gzip -c CACHE/preflight-flow-experiment/sends-ROLE.jsonl`` writes them), so
``--time-limit 0`` reproduces the report on a fresh clone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

log = logging.getLogger("preflight_eval.flow_experiment")

PROVIDER_NAME = "gemma-standin"
MAX_BROKEN = 3          # consecutive failed sends before the run stops (rerun resumes)


@dataclass(frozen=True)
class Item:
    """One planned send: a document under one sanitization setting."""

    role: str            # "eval" | "stream"
    doc_id: str
    setting: Any         # preflight_eval.utility_data.settings.Setting

    @property
    def key(self) -> str:
        return f"{self.doc_id}|{self.setting.key}"


class CapturingFlow:
    """The send path's flow learner for this experiment: keeps each (features, realized,
    meta) the :class:`FlowRecorder` hands over, for the cache."""

    def __init__(self) -> None:
        self.last: tuple[dict[str, float], float, dict[str, Any]] | None = None

    def record(self, features: Mapping[str, float], realized_utility: float,
               meta: Mapping[str, Any] | None = None) -> None:
        self.last = (dict(features), float(realized_utility), dict(meta or {}))


# ----------------------------------------------------------------------- planning
def plan_items(docs: Sequence[Any], detector: Any, kinds: Mapping[str, Any], *,
               n_eval_docs: int, per_doc: int, seed: int) -> list[tuple[Item, Any]]:
    """Evaluation documents first (the first ``n_eval_docs`` in a seeded order), then the
    stream; each document contributes up to ``per_doc`` settings drawn like the data
    set's (without the SLM-corrected variant, which needs a repair before the send)."""
    from preflight_eval.utility_data.settings import DocumentContext, document_settings

    order = sorted(docs, key=lambda d: hashlib.sha256(f"flow|{seed}|{d.doc_id}".encode())
                   .digest())
    out: list[tuple[Item, Any]] = []
    for i, doc in enumerate(order):
        ctx = DocumentContext(doc.doc_id, doc.text, detector.detect(doc.text), seed)
        settings = [s for s in document_settings(ctx, dict(kinds)) if not s.corrected]
        rng = random.Random(f"{seed}|{doc.doc_id}|pick")
        picked = rng.sample(settings, min(per_doc, len(settings)))
        role = "eval" if i < n_eval_docs else "stream"
        out.extend((Item(role, doc.doc_id, s), ctx) for s in picked)
    return out


# ----------------------------------------------------------------------- collecting
def make_session(provider: Any, detector: Any, embedder: Any, flow: Any, home: Path,
                 read_timeout: float) -> Any:
    """A :class:`SendSession` like ``preflight send``'s, to ``provider``, with the
    realized-utility embedder and ``flow`` as its learner."""
    from preflight.core.config import Settings
    from preflight.core.org_policy import OrgPolicy
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.keys import SessionKeyStore
    from preflight.core.send.providers import Timeouts, create_client
    from preflight.core.send.session import SendSession
    from preflight_eval.utility_data.generate import DATASET_ANSWER_TOKENS, _NoStoredKeys

    return SendSession(
        Settings(providers=[provider], default_provider=provider.name,
                 answer_max_tokens=DATASET_ANSWER_TOKENS),      # as the data set's rows
        detector=detector, audit=AuditLog(home / "audit.sqlite3"),
        keystore=_NoStoredKeys(), session_keys=SessionKeyStore(), embedder=embedder,
        flow=flow, org_policy=OrgPolicy.none(),
        client_factory=lambda s: create_client(s, timeouts=Timeouts(read=read_timeout)))


def collect(items: Sequence[tuple[Item, Any]], session: Any, flow: CapturingFlow,
            kinds: Mapping[str, Any], cache: Path, *, max_stream: int,
            deadline: float = float("inf")) -> int:
    """Send every planned item not in ``cache`` yet (evaluation items first, then up to
    ``max_stream`` stream items); append each captured pair to ``cache``. Returns how
    many were sent now."""
    from preflight.core.errors import ProviderError
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.session import Confirmation
    from preflight.core.tasks import SUMMARIZE
    from preflight.core.types import SanitizedText
    from preflight_eval.utility_common import append_jsonl

    done = {r["key"] for r in read_cache(cache)}
    n_stream = sum(1 for r in read_cache(cache) if r["role"] == "stream")
    sent = broken = 0
    for item, ctx in items:
        if item.key in done:
            continue
        if item.role == "stream" and n_stream >= max_stream:
            continue
        if time.monotonic() > deadline:
            log.info("time limit reached; rerun the same command to resume")
            break
        if item.setting.kind == "original":          # the unsanitized send
            sanitized, vault = SanitizedText(ctx.text, "none"), None
        else:
            sanitized, vault = kinds[item.setting.kind].sanitize(ctx, item.setting)
        params = SanitizeParams(seed=item.setting.seed, epsilon=item.setting.epsilon)
        plan = session.prepare_send(ctx.text, session.settings.default_provider,
                                    sanitized.method, params, SUMMARIZE, spans=ctx.spans,
                                    sanitized=sanitized, vault=vault)
        confirm = Confirmation(confirmed=True, overrides=frozenset(f.id for f in plan.findings),
                               resend_acknowledged=True, accept_degraded_detection=True)
        flow.last = None
        started = time.monotonic()
        try:
            result = session.execute(plan, confirm)
            broken = 0
        except ProviderError as err:     # one broken stream: skip it (a rerun retries)
            broken += 1
            log.warning("send %s failed: %s", item.key, err.message)
            if broken >= MAX_BROKEN:
                raise
            continue
        if flow.last is None:
            log.warning("no pair for %s (%s); skipped", item.key, result.learning)
            continue
        features, realized, meta = flow.last
        append_jsonl(cache, {"key": item.key, "role": item.role, "doc_id": item.doc_id,
                             "setting": item.setting.to_json(), "features": features,
                             "realized": realized, "meta": meta, "answer": result.answer,
                             "seconds": round(time.monotonic() - started, 2)})
        done.add(item.key)
        n_stream += item.role == "stream"
        sent += 1
        log.info("%s %s: E = %.3f (%.1f s)", item.role, item.setting.kind, realized,
                 time.monotonic() - started)
    return sent


def unseen_emails(limit: int = 400) -> list[Any]:
    """SpamAssassin e-mails of the corpus's length that no split lists and the frozen test
    set does not hold: real documents the shipped prior never read (by id order)."""
    from preflight_eval.utility_data.corpus import DATA_DIR, MAX_WORDS, MIN_WORDS, Document
    from preflight_eval.utility_dataset import spam_documents

    known: set[str] = set()
    for name in ("split.json", "split-v1.json"):
        for ids in json.loads((DATA_DIR / name).read_text(encoding="utf-8"))["splits"].values():
            known.update(ids)
    known.update(json.loads((DATA_DIR / "test_frozen.json").read_text(encoding="utf-8"))
                 ["doc_ids"])
    from preflight.core import paths

    cache = paths.install_root() / ".cache" / "spam-assassin"
    pool = sorted((d for d in spam_documents(cache, MIN_WORDS, MAX_WORDS)
                   if d["doc_id"] not in known), key=lambda d: d["doc_id"])
    return [Document(d["doc_id"], "email", "email", d["text"]) for d in pool[:limit]]


def committed_sends(cloud_role: str) -> Path:
    """The sends committed with the repository (``data/utility/flow-sends-ROLE.jsonl.gz``):
    a fresh machine reports on them without resending (a cache outside the repository was
    lost with its machine twice)."""
    from preflight_eval.utility_data.corpus import DATA_DIR

    return DATA_DIR / f"flow-sends-{cloud_role}.jsonl.gz"


def seed_cache(cache: Path, committed: Path) -> None:
    """Start an empty ``cache`` from the committed sends (their keys are then not resent)."""
    if cache.exists() or not committed.exists():
        return
    import gzip

    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(gzip.decompress(committed.read_bytes()))


def read_cache(cache: Path) -> list[dict[str, Any]]:
    from preflight_eval.utility_common import read_jsonl

    return read_jsonl(cache)


# ----------------------------------------------------------------------- evaluating
def evaluate(rows: Sequence[Mapping[str, Any]], checkpoints: Sequence[int],
             weights: Sequence[int], *, prior: Any, shipped_rows: Path,
             workdir: Path) -> list[dict[str, Any]]:
    """Failed (and the other Table-2 metrics) on the evaluation pairs after the first n
    stream pairs, for each n and user weight. Each point starts from an empty learner."""
    from preflight.core.utility.flow import FlowLearner, ProviderKey
    from preflight.core.utility.predictor import cost_metrics

    evals = [r for r in rows if r["role"] == "eval"]
    stream = [r for r in rows if r["role"] == "stream"]
    if not evals:
        raise ValueError("no evaluation sends in the cache yet")
    key = ProviderKey.of(evals[0]["meta"])

    def score(n: int, weight: int) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            learner = FlowLearner(Path(tmp) / "flow.sqlite", predictor=prior,
                                  refit_every=10**9, shipped_rows=shipped_rows,
                                  bundle_root=Path(tmp) / "utility", user_weight=weight)
            for r in stream[:n]:
                learner.record(r["features"], r["realized"], r["meta"])
            if n:
                learner.refit(key)
            predictor = learner.predictor_for(key)
            predicted = [predictor.predict(r["features"],
                                           corrected=bool(r["meta"].get("corrected")))
                         for r in evals]
            # the value both faces show today (app.refinement): the instant one
            instant = [predictor.predict_fast(r["features"],
                                              corrected=bool(r["meta"].get("corrected")))
                       for r in evals]
        realized = [r["realized"] for r in evals]
        m = cost_metrics(realized, predicted).to_json()
        return {"sends": n, "user_weight": weight if n else None, **m,
                "failed_instant_pct": round(cost_metrics(realized, instant).failed, 1)}

    # With no sends the prior answers, whatever the weight: measured once.
    out = [score(0, 1)] if 0 in checkpoints else []
    out += [score(n, w) for w in weights for n in checkpoints if 0 < n <= len(stream)]
    return out


def format_table(points: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| sends | weight | n eval | Failed, instant (shown) % | Failed, refined % "
             "| Wasted $ % | Wasted ε % | RMSE | R² |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p in points:
        lines.append(f"| {p['sends']} | {p['user_weight'] or '—'} | {p['n']} "
                     f"| {p.get('failed_instant_pct', '—')} "
                     f"| {p['failed_pct']} | {p['wasted_money_pct']} "
                     f"| {p['wasted_epsilon_pct']} | {p['rmse']} | {p['r2']} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


# ----------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=tempfile.gettempdir(),
                    help="folder for the cached sends, the audit log and the report")
    ap.add_argument("--sends", default="0,20,50,100", help="checkpoints (stream sends)")
    ap.add_argument("--weights", default="1,3,5", help="user weights to compare")
    ap.add_argument("--eval-docs", type=int, default=12, help="documents kept for scoring")
    ap.add_argument("--per-doc", type=int, default=3, help="settings sent per document")
    ap.add_argument("--time-limit", type=float, default=40.0, help="minutes of sending")
    ap.add_argument("--n-threads", type=int, default=2, help="llama.cpp server threads")
    ap.add_argument("--cloud-role", default="cloud_standin", help="manifest role of the "
                    "user's provider (not the one the prior was fitted on)")
    ap.add_argument("--cloud-url", default=None, help="an already running server")
    ap.add_argument("--api-style", choices=("completions", "chat"), default=None,
                    help="the provider's endpoint (default: completions for the base "
                         "cloud_standin, chat for an instruct role)")
    ap.add_argument("--docs", choices=("business-test", "unseen-email"),
                    default="business-test",
                    help="business-test: the business documents of split.json's test split "
                         "(the first runs); unseen-email: SpamAssassin e-mails in no split "
                         "and not in the frozen test set — documents the prior never read")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    root = Path(args.cache).expanduser() / "preflight-flow-experiment"
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["PREFLIGHT_HOME"] = str(home)     # never the user's audit log or refits
    checkpoints, weights = _ints(args.sends), _ints(args.weights)
    cache = root / f"sends-{args.cloud_role}.jsonl"
    seed_cache(cache, committed_sends(args.cloud_role))
    from preflight.core.errors import PreflightError

    try:
        if args.time_limit > 0:     # 0: only report on what the cache holds
            _collect_phase(args, cache, home, max(checkpoints),
                           time.monotonic() + args.time_limit * 60)
    except KeyboardInterrupt:
        log.warning("stopped; rerun the same command to resume")
    except PreflightError as err:
        log.error("%s — %s (rerun the same command to resume)", err.message, err.hint)
    return _report(cache, root, checkpoints, weights)


def _collect_phase(args: argparse.Namespace, cache: Path, home: Path, max_stream: int,
                   deadline: float) -> None:
    from preflight.app.services import build_services
    from preflight.core.config import ProviderSettings, Settings
    from preflight_eval.utility_common import local_cloud_server
    from preflight_eval.utility_data.corpus import load_business, split_of
    from preflight_eval.utility_data.generate import READ_TIMEOUT_S
    from preflight_eval.utility_data.settings import setting_kinds, use_mechanisms

    services = build_services(Settings())        # the defaults, not this user's settings
    use_mechanisms(services.mechanism)
    kinds = setting_kinds()
    docs = (unseen_emails() if args.docs == "unseen-email" else
            [d for d in load_business() if split_of(d.doc_id, args.seed) == "test"])
    detector = services.detector()
    items = plan_items(docs, detector, kinds, n_eval_docs=args.eval_docs,
                       per_doc=args.per_doc, seed=args.seed)
    log.info("%d documents, %d planned sends (%d for evaluation)", len(docs), len(items),
             sum(1 for i, _ in items if i.role == "eval"))
    flow = CapturingFlow()

    def run(url: str) -> None:
        base = url.rstrip("/")
        style = args.api_style or ("completions" if args.cloud_role == "cloud_standin"
                                   else "chat")
        provider = ProviderSettings(name=PROVIDER_NAME, model=args.cloud_role,
                                    base_url=base if base.endswith("/v1") else base + "/v1",
                                    api_style=style)
        session = make_session(provider, detector, services.embedder(), flow, home,
                               READ_TIMEOUT_S)
        n = collect(items, session, flow, kinds, cache, max_stream=max_stream,
                    deadline=deadline)
        log.info("%d new sends cached in %s", n, cache)

    if args.cloud_url:
        run(args.cloud_url)
        return
    with local_cloud_server(services.models.path(args.cloud_role), n_ctx=4096,
                            n_threads=args.n_threads, log_path=home / "server.log",
                            start_timeout=600) as url:
        run(url)


def _report(cache: Path, root: Path, checkpoints: list[int], weights: list[int]) -> int:
    from preflight.core.utility.flow import shipped_rows_path
    from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

    rows = read_cache(cache)
    try:
        points = evaluate(rows, checkpoints, weights,
                          prior=UtilityPredictor.load(shipped_bundle_path()),
                          shipped_rows=shipped_rows_path(), workdir=root)
    except ValueError as exc:
        log.error("%s; rerun to send more", exc)
        return 1
    report = {"cache": str(cache), "sends_cached": len(rows),
              "stream": sum(r["role"] == "stream" for r in rows),
              "eval": sum(r["role"] == "eval" for r in rows), "points": points}
    (root / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"{report['stream']} stream sends, {report['eval']} evaluation sends "
          f"(cache {cache})")
    print(format_table(points))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

