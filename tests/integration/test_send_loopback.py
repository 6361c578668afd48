"""The send path end to end on loopback, with the real detector, operators, vault,
stream restorer, tokenizer and CLI:

- `preflight send` against llama-cpp-python's OpenAI-compatible server (SmolLM2):
  a restored answer and an audit record (chat and completions styles, streaming);
- a `preflight send` process killed mid-stream leaves the record of what was sent;
- leak test: over a corpus of PII-bearing documents, no detected direct-identifier
  value appears in any byte sent (request line, headers, body), and a send without
  confirmation never reaches the server.
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
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.audit import AuditLog
from preflight.core.send.session import Confirmation, SendBlocked, SendSession
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import Category

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
    assert row["answer_restored"] == result["answer"]


@pytest.mark.parametrize("style", ["chat", "completions"])
def test_session_streams_from_llama_server(llama_server, tmp_path, style):
    provider = ProviderSettings("local", llama_server, "smollm2", api_style=style)
    session = SendSession(Settings(providers=[provider]), audit=AuditLog(tmp_path / "a.db"))
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


# --- leak test -------------------------------------------------------------------------


def corpus(n: int = 24) -> list[str]:
    from faker import Faker

    fake = Faker("en_US")
    Faker.seed(1234)
    docs = []
    for _ in range(n):
        a, b = fake.name(), fake.name()
        docs.append(
            f"Dear {a},\n\nthank you for your call on {fake.date_this_year()}. As agreed, "
            f"{b} from {fake.company()} will contact you at {fake.free_email()} or on "
            f"{fake.phone_number()}. Your card {fake.credit_card_number('visa16')} was "
            f"refunded and your SSN {fake.ssn()} is on file. The contract is attached.\n\n"
            f"Regards,\n{b}\n{fake.street_address()}, {fake.city()}"
        )
    return docs


@pytest.fixture(scope="module")
def detector():
    from preflight.core.pii.detector import PiiDetector

    return PiiDetector()


@pytest.mark.parametrize("method", ["placeholder", "redact", "pseudonym"])
def test_no_detected_identifier_leaves_the_machine(capture, detector, tmp_path, method):
    provider = ProviderSettings("cap", capture.url, "m")
    session = SendSession(Settings(providers=[provider]), detector=detector,
                          audit=AuditLog(tmp_path / "a.db"))
    checked = sent = 0
    for i, text in enumerate(corpus()):
        values = {text[s.start:s.end] for s in detector.detect(text)
                  if s.category in (Category.DIRECT_IDENTIFIER, Category.SECRET)}
        assert values, "the corpus must carry direct identifiers"
        plan = session.prepare_send(text, "cap", method, SanitizeParams(seed=i), SUMMARIZE)
        before = len(capture.requests)
        # Without confirmation nothing reaches the server.
        with pytest.raises(SendBlocked):
            session.execute(plan, Confirmation(confirmed=False))
        assert len(capture.requests) == before
        try:
            session.execute(plan, Confirmation(True, resend_acknowledged=True), learn=False)
            sent += 1
        except SendBlocked:
            # A residual identifier blocks the send: also nothing may have left.
            assert plan.blocking
            assert len(capture.requests) == before
            continue
        wire = capture.requests[-1].all_bytes
        for value in values:
            for form in (value, json.dumps(value, ensure_ascii=False)[1:-1]):
                assert form.encode("utf-8") not in wire, f"{value!r} left the machine"
        checked += len(values)
    assert sent >= len(corpus()) // 2 and checked > 0
