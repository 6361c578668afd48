"""The question and the custom instruction leave sanitized with the document's policy and
vault: the request body the provider receives carries the document's placeholder for a
name the document has, a new placeholder for a name it has not, and a secret typed into
the question still blocks. The answer restores both placeholders."""

from __future__ import annotations

import json

import pytest

from _fakes import FakeCounter, FakeDetector, FakeEmbedder, FakeFlow
from _loopback import Reply
from preflight.core.types import SanitizeReport
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.send.audit import AuditLog
from preflight.core.send.question import sanitize_task
from preflight.core.send.session import Confirmation, SendBlocked, SendSession
from preflight.core.tasks import SUMMARIZE, Task

DOC = ("Alice Martin (alice.martin@corp.example) asked Bob Stone in Lyon to review the Q3 "
       "budget before Friday. Alice Martin will present it.")
NAMES = ("Alice Martin", "Bob Stone", "Carol Diaz")


def _session(server, tmp_path) -> SendSession:
    provider = ProviderSettings("loop", server.url, "m-1")
    return SendSession(
        Settings(providers=[provider], default_provider="loop"),
        detector=FakeDetector(names=NAMES), audit=AuditLog(tmp_path / "audit.sqlite3"),
        token_counter=FakeCounter(), embedder=FakeEmbedder(), flow=FakeFlow())


def _document(policy: str = "identifiers"):
    spans = FakeDetector(names=NAMES).detect(DOC)
    mech = PolicyMechanism(PRESETS[policy])
    return spans, mech.sanitize(DOC, spans, SanitizeParams(seed=1)), mech.vault


def _user_text(body: bytes) -> str:
    return json.loads(body)["messages"][1]["content"].split("Document:")[0]


def test_question_goes_out_with_the_documents_placeholders_and_restores(server, tmp_path):
    session = _session(server, tmp_path)
    spans, sanitized, vault = _document()
    alice = next(e.token for e in vault.entries if e.original == "Alice Martin")
    task = Task("question", question="What did alice martin and Carol Diaz agree?",
                note="Answer for Bob Stone in 2 bullets")
    plan = session.prepare_send(DOC, "loop", sanitized.method, SanitizeParams(), task,
                                spans=spans, sanitized=sanitized, vault=vault)
    assert plan.blocking == ()
    assert plan.task.question.startswith(f"What did {alice} and <PERSON_")
    server.script(Reply(deltas=[f"{alice} and ", plan.task.question.split(" and ")[1][:10],
                                " agreed."]))
    result = session.execute(plan, Confirmation(confirmed=True))
    typed = _user_text(server.requests[0].body)
    for value in ("alice martin", "Carol Diaz", "Bob Stone"):
        assert value not in typed                      # neither the question nor the note
    assert f"Question: What did {alice} and " in typed
    bob = next(e.token for e in vault.entries if e.original == "Bob Stone")
    assert f"Additional instruction: Answer for {bob} in 2 bullets" in typed
    # the name only the question has got a new number, and the answer restores it
    carol = plan.task.question.split(" and ")[1].split(" ")[0]
    assert carol not in {e.token for e in vault.entries}
    assert result.answer == "Alice Martin and Carol Diaz agreed."
    assert len(vault.entries) == 3                     # the document's vault is unchanged


def test_a_secret_typed_into_the_question_still_blocks(server, tmp_path):
    session = _session(server, tmp_path)
    spans, sanitized, vault = _document()
    key = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    task = Task("question", question=f"Is {key} the key Bob Stone used?")
    plan = session.prepare_send(DOC, "loop", sanitized.method, SanitizeParams(), task,
                                spans=spans, sanitized=sanitized, vault=vault)
    (finding,) = plan.blocking
    assert finding.part == "instruction" and finding.value == key
    assert "Bob Stone" not in plan.payload.decode()
    with pytest.raises(SendBlocked) as err:
        session.execute(plan, Confirmation(confirmed=True))
    assert "from the question" in err.value.hint
    assert server.requests == []


def test_dx_only_policy_protects_the_question_as_identifiers():
    spans = FakeDetector(names=NAMES).detect(DOC)
    from preflight.core.types import SanitizedText

    noised = SanitizedText("noised text", "dx-all", (), SanitizeReport(policy=PRESETS["dx-all"].summary()))
    task, vault = sanitize_task(Task("question", question="Where is Bob Stone?"),
                                detector=FakeDetector(names=NAMES), original=DOC,
                                sanitized=noised, spans=spans, vault=None)
    assert task.question == "Where is <PERSON_1>?"
    assert [(e.token, e.original) for e in vault.entries] == [("<PERSON_1>", "Bob Stone")]


def test_kept_types_stay_and_no_user_text_changes_nothing():
    spans, sanitized, vault = _document()
    det = FakeDetector(names=NAMES)
    task, same = sanitize_task(Task("question", question="What happens in Lyon?"),
                               detector=det, original=DOC, sanitized=sanitized, spans=spans,
                               vault=vault)
    assert task.question == "What happens in Lyon?" and same is vault   # places are kept
    assert sanitize_task(SUMMARIZE, detector=det, original=DOC, sanitized=sanitized,
                         spans=spans, vault=vault) == (SUMMARIZE, vault)
