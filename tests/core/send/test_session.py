"""prepare_send → SendPlan → execute: confirmation rules, audit before sending, streamed
restoration, learning on the flow, keep-local. Fakes for detector/embedder/flow; a real
HTTP server on loopback."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import pytest

from _fakes import (
    FakeCounter, FakeDetector, FakeEmbedder, FakeFlow, FakePlaceholder, FakeRestorer,
    FakeVault,
)
from _loopback import Reply
from preflight.core.config import ProviderSettings, Settings
from preflight.core.errors import ProviderError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.audit import AuditLog
from preflight.core.send.keys import KeyStore, key_account
from preflight.core.send.masking import mask_value
from preflight.core.send.session import Confirmation, SendBlocked, SendSession, finding_id
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import DxReport, SanitizeReport

DOC = ("Alice Martin (alice.martin@corp.example, +33 6 12 34 56 78) asked Bob Stone in Lyon "
       "to review the Q3 budget before Friday. Alice Martin will present it.")
YES = Confirmation(confirmed=True)


def make(server, tmp_path, *, embedder=None, flow=None, slm=None, store_original=False,
         prices=(0.0, 0.0), **kw):
    provider = ProviderSettings("loop", server.url, "m-1", price_input_per_mtok=prices[0],
                                price_output_per_mtok=prices[1])
    settings = Settings(providers=[provider], default_provider="loop",
                        store_original_in_audit=store_original)
    session = SendSession(
        settings, detector=FakeDetector(), audit=AuditLog(tmp_path / "audit.sqlite3"),
        token_counter=FakeCounter(), embedder=embedder or FakeEmbedder(),
        flow=flow if flow is not None else FakeFlow(), slm=slm,
        restorer_factory=FakeRestorer, **kw,
    )
    return session


def placeholder_plan(session, text=DOC, task=SUMMARIZE):
    vault = FakeVault()
    return session.prepare_send(text, "loop", "fake-placeholder", SanitizeParams(seed=1), task,
                                vault=vault)


def dx_plan(session, text=DOC, eps=20.0, task=SUMMARIZE, **kw):
    """A placeholder payload that says it carries d_X noise at ``eps``."""
    det = session.detector.detect(text)
    out = FakePlaceholder(FakeVault()).sanitize(text, det, None)
    noisy = replace(out, report=SanitizeReport(dx=DxReport(eps)))
    return session.prepare_send(text, "loop", "fake-placeholder", SanitizeParams(), task,
                                spans=det, sanitized=noisy, vault=FakeVault(), **kw)


def test_plan_payload_has_placeholders_not_values(server, tmp_path):
    session = make(server, tmp_path, prices=(2.0, 8.0))
    plan = placeholder_plan(session)
    body = plan.payload.decode()
    for value in ("Alice Martin", "alice.martin@corp.example", "Bob Stone", "+33 6 12"):
        assert value not in body
    assert "<PERSON_1>" in body and "<EMAIL_ADDRESS_1>" in body
    assert plan.blocking == ()
    assert plan.cost.input_tokens > 0 and plan.cost.priced and plan.cost.input_cost > 0
    assert plan.prior_sends == ()
    js = plan.to_json()
    assert js["payload"] == body and js["cost"]["token_method"].startswith("estimate")
    assert ["Authorization", "Bearer <API key from keyring>"] in js["headers"]


def test_identity_plan_blocks_every_direct_identifier(server, tmp_path):
    session = make(server, tmp_path)
    plan = session.prepare_send(DOC, "loop", "fake-identity", SanitizeParams())
    blocking = {(f.type, f.value) for f in plan.blocking}
    assert blocking == {("PERSON", "Alice Martin"), ("PERSON", "Bob Stone"),
                        ("EMAIL_ADDRESS", "alice.martin@corp.example"),
                        ("PHONE_NUMBER", "+33 6 12 34 56 78")}
    # Alice appears twice but is one item to override.
    assert sum(f.value == "Alice Martin" for f in plan.findings) == 1
    assert any(f.type == "LOCATION" and not f.blocking for f in plan.findings)


def test_send_without_confirmation_never_reaches_server(server, tmp_path):
    session = make(server, tmp_path)
    plan = placeholder_plan(session)
    with pytest.raises(SendBlocked, match="not confirmed"):
        session.execute(plan, Confirmation(confirmed=False))
    assert server.requests == [] and session.audit.records() == []


def test_each_blocking_item_needs_its_own_override(server, tmp_path):
    session = make(server, tmp_path)
    plan = session.prepare_send(DOC, "loop", "fake-identity", SanitizeParams())
    ids = [f.id for f in plan.blocking]
    with pytest.raises(SendBlocked, match="4 identifier"):
        session.execute(plan, YES)
    with pytest.raises(SendBlocked, match="1 identifier"):
        session.execute(plan, Confirmation(True, frozenset(ids[:-1])))
    assert server.requests == []
    result = session.execute(plan, Confirmation(True, frozenset(ids)))
    assert result.answer == "Hello world." and len(server.requests) == 1
    # the log names each override by type and a masked value, never a bare hash
    labels = json.loads(session.audit.get(result.record_id)["overrides"])
    assert labels == sorted(f"{f.type} {mask_value(f.type, f.value)} allowed"
                            for f in plan.blocking)
    assert all(f.value not in " ".join(labels) for f in plan.blocking)


def test_finding_ids_are_stable_across_plans(server, tmp_path):
    session = make(server, tmp_path)
    a = session.prepare_send(DOC, "loop", "fake-identity", SanitizeParams(epsilon=1))
    b = session.prepare_send(DOC, "loop", "fake-identity", SanitizeParams(epsilon=2))
    assert [f.id for f in a.blocking] == [f.id for f in b.blocking]
    assert finding_id("PERSON", "alice  MARTIN") == finding_id("PERSON", "Alice Martin")


def test_surrogates_are_no_findings_but_real_values_block(server, tmp_path):
    session = make(server, tmp_path)
    text = "Alice Martin wrote to the team."
    plan = session.prepare_send(text, "loop", "fake-surrogate", SanitizeParams())
    assert "Carol Diaz" in plan.payload.decode()
    # The detector finds the surrogate, but sanitization put it there: not even a note.
    out = plan.sanitized.text
    assert any(out[s.start:s.end] == "Carol Diaz" for s in session.detector.detect(out))
    assert [f for f in plan.findings if f.value == "Carol Diaz"] == []
    # If the surrogate happens to be a value of the original, it is a leak.
    text2 = "Alice Martin wrote to Carol Diaz."
    plan2 = session.prepare_send(text2, "loop", "fake-surrogate", SanitizeParams())
    assert any(f.value == "Carol Diaz" and f.blocking for f in plan2.findings)


def test_question_is_sanitized_then_rescanned(server, tmp_path):
    session = make(server, tmp_path)
    task = Task("question", question="What did Bob Stone say to sk-AAAABBBBCCCCDDDD1234?")
    plan = placeholder_plan(session, task=task)
    assert "Bob Stone" not in plan.payload.decode()       # sanitized (tests/.../test_question)
    (finding,) = plan.blocking                             # a typed secret still blocks
    assert finding.part == "instruction" and finding.value == "sk-AAAABBBBCCCCDDDD1234"


def test_audit_record_exists_before_request_arrives(server, tmp_path):
    session = make(server, tmp_path)
    plan = placeholder_plan(session)
    seen: list = []

    def on_request(captured):
        db = sqlite3.connect(tmp_path / "audit.sqlite3")
        seen.append(db.execute("SELECT status, payload FROM sends").fetchall())
        db.close()

    server.on_request = on_request
    result = session.execute(plan, YES)
    assert seen == [[("sending", plan.payload)]]
    row = session.audit.get(result.record_id)
    assert row["status"] == "done" and row["delivered"] == 1
    assert row["payload"] == server.requests[0].body          # exactly what was sent


def test_streamed_placeholders_are_restored_across_chunk_splits(server, tmp_path):
    session = make(server, tmp_path, store_original=True)   # the restored answer is kept
    plan = placeholder_plan(session)
    server.script(Reply(deltas=["<PERS", "ON_1> met <PERSON", "_2> in ", "<LOCATION_1", ">."]))
    chunks: list[str] = []
    result = session.execute(plan, YES, on_chunk=chunks.append)
    assert result.answer == "Alice Martin met Bob Stone in Lyon."
    assert "".join(chunks) == result.answer
    assert result.answer_raw == "<PERSON_1> met <PERSON_2> in <LOCATION_1>."
    row = session.audit.get(result.record_id)
    assert row["answer_raw"] == result.answer_raw and row["answer_restored"] == result.answer


def test_learning_on_the_flow_gets_realized_utility(server, tmp_path):
    flow, emb = FakeFlow(), FakeEmbedder(0.66)
    session = make(server, tmp_path, embedder=emb, flow=flow)
    plan = session.prepare_send(DOC, "loop", "fake-placeholder", SanitizeParams(),
                                vault=FakeVault(), predicted_utility=0.7,
                                features={"epsilon": float("nan"), "sim_sanitized": 0.8})
    result = session.execute(plan, YES)
    assert result.realized_utility == pytest.approx(0.66) and result.learning == "recorded"
    assert emb.calls == [(DOC, "Hello world.")]
    features, realized, meta = flow.records[0]
    assert features["sim_sanitized"] == 0.8 and realized == pytest.approx(0.66)
    assert meta["record_id"] == result.record_id and meta["predicted_utility"] == 0.7
    # the provider's name and model: each provider learns on its own
    assert (meta["provider"], meta["model"]) == (plan.provider.name, plan.provider.model)
    row = session.audit.get(result.record_id)
    assert row["realized_utility"] == pytest.approx(0.66) and row["flow_pending"] == 0
    assert row["predicted_utility"] == 0.7


def test_learning_failure_never_costs_the_answer_and_is_retried(server, tmp_path):
    flow = FakeFlow(fail=True)
    session = make(server, tmp_path, flow=flow, store_original=True)
    result = session.execute(placeholder_plan(session), YES)
    assert result.answer == "Hello world." and result.learning == "pending"
    assert session.audit.get(result.record_id)["flow_pending"] == 1
    flow.fail = False
    assert session.flush_pending_learning() == 1
    assert session.audit.get(result.record_id)["flow_pending"] == 0
    assert len(flow.records) == 1
    meta = flow.records[0][2]      # a retried pair still names its provider and model
    row = session.audit.get(result.record_id)
    assert (meta["provider"], meta["model"]) == (row["provider"], row["model"]) != (None, None)


def test_missing_embedder_marks_pending(server, tmp_path):
    session = make(server, tmp_path, embedder=FakeEmbedder(fail=True))
    result = session.execute(placeholder_plan(session), YES)
    assert result.realized_utility is None and result.learning == "pending"


def test_a_dx_resend_needs_explicit_ack_a_plain_one_does_not(server, tmp_path):
    session = make(server, tmp_path)
    session.execute(placeholder_plan(session), YES)
    edited = DOC.replace("Friday", "Thursday")
    plain = session.prepare_send(edited, "loop", "fake-placeholder", SanitizeParams(seed=2),
                                 vault=FakeVault())
    assert [p.match for p in plain.prior_sends] == ["near"] and not plain.resend_needs_ack
    session.execute(plain, YES)                 # no noise to average: adds ε 0, no tick
    again = dx_plan(session, edited)
    assert again.resend_needs_ack and again.to_json()["resend_acknowledgment_needed"]
    with pytest.raises(SendBlocked, match="already sent 2 time"):
        session.execute(again, YES)
    assert len(server.requests) == 2
    session.execute(again, Confirmation(True, resend_acknowledged=True))
    assert len(server.requests) == 3


def test_ledger_rechecked_at_execute_time(server, tmp_path):
    session = make(server, tmp_path)
    plan_a, plan_b = dx_plan(session), dx_plan(session)
    session.execute(plan_a, YES)
    with pytest.raises(SendBlocked, match="already sent"):
        session.execute(plan_b, YES)


def test_provider_error_leaves_failed_record_without_key(server, tmp_path, memory_keyring):
    session = make(server, tmp_path)
    KeyStore().set(key_account(session.provider(None)), "sk-secret-value-0123456789")
    server.script(Reply(status=401, body=b'{"error": {"message": "bad key"}}'))
    with pytest.raises(ProviderError, match="rejected the API key"):
        session.execute(placeholder_plan(session), YES)
    (row,) = session.audit.records()
    # The body reached the server, which refused it: delivered, not "failed to send".
    assert row["status"] == "rejected" and row["delivered"] == 1
    assert "delivered, rejected by the provider (HTTP 401)" in row["error"]
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret-value-0123456789"
    assert b"sk-secret-value" not in (tmp_path / "audit.sqlite3").read_bytes()
    wal = tmp_path / "audit.sqlite3-wal"
    assert not wal.exists() or b"sk-secret-value" not in wal.read_bytes()


def test_truncated_stream_keeps_partial_answer_in_audit(server, tmp_path):
    session = make(server, tmp_path, store_original=True)
    server.script(Reply(deltas=["<PERSON_1>", " is", " late"], truncate_after=2))
    with pytest.raises(ProviderError, match="stopped before|broke"):
        session.execute(placeholder_plan(session), YES)
    (row,) = session.audit.records()
    assert row["status"] == "failed" and row["answer_raw"] == "<PERSON_1> is"
    assert row["answer_restored"] == "Alice Martin is" and row["delivered"] == 1
    assert len(server.requests) == 1


def test_connection_refused_is_recorded_as_not_delivered(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class Dead:
        url = f"http://127.0.0.1:{port}/v1"

    from preflight.core.send.providers import RetryPolicy, create_client

    session = make(Dead, tmp_path, client_factory=lambda p: create_client(
        p, retry=RetryPolicy(attempts=1)))
    with pytest.raises(ProviderError, match="could not reach"):
        session.execute(placeholder_plan(session), YES)
    (row,) = session.audit.records()
    assert row["delivered"] == 0
    assert session.audit.prior_sends(placeholder_plan(session).fingerprint) == []


def test_original_stored_only_with_opt_in(server, tmp_path):
    s1 = make(server, tmp_path / "a")
    r1 = s1.execute(placeholder_plan(s1), YES)
    assert s1.audit.get(r1.record_id)["original_text"] is None
    s2 = make(server, tmp_path / "b", store_original=True)
    r2 = s2.execute(placeholder_plan(s2), YES)
    assert s2.audit.get(r2.record_id)["original_text"] == DOC


def test_cost_after_answer_uses_prices(server, tmp_path):
    session = make(server, tmp_path, prices=(1_000_000.0, 2_000_000.0))
    result = session.execute(placeholder_plan(session), YES)
    assert result.output_tokens == 3                 # "Hello world." by chars/4
    assert result.cost == pytest.approx(result.input_tokens * 1.0 + 3 * 2.0)


def test_keep_local_sends_nothing(server, tmp_path):
    class FakeSLM:
        def run(self, task, text, on_token=None, cancel=None):
            for t in ("local ", "answer"):
                if on_token:
                    on_token(t)
            return "local answer"

    session = make(server, tmp_path, slm=FakeSLM())
    tokens: list[str] = []
    result = session.keep_local(DOC, SUMMARIZE, on_token=tokens.append)
    assert result.answer == "local answer" and tokens == ["local ", "answer"]
    assert server.requests == []
    row = session.audit.get(result.record_id)
    assert row["kind"] == "local" and row["payload"] is None
    assert session.audit.prior_sends(placeholder_plan(session).fingerprint) == []


def test_unknown_provider_and_empty_document_are_clear(server, tmp_path):
    from preflight.core.errors import ConfigError

    session = make(server, tmp_path)
    with pytest.raises(ConfigError, match="No provider named 'nope'"):
        session.prepare_send(DOC, "nope", "fake-placeholder")
    with pytest.raises(ConfigError, match="empty"):
        session.prepare_send("   ", "loop", "fake-placeholder")


def test_value_missed_at_second_mention_still_blocks(server, tmp_path):
    class FirstMentionOnly(FakeDetector):
        def detect(self, text):
            seen, out = set(), []
            for s in super().detect(text):
                value = text[s.start:s.end]
                if value not in seen:
                    seen.add(value)
                    out.append(s)
            return out

    from preflight.core.types import apply_replacements

    session = make(server, tmp_path)
    session._detector = FirstMentionOnly()
    text = "Alice Martin called. Later ALICE MARTIN called again."
    spans = session.detector.detect(text)
    # A sanitization that replaced only the detected (first) mention:
    out, changes = apply_replacements(text, [(0, 12, "[REDACTED]", "PERSON")])
    from preflight.core.types import SanitizedText

    plan = session.prepare_send(text, "loop", "redact", sanitized=SanitizedText(out, "redact",
                                changes), spans=spans)
    (finding,) = plan.blocking
    assert finding.value == "ALICE MARTIN" and "unchanged" in finding.reason
    with pytest.raises(SendBlocked):
        session.execute(plan, YES)
    assert server.requests == []


def test_estimate_counts_the_same_request_body_as_the_plan(server, tmp_path):
    session = make(server, tmp_path, prices=(2.0, 8.0))
    plan = placeholder_plan(session)
    est = session.estimate(plan.sanitized.text, SUMMARIZE, "loop")
    assert est == plan.cost
    # The instruction is part of what the provider reads, so it is counted too.
    assert est.input_tokens > session.token_counter.count(plan.sanitized.text).tokens


def test_the_real_restorer_never_puts_a_secret_into_the_answer(server, tmp_path):
    from preflight.core.send.execute import default_restorer

    provider = ProviderSettings("loop", server.url, "m-1")
    session = SendSession(
        Settings(providers=[provider], default_provider="loop", store_original_in_audit=True),
        detector=FakeDetector(), audit=AuditLog(tmp_path / "audit.sqlite3"),
        token_counter=FakeCounter(), embedder=FakeEmbedder(), flow=FakeFlow(),
        restorer_factory=default_restorer)
    key = "sk-Zq8Rt5Yw2Xc9Vb6Nm3Lk"
    plan = session.prepare_send(f"Alice Martin uses the key {key} for billing.", "loop",
                                "placeholder", SanitizeParams(seed=1))
    assert key not in plan.payload.decode() and plan.blocking == ()
    server.script(Reply(deltas=["<PERSON_1> should revoke <API", "_KEY_1> today."]))
    result = session.execute(plan, YES, learn=False)
    # The note stands beside the answer, never inside the provider's text.
    assert result.answer == "Alice Martin should revoke <API_KEY_1> today."
    assert any("1 secret was not restored: <API_KEY_1>" in n for n in result.notes)
    assert key not in result.answer
    assert key not in session.audit.get(result.record_id)["answer_restored"]


def test_two_sends_of_the_same_file_carry_the_same_placeholders(server, tmp_path):
    from preflight.core.sanitize.placeholder_memory import PlaceholderMemory, document_identity

    session = make(server, tmp_path)
    path = tmp_path / "doc.txt"

    def payload(text: str) -> str:
        path.write_text(text)
        memory = PlaceholderMemory.open(document_identity(path, text))
        return session.prepare_send(text, "loop", "placeholder", SanitizeParams(),
                                    memory=memory).payload.decode()

    first = payload(DOC)
    again = payload("Carol Diaz joined the call. " + DOC)   # an edit: a name comes first
    assert "<PERSON_1> (<EMAIL_ADDRESS_1>" in first and "<PERSON_1> (<EMAIL_ADDRESS_1>" in again
    assert "<PERSON_3> joined the call" in again
    other = PlaceholderMemory.open(document_identity(tmp_path / "other.txt", DOC))
    fresh = session.prepare_send("Carol Diaz joined the call. " + DOC, "loop", "placeholder",
                                 SanitizeParams(), memory=other).payload.decode()
    assert "<PERSON_1> joined the call" in fresh


def test_without_store_original_no_real_name_reaches_the_sqlite_file(server, tmp_path):
    """Opted out of storing originals: only the sanitized answer is logged, never the
    restored one — the name is nowhere in the database files (send and Keep local)."""
    class EchoSLM:                     # a local model quoting the original's names
        def run(self, task, text, on_token=None, cancel=None):
            return "Alice Martin agrees."

    session = make(server, tmp_path, slm=EchoSLM())
    server.script(Reply(deltas=["<PERSON_1> met <PERSON_2>."]))
    result = session.execute(placeholder_plan(session), YES)
    assert result.answer == "Alice Martin met Bob Stone."            # shown to the user
    row = session.audit.get(result.record_id)
    assert row["answer_raw"] == "<PERSON_1> met <PERSON_2>." and row["answer_restored"] is None
    local = session.keep_local("Alice Martin wrote to Bob Stone.", SUMMARIZE)
    assert "Alice Martin" in local.answer
    session.audit.close()
    for f in tmp_path.glob("audit.sqlite3*"):
        data = f.read_bytes()
        assert b"Alice Martin" not in data and b"Bob Stone" not in data, f.name
