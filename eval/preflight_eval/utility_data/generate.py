"""Generate the utility data set's cloud answers, resumably (first, expensive pass).

For each document of the corpus (:mod:`.corpus`, deterministic random order) and each of
its settings (:mod:`.settings`: the unsanitized text, then a random subset of d_X at
several ε with and without correction, placeholders, pseudonyms, generalization,
redaction), the sanitized payload is sent to the stand-in cloud LLM THROUGH THE PRODUCT'S
SEND PATH: ``SendSession.prepare_send`` builds the exact request (chat completions, the
product's messages and max_tokens, streamed) and ``SendSession.execute`` sends it and
restores placeholders/pseudonyms in the answer, as a real ``preflight send`` does. Every
finding of the re-scan is overridden explicitly (the point here is to send sanitized text
that may still leak) and nothing is learned on the flow.

One row per (document, setting) is appended to ``data/utility/<stand-in role>.jsonl.gz``
as its own gzip member, fsynced: a kill loses at most the row in flight, and the next run
skips every pair already there. Features B, C, D and the target E are computed later from
the stored texts (they depend on the local SLM, which is still being chosen).

    nice -n 19 python -m preflight_eval.utility_data.generate --time-limit 150

The stand-in (default Qwen2.5-Coder-1.5B-Instruct, ``preflight models install
--with-extras``) is served by ``python -m llama_cpp.server`` on 127.0.0.1 for the run,
unless ``--cloud-url`` names another OpenAI-compatible server.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from preflight.core.config import ProviderSettings, Settings
from preflight.core.errors import PreflightError, ProviderError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.audit import AuditLog
from preflight.core.send.keys import KeyStore, SessionKeyStore
from preflight.core.send.providers import Timeouts, create_client
from preflight.core.send.session import Confirmation, SendSession
from preflight.core.tasks import SUMMARIZE, SUMMARY_MAX_TOKENS, Task
from preflight.core.types import DxReport, SanitizedText, SanitizeReport
from preflight_eval.utility_data.corpus import (
    DATA_DIR, E2E_RESERVED, SEED, Document, aclsum_corpus, business_documents, email_corpus,
    generation_order, held_out_documents, load_business, split_for,
)
from preflight_eval.utility_data.newkinds import load_newkinds
from preflight_eval.utility_data.settings import (
    FULL_GRID_DOCS, DocumentContext, Setting, SettingKind, document_settings, setting_kinds,
    shipped_kinds,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.utility_data.generate")

# The product's default read timeout (120 s of silence) is for a real provider; a 1.5B
# model on two cores shared with other jobs can think longer than that before its first
# token. Only the timeout differs from a real send — never the request.
READ_TIMEOUT_S = 1800.0


class _NoStoredKeys(KeyStore):
    """No key in any keyring: the loopback stand-in needs none (resolve_key then says
    "none (local server)"), and a headless machine has no keyring to ask."""

    def get(self, provider: str) -> str | None:
        return None


def standin_provider(base_url: str, model: str) -> ProviderSettings:
    return ProviderSettings(name="utility-standin", base_url=base_url, model=model,
                            api_style="chat")


#: The answer length of every row of the data set (the product's request, but pinned):
#: the rows made since the data set began were sent with this cap, before the product's
#: answers got their own setting (Settings.answer_max_tokens, 800 by default). The task
#: asks for at most three sentences, which rarely reach it; keeping it fixed keeps the
#: realized utilities comparable across the whole data set.
DATASET_ANSWER_TOKENS = SUMMARY_MAX_TOKENS


class ProductSender:
    """Sends one payload the way ``preflight send`` does, to one provider."""

    def __init__(self, provider: ProviderSettings, detector: Any, audit_path: Path,
                 read_timeout: float = READ_TIMEOUT_S) -> None:
        self.provider = provider
        self.session = SendSession(
            Settings(providers=[provider], default_provider=provider.name,
                     answer_max_tokens=DATASET_ANSWER_TOKENS),
            detector=detector, audit=AuditLog(audit_path), keystore=_NoStoredKeys(),
            session_keys=SessionKeyStore(),
            client_factory=lambda s: create_client(s, timeouts=Timeouts(read=read_timeout)),
        )

    def plan(self, original: str, sanitized: SanitizedText, spans: Any, vault: Any,
             setting: Setting, task: Task = SUMMARIZE) -> Any:
        params = SanitizeParams(seed=setting.seed, epsilon=setting.epsilon)
        return self.session.prepare_send(original, self.provider, sanitized.method, params,
                                         task, spans=spans, sanitized=sanitized,
                                         vault=vault)

    def send(self, plan: Any) -> Any:
        confirm = Confirmation(confirmed=True, overrides=frozenset(f.id for f in plan.findings),
                               resend_acknowledged=True, accept_degraded_detection=True)
        return self.session.execute(plan, confirm, learn=False)


def corpus_documents(data_dir: Path, seed: int) -> list[Document]:
    business = load_business(data_dir) or business_documents(seed=seed)
    return generation_order(aclsum_corpus() + email_corpus(seed=seed) + business, seed)


def frozen_documents(data_dir: Path, seed: int) -> list[Document]:
    """The frozen test set's documents (:mod:`.newkinds`), kinds interleaved."""
    return generation_order(load_newkinds(data_dir), seed)


def document_task(doc: Document, setting: Setting) -> Task:
    """What the cloud is asked for ``setting`` on ``doc``: a summary, or the document's
    recorded question (through the product's question path, sanitized like the text)."""
    if setting.task == "question":
        return Task("question", question=doc.questions[0].question)
    return SUMMARIZE


def document_tasks(doc: Document) -> tuple[str, ...]:
    return ("summarize", "question") if doc.questions else ("summarize",)


def visiting_order(docs: list[Document], first_split: str | None = None
                   ) -> list[tuple[int, Document]]:
    """(position in the generation order, document) in the order the generator visits them.

    The position, never the visit, decides a document's draw of settings (the lighter draw
    from :data:`FULL_GRID_DOCS` on), so visiting in another order changes no row that a
    run in generation order would make. ``first_split``: that split's documents first,
    each part in generation order — to complete the held-out test split before the rest.
    The end-to-end check's documents (:data:`E2E_RESERVED`) are never visited: they stay
    unseen by every bundle fitted on the data set."""
    reserved = {d.doc_id for d in held_out_documents(docs, E2E_RESERVED)}
    visits = [(i, d) for i, d in enumerate(docs) if d.doc_id not in reserved]
    if first_split:
        visits.sort(key=lambda v: split_for(v[1].doc_id) != first_split)
    return visits


def children_cpu_seconds() -> float:
    """CPU seconds of this process's live children (the llama.cpp server)."""
    me, total = os.getpid(), 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system + children_cpu_seconds()


class Generator:
    def __init__(self, args: argparse.Namespace, sender: ProductSender, detector: Any,
                 kinds: dict[str, SettingKind], corrector: Any, standin: dict[str, Any]) -> None:
        self.args = args
        self.sender = sender
        self.detector = detector
        self.kinds = kinds
        self.corrector = corrector
        self.standin = standin
        # the frozen test set's rows go to a file of their own, which no feature pass,
        # training or report reads (data/utility/test_frozen.json)
        prefix = "frozen-" if getattr(args, "frozen", False) else ""
        self.path = Path(args.out) / f"{prefix}{args.cloud_role}.jsonl.gz"
        self.writer = ShardWriter(self.path)
        if self.writer.repaired_bytes:
            log.warning("dropped a torn last row (%d bytes) left by a killed run",
                        self.writer.repaired_bytes)
        self.done = {(r["doc_id"], r["key"]) for r in read_rows(self.path)}
        self.deadline = time.monotonic() + args.time_limit * 60
        self.started = time.monotonic()
        self.cpu0 = cpu_now()
        self.n_new = 0

    def run(self, docs: list[Document]) -> None:
        log.info("%d documents, %d rows already in %s", len(docs), len(self.done), self.path)
        frozen = getattr(self.args, "frozen", False)
        # the frozen set: every document in generation order, every shipped kind on each
        visits = list(enumerate(docs)) if frozen else visiting_order(docs, self.args.first_split)
        for position, doc in visits[: self.args.max_docs or None]:
            ctx = DocumentContext(doc.doc_id, doc.text, self.detector.detect(doc.text),
                                  self.args.seed,
                                  light=not frozen and position >= FULL_GRID_DOCS)
            for setting in document_settings(ctx, self.kinds, document_tasks(doc)):
                if (doc.doc_id, setting.key) in self.done:
                    continue
                if time.monotonic() > self.deadline:
                    log.warning("time limit reached; rerun the same command to resume")
                    return
                self.row(doc, ctx, setting)

    def row(self, doc: Document, ctx: DocumentContext, setting: Setting) -> None:
        t0, c0 = time.monotonic(), cpu_now()
        row: dict[str, Any] = {
            "doc_id": doc.doc_id, "doc_kind": doc.kind, "subkind": doc.subkind,
            "split": "frozen" if getattr(self.args, "frozen", False) else split_for(doc.doc_id),
            "key": setting.key,
            "setting": setting.to_json(), "standin": self.standin,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            if setting.kind == "original":
                sanitized, vault = SanitizedText(doc.text, "none"), None
                row["text"] = doc.text
            else:
                sanitized, vault = self.kinds[setting.kind].sanitize(ctx, setting)
            if setting.corrected:
                row["sanitized"] = sanitized.text
                row["corrector"] = self.args.corrector_name
                repaired = self.corrector(sanitized.text)
                sanitized = SanitizedText(repaired, sanitized.method, (), SanitizeReport(
                    dx=DxReport(setting.epsilon) if setting.epsilon is not None else None))
            task = document_task(doc, setting)
            if task.kind == "question":
                row.update(question=task.question, reference=doc.questions[0].reference)
            plan = self.sender.plan(doc.text, sanitized, ctx.spans, vault, setting, task)
            row["payload"] = sanitized.text
            row["request_sha256"] = hashlib.sha256(plan.payload).hexdigest()
            row["findings"] = len(plan.findings)
            result = self.sender.send(plan)
            if not result.answer and result.finish_reason is None:
                # the server dropped the stream (another client's request interrupts it):
                # nothing to learn from; not recorded, so the next run sends it again
                log.warning("%s %s: the stand-in's stream ended without an answer; not "
                            "recorded (the next run retries)", doc.doc_id, setting.key)
                return
            row.update(answer=result.answer, answer_raw=result.answer_raw,
                       finish_reason=result.finish_reason, input_tokens=result.input_tokens,
                       output_tokens=result.output_tokens)
        except ProviderError:
            raise          # the stand-in is down or timed out: stop, rerun resumes
        except PreflightError as err:   # e.g. a text d_X cannot tokenize losslessly
            row["error"] = err.message
            log.warning("%s %s: %s (recorded, not retried)", doc.doc_id, setting.key, err.message)
        row["seconds"] = round(time.monotonic() - t0, 2)
        row["cpu_seconds"] = round(cpu_now() - c0, 2)
        self.writer.append(row)
        self.done.add((doc.doc_id, setting.key))
        self.n_new += 1
        hours = (time.monotonic() - self.started) / 3600
        log.info("row %d (%s %s): %.0f s, %.0f CPU s | %.1f rows/h, %.0f CPU s/row, %d in file",
                 self.n_new, doc.doc_id, setting.key, row["seconds"], row["cpu_seconds"],
                 self.n_new / hours if hours else 0.0,
                 (cpu_now() - self.cpu0) / self.n_new, len(self.done))


def _corrector(model_path: Path | None, n_threads: int) -> Any:
    """The product's grammar repair (UtilityAssessor's "corrected" step) with the local SLM."""
    from preflight.core.utility.assess import correction_task
    from preflight.runtime.slm import LocalSLM

    slm = LocalSLM(model_path, n_threads=n_threads)

    def repair(text: str) -> str:
        return slm.run(correction_task(text), text) or text

    return repair


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DATA_DIR))
    ap.add_argument("--time-limit", type=float, default=60.0, help="minutes; rerun resumes")
    ap.add_argument("--max-docs", type=int, default=0, help="stop after N documents (0: all)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--cloud-role", default="cloud_qwen15", help="manifest role of the stand-in")
    ap.add_argument("--cloud-url", default=None, help="an already running OpenAI-style server")
    ap.add_argument("--n-threads", type=int, default=2, help="llama.cpp threads (server, SLM)")
    ap.add_argument("--corrector-role", default="slm", help="manifest role of the repairing SLM")
    ap.add_argument("--frozen", action="store_true",
                    help="send the frozen test set (data/utility/newkinds.jsonl.gz) under "
                         "every shipped setting kind, into frozen-<cloud role>.jsonl.gz")
    ap.add_argument("--first-split", choices=("train", "calibration", "test"), default=None,
                    help="visit this split's documents first (e.g. test: complete the "
                         "held-out split); a document's settings do not depend on it")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    from preflight.app.services import build_services
    from preflight.core.config import Settings

    from preflight_eval.utility_data.settings import use_mechanisms

    services = build_services(Settings())      # the defaults, not this user's settings
    use_mechanisms(services.mechanism)
    manager = services.models
    spec = manager.spec(args.cloud_role)
    standin = {"role": args.cloud_role, "name": spec.name, "sha256": spec.sha256,
               "sampling": "server defaults (the product sends no sampling parameters)"}
    corrector_spec = manager.spec(args.corrector_role)
    args.corrector_name = corrector_spec.name
    corrector = _corrector(manager.path(args.corrector_role), args.n_threads)
    detector = services.detector()
    detector.load()
    if detector.warnings:   # a degraded detector would make rows no real send produces
        log.error("the detector is degraded: %s", " ".join(detector.warnings))
        return 1
    docs = (frozen_documents if args.frozen else corpus_documents)(Path(args.out), args.seed)
    with tempfile.TemporaryDirectory(prefix="pf-utility-gen-") as tmp:
        return against_standin(
            manager.path(args.cloud_role), args.n_threads, Path(tmp),
            lambda url: _run(args, url, detector, corrector, standin, docs, Path(tmp)),
            args.cloud_url)


def against_standin(model_path: Path, n_threads: int, tmp: Path, job: Callable[[str], int],
                    cloud_url: str | None = None) -> int:
    """``job(url)``'s exit code, against ``cloud_url`` or a llama.cpp server started for
    the run (its log in ``tmp``); a stop (Ctrl-C, SIGTERM) or a failing stand-in ends it
    with a message that a rerun resumes."""
    from preflight_eval.utility_common import local_cloud_server

    try:
        if cloud_url:
            return job(cloud_url)
        with local_cloud_server(model_path, n_ctx=4096, n_threads=n_threads,
                                log_path=tmp / "server.log", start_timeout=600) as url:
            return job(url)
    except KeyboardInterrupt:
        log.warning("stopped; rerun the same command to resume")
        return 130
    except ProviderError as err:
        log.error("the stand-in failed: %s — rerun the same command to resume", err.message)
        return 1


def _run(args: argparse.Namespace, url: str, detector: Any, corrector: Any,
         standin: dict[str, Any], docs: list[Document], tmp: Path) -> int:
    base = url.rstrip("/")
    provider = standin_provider(base if base.endswith("/v1") else base + "/v1", args.cloud_role)
    sender = ProductSender(provider, detector, tmp / "audit.sqlite3")
    gen = Generator(args, sender, detector, shipped_kinds() if args.frozen else setting_kinds(),
                    corrector, standin)
    gen.run(docs)
    log.info("done: %d new rows, %d rows in %s", gen.n_new, len(gen.done), gen.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
