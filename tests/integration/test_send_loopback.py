"""The send path end to end on loopback, with the real detector, operators, vault,
stream restorer, tokenizer and CLI:

- `preflight send` against llama-cpp-python's OpenAI-compatible server (SmolLM2):
  a restored answer and an audit record (chat and completions styles, streaming);
- a `preflight send` process killed mid-stream leaves the record of what was sent;
- leak test: over a corpus of Faker letters, none of the direct identifiers and secrets
  the generator inserted (ground truth, not re-detected) appears in any byte sent
  (request line and URL, headers, body; JSON-unescaped; digits-only and case-folded
  variants), and a send without confirmation, or blocked by the re-scan, never reaches
  the server.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _loopback import Reply
from _models import require_model
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.audit import AuditLog
from preflight.core.send.session import Confirmation, SendSession
from preflight.core.tasks import Task

pytestmark = pytest.mark.slow

DOC = (
    "Meeting notes, 14 March 2024. Sarah Johnson (sarah.johnson@gmail.com, +1 415 555 0198) "
    "told Michael Brown that the Denver office will close in June. Michael Brown agreed to "
    "move the twelve engineers to the Austin site and to send the budget to Sarah Johnson "
    "by Friday."
)


def run_cli(args: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "preflight", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def add_provider(env: dict, name: str, url: str, style: str = "chat") -> None:
    proc = run_cli(["providers", "add", name, "--base-url", url, "--model", "smollm2",
                    "--api-style", style, "--price-in", "0.15", "--price-out", "0.6"], env)
    assert proc.returncode == 0, proc.stderr


def test_cli_send_to_llama_server_restores_and_audits(llama_server, cli_env, tmp_path):
    doc = tmp_path / "notes.txt"
    doc.write_text(DOC, encoding="utf-8")
    add_provider(cli_env, "local", llama_server)
    proc = run_cli(["send", str(doc), "--method", "placeholder", "--provider", "local",
                    "--yes", "--json"], cli_env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    result, plan = out["result"], out["plan"]
    assert result["answer"].strip(), "the server returned an empty answer"
    payload = plan["payload"]
    for value in ("Sarah Johnson", "sarah.johnson@gmail.com", "Michael Brown"):
        assert value not in payload
    assert "<PERSON_1>" in payload
    # Every placeholder the model echoed is restored in the displayed answer.
    assert "<PERSON_" not in result["answer"] and "<EMAIL_ADDRESS_" not in result["answer"]
    if "<PERSON_1>" in result["answer_raw"]:
        assert "Sarah Johnson" in result["answer"] or "Michael Brown" in result["answer"]
    assert plan["cost"]["token_method"].startswith("tokenizer: SmolLM2")
    assert result["learning"] == "recorded"
    assert result["realized_utility"] is not None and -1 <= result["realized_utility"] <= 1
    audit = AuditLog(Path(cli_env["PREFLIGHT_HOME"]) / "data" / "audit.sqlite3")
    row = audit.get(result["record_id"])
    assert row["status"] == "done" and row["payload"].decode() == payload
    # storing originals is off by default: the log keeps the answer as received only
    assert row["answer_restored"] is None and row["answer_raw"] == result["answer_raw"]


@pytest.mark.parametrize("style", ["chat", "completions"])
def test_session_streams_from_llama_server(llama_server, detector, tmp_path, style):
    provider = ProviderSettings("local", llama_server, "smollm2", api_style=style)
    session = SendSession(Settings(providers=[provider]), detector=detector,
                          audit=AuditLog(tmp_path / "a.db"))
    plan = session.prepare_send(DOC, "local", "placeholder", SanitizeParams(seed=3),
                                Task("question", question="Which office will close?",
                                     max_tokens=32))
    chunks: list[str] = []
    result = session.execute(plan, Confirmation(True), on_chunk=chunks.append, learn=False)
    assert len(chunks) > 3, "the answer did not arrive as a stream"
    assert "".join(chunks) == result.answer
    assert result.output_tokens > 0 and result.finish_reason in ("stop", "length")


def test_killed_mid_stream_keeps_record_of_what_was_sent(capture, cli_env, tmp_path):
    doc = tmp_path / "notes.txt"
    doc.write_text(DOC, encoding="utf-8")
    add_provider(cli_env, "slow", capture.url)
    capture.script(Reply(deltas=[f"word{i} " for i in range(200)], delay=0.1))
    proc = subprocess.Popen(
        [sys.executable, "-m", "preflight", "send", str(doc), "--method", "placeholder",
         "--yes", "--no-learn"],
        env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        first = b""
        while not first:   # the answer started streaming to stdout
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            first = proc.stdout.read1(64)
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    (sent,) = capture.requests
    db = sqlite3.connect(Path(cli_env["PREFLIGHT_HOME"]) / "data" / "audit.sqlite3")
    rows = db.execute("SELECT status, payload, answer_raw, delivered FROM sends").fetchall()
    assert len(rows) == 1
    status, payload, answer_raw, delivered = rows[0]
    assert status == "streaming" and delivered == 1
    assert payload == sent.body                     # the exact bytes that left
    assert (answer_raw or "").startswith("word0 ")  # the part that arrived before the kill


# --- leak test ---------------------------------------------------------------------------
#
# Conditions: 24 seeded Faker letters (preflight_eval.leak_check.letters, seed 1234) and
# the first 10 of seed 99 (names with a qualification: "Dear Desiree Jacobson MD," leaked
# with every method before names.py knew suffixes; "Justin Bennett MD"), each
# carrying two names, an e-mail, a phone, a Visa card, an SSN, an IBAN, an API key and a
# street address; the installed ner model; default detection settings; SUMMARIZE task.
# What is counted is described in preflight_eval/leak_check.py; the same numbers come from
# `python -m preflight_eval.bench_send --docs 24` and `--docs 10 --seed 99` (docs/BENCHMARKS.md).

LEAK_DOCS = 24 + 10

# Zero leaks: every inserted direct identifier and secret (68 names, 34 each of e-mails,
# phones, cards, SSNs, IBANs, API keys and street addresses) stays home. Issue 11 measured
# 7 Faker street addresses with USPS suffixes the recognizer did not know (Pines, Groves,
# Tunnel, Loop...) leaving the machine; tests/core/pii/test_recognizers_addresses.py now
# covers the full USPS suffix list.
# Sends the re-scan blocked (nothing left): pseudonym blocks 1 letter where a generated
# pseudonym is re-detected as a person ("Parks Parks").
MIN_SENT = {"placeholder": LEAK_DOCS, "redact": LEAK_DOCS, "pseudonym": LEAK_DOCS - 1}


@pytest.fixture(scope="module")
def detector():
    from preflight.core.pii.detector import PiiDetector

    return PiiDetector(nlp_model_path=require_model("ner"))


@pytest.fixture(scope="module")
def letters():
    from preflight_eval.leak_check import letters

    return letters(24) + letters(10, seed=99)


@pytest.mark.parametrize("method", ["placeholder", "redact", "pseudonym"])
def test_no_inserted_identifier_leaves_the_machine(capture, detector, letters, tmp_path,
                                                   method):
    from preflight_eval.leak_check import check_method

    provider = ProviderSettings("cap", capture.url, "m")
    session = SendSession(Settings(providers=[provider]), detector=detector,
                          audit=AuditLog(tmp_path / "a.db"))
    report = check_method(session, "cap", method, letters,
                          lambda: [(r.raw_head, r.body) for r in capture.requests])
    print(report.line())
    assert report.unconfirmed_reached == 0, "a send without confirmation reached the server"
    assert report.blocked_reached == 0, "a send blocked by the re-scan reached the server"
    assert report.sent + report.blocked == LEAK_DOCS
    # A method that stopped replacing a kind would show here as blocked sends (the re-scan
    # catches it), and as leaks once the re-scan misses it too.
    assert report.sent >= MIN_SENT[method], report.line()
    assert sum(report.checked.values()) == 9 * report.sent
    leaked = sorted({(kind, value) for kind, value in report.leaks})
    assert leaked == [], f"{report.line()}: {leaked}"
