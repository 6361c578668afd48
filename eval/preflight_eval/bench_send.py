"""Benchmarks and the leak check of the send path. Prints medians and counts.

    python -m preflight_eval.bench_send [--runs 7] [--docs 24] [--seed 1234] [--llama]

- ``prepare_send``: real detector (Presidio + spaCy), placeholder operator, SmolLM2
  tokenizer, re-scan, ledger — on a ~1,000-word document (median of ``--runs``; the first
  call, which loads the models, is reported separately).
- ``execute``: audit write before sending, SSE streaming of 200 deltas from a loopback
  capture server, placeholder restoration, audit updates (median).
- leak check (preflight_eval/leak_check.py): seeded Faker letters carrying names, e-mails,
  phones, cards, SSNs, IBANs, API keys and street addresses; per method, how many sends
  went out, how many the re-scan blocked, and how many of the values the generator
  inserted (ground truth, per kind) were found in the bytes the server received — whole,
  and apart from those, in part (a given name or surname alone, 4 digits of a number in a
  row, 8 characters of a key, an e-mail's local part).
- ``--llama``: time to first restored chunk and total time of a summary from
  llama-cpp-python's server running SmolLM2 on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class _Capture:
    """Loopback OpenAI-style SSE server recording request bytes."""

    def __init__(self, deltas: list[str]) -> None:
        self.requests: list[tuple[bytes, bytes]] = []   # (request line + headers, body)
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # noqa: ANN002
                pass

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                head = (self.requestline + "\r\n" + str(self.headers)).encode("latin-1")
                outer.requests.append((head, body))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for d in deltas + [None]:
                    choice = {"index": 0, "delta": {"content": d} if d else {},
                              "finish_reason": None if d else "stop"}
                    data = b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                data = b"data: [DONE]\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _long_document(words: int = 1000) -> str:
    from preflight_eval.leak_check import letters

    parts, n = [], 0
    for letter in letters(40, seed=7):
        parts.append(letter.text)
        n += len(letter.text.split())
        if n >= words:
            break
    return "\n\n".join(parts)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1234, help="Faker seed of the leak letters")
    ap.add_argument("--llama", action="store_true", help="also time a real llama.cpp server")
    args = ap.parse_args(argv)

    home = tempfile.mkdtemp(prefix="preflight-bench-send-")
    os.environ["PREFLIGHT_HOME"] = home   # never the user's audit log or settings

    from preflight.app.services import build_services
    from preflight.core.config import ProviderSettings, Settings
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.session import Confirmation, SendSession
    from preflight.core.tasks import SUMMARIZE
    from preflight_eval.leak_check import KINDS, check_method, letters

    services = build_services(Settings())   # the defaults: as the app builds everything
    models = services.models
    print(f"models: ner {models.spec('ner').name} ({models.path('ner')}), token counts by "
          f"{models.spec('slm').name}")
    detector = services.detector()
    server = _Capture([f"<PERSON_1> w{i} " for i in range(200)])
    provider = ProviderSettings("cap", server.url, "m", price_input_per_mtok=0.15,
                                price_output_per_mtok=0.6)
    session = SendSession(Settings(providers=[provider]), detector=detector,
                          audit=AuditLog(Path(home) / "audit.sqlite3"),
                          token_counter=services.token_counter())
    doc = _long_document()
    print(f"document: {len(doc.split())} words, {len(doc)} characters")

    t0 = time.perf_counter()
    plan = session.prepare_send(doc, "cap", "placeholder", SanitizeParams(seed=0), SUMMARIZE)
    print(f"prepare_send, first call (loads detector + tokenizer): "
          f"{(time.perf_counter() - t0) * 1000:.0f} ms; token count by {plan.cost.token_method}")
    prep = []
    for i in range(args.runs):
        t = time.perf_counter()
        plan = session.prepare_send(doc, "cap", "placeholder", SanitizeParams(seed=i), SUMMARIZE)
        prep.append(time.perf_counter() - t)
    print(f"prepare_send median over {args.runs}: {_ms(prep)} "
          f"({plan.cost.input_tokens} input tokens, {len(plan.findings)} findings, "
          f"{len(plan.blocking)} blocking)")

    # Timing only: the re-scan's blocking findings are overridden as a user would, one by one.
    confirm = Confirmation(True, overrides=frozenset(f.id for f in plan.blocking),
                           resend_acknowledged=True)
    execs = []
    for _ in range(args.runs):
        t = time.perf_counter()
        session.execute(plan, confirm, learn=False)
        execs.append(time.perf_counter() - t)
    print(f"execute (audit + 200-delta SSE stream + restore) median over {args.runs}: "
          f"{_ms(execs)}")
    server.close()

    print(f"\nleak check: {args.docs} Faker letters (seed {args.seed}), each carrying "
          f"{', '.join(KINDS)} (two names); per method, the inserted values (ground truth) "
          "searched in every byte the capture server received (see "
          "preflight_eval/leak_check.py); detector with the installed ner model, default "
          "settings, SUMMARIZE task:")
    corpus = letters(args.docs, seed=args.seed)
    leaked_total = partial_total = 0
    for method in ("placeholder", "pseudonym", "redact", "mask", "generalize"):
        cap = _Capture(["ok"])
        prov = ProviderSettings("cap", cap.url, "m")
        s = SendSession(Settings(providers=[prov]), detector=detector,
                        audit=AuditLog(Path(home) / f"leak-{method}.sqlite3"))
        try:
            report = check_method(s, "cap", method, corpus, lambda: list(cap.requests))
        finally:
            cap.close()
        leaked_total += sum(report.leaked.values())
        partial_total += sum(report.partial.values())
        print(f"  {report.line()}")
        for kind, value in report.leaks:
            print(f"      leaked {kind}: {value!r}")
        for kind, value, parts in report.partials:
            print(f"      in part {kind}: {value!r} -> {', '.join(map(repr, parts))}")
    print(f"leaked values over all methods: whole {leaked_total}, in part {partial_total}")

    if args.llama:
        _bench_llama(session)
    return 0


def _bench_llama(session) -> None:  # type: ignore[no-untyped-def]
    from preflight.core.config import ProviderSettings
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.session import Confirmation
    from preflight.core.tasks import SUMMARIZE
    from preflight.runtime.models import ModelManager
    from preflight_eval.leak_check import letters
    from preflight_eval.utility_common import local_cloud_server

    with local_cloud_server(ModelManager().path("slm"), n_ctx=2048) as base:
        prov = ProviderSettings("llama", base + "/v1", "smollm2")
        doc = letters(1, seed=99)[0].text
        firsts, totals = [], []
        for i in range(3):
            plan = session.prepare_send(doc, prov, "placeholder", SanitizeParams(seed=i),
                                        SUMMARIZE)
            first: list[float] = []
            t = time.perf_counter()
            session.execute(plan, Confirmation(True, resend_acknowledged=True),
                            on_chunk=lambda c: first or first.append(time.perf_counter() - t),
                            learn=False)
            totals.append(time.perf_counter() - t)
            firsts.append(first[0] if first else float("nan"))
        print(f"\nllama-cpp-python server, SmolLM2-135M, summary of a {len(doc.split())}-word "
              f"letter: first restored chunk {_ms(firsts)}, whole answer {_ms(totals)} "
              f"(median of 3)")


if __name__ == "__main__":
    raise SystemExit(main())
