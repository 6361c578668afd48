"""One conversation per document: a follow-up question carries the earlier turns as the
provider saw them (raw answers, never restored values), needs no resend acknowledgment
without d_X, and with d_X adds its ε to the document's ledger. The audit log numbers the
turns."""

from __future__ import annotations

import json

import pytest

from _loopback import Reply
from preflight.core.org_policy import load_org_policy
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.conversation import Conversation
from preflight.core.send.session import Confirmation, SendBlocked
from preflight.core.tasks import Task
from test_session import DOC, YES, dx_plan, make

FIRST = Task("question", question="Who presents the budget?")
SECOND = Task("question", question="And who reviews it before then?")
RAW = "<PERSON_1> will present the Q3 budget."


def ask(session, task, conversation, **kw):
    return session.prepare_send(DOC, "loop", "fake-placeholder", SanitizeParams(seed=1),
                                task, conversation=conversation, **kw)


def messages(server, i):
    return json.loads(server.requests[i].body)["messages"]


def test_a_follow_up_carries_the_raw_answer_never_the_restored_value(server, tmp_path):
    session = make(server, tmp_path)
    conv = Conversation()
    server.script(Reply(deltas=[RAW]), Reply(deltas=["<PERSON_2> reviews it."]))
    first = session.execute(ask(session, FIRST, conv), YES)
    assert "Alice Martin" in first.answer and first.answer_raw == RAW     # restored here
    follow = ask(session, SECOND, conv)
    assert follow.follow_up and follow.turn == 2 and follow.prior_sends
    assert not follow.resend_needs_ack and follow.ledger.this_send == 0.0
    session.execute(follow, YES)                   # one confirmation, no resend tick
    sent = messages(server, 1)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "Who presents the budget?" in sent[1]["content"] and "<PERSON_1>" in sent[1]["content"]
    assert sent[2]["content"] == RAW
    assert sent[3]["content"] == "Question: And who reviews it before then?"
    body = server.requests[1].body.decode()
    assert "Alice Martin" not in body and "Bob Stone" not in body
    rows = session.audit.records()
    assert [(r["conversation"], r["turn"]) for r in rows] == [(conv.id, 1), (conv.id, 2)]
    assert [p.conversation for p in follow.prior_sends] == [conv.id]
    assert session.audit.verify().ok
    assert [t.answer for t in conv.turns] == [RAW, "<PERSON_2> reviews it."]


def test_the_rescan_covers_the_earlier_turns(server, tmp_path):
    """An earlier raw answer that named a protected person (the provider guessed it) is
    part of the next request: the re-scan blocks it there."""
    session = make(server, tmp_path)
    conv = Conversation()
    server.script(Reply(deltas=["Alice Martin presents it."]))
    session.execute(ask(session, FIRST, conv), YES)
    follow = ask(session, SECOND, conv)
    leaks = [f for f in follow.blocking if f.value == "Alice Martin"]
    assert leaks, follow.findings
    with pytest.raises(SendBlocked, match="still contains"):
        session.execute(follow, YES)
    assert len(server.requests) == 1


def test_a_dx_follow_up_adds_its_epsilon_and_needs_the_resend_ack(server, tmp_path):
    session = make(server, tmp_path)
    conv = Conversation()
    session.execute(dx_plan(session, eps=20.0, task=FIRST, conversation=conv), YES)
    follow = dx_plan(session, eps=15.0, task=SECOND, conversation=conv)
    assert follow.follow_up and follow.resend_needs_ack
    assert (follow.ledger.spent, follow.ledger.this_send, follow.ledger.total) == (
        20.0, 15.0, 35.0)
    with pytest.raises(SendBlocked, match="adds ε 15"):
        session.execute(follow, YES)
    session.execute(follow, Confirmation(True, resend_acknowledged=True))
    third = dx_plan(session, eps=10.0, task=Task("question", question="When?"),
                    conversation=conv)
    assert third.ledger.spent == 35.0 and third.ledger.total == 45.0 and third.turn == 3
    assert [r["privacy_epsilon"] for r in session.audit.records()] == [20.0, 15.0]


def test_a_company_without_resends_allows_a_plain_follow_up_not_a_dx_one(server, tmp_path):
    path = tmp_path / "org.toml"
    path.write_text("allow_resend = false\n", encoding="utf-8")
    session = make(server, tmp_path, org_policy=load_org_policy(path))
    conv = Conversation()
    session.execute(ask(session, FIRST, conv), YES)
    session.execute(ask(session, SECOND, conv), YES)            # the same exchange
    assert len(server.requests) == 2
    with pytest.raises(SendBlocked, match="does not allow sending it again"):
        session.execute(ask(session, SECOND, Conversation()), YES)   # another conversation
    noisy = dx_plan(session, task=SECOND, conversation=conv)
    with pytest.raises(SendBlocked, match="does not allow sending it again"):
        session.execute(noisy, Confirmation(True, resend_acknowledged=True))
    assert len(server.requests) == 2


def test_a_plan_overtaken_by_another_turn_is_refused(server, tmp_path):
    session = make(server, tmp_path)
    conv = Conversation()
    stale = ask(session, FIRST, conv)
    session.execute(ask(session, FIRST, conv), YES)
    with pytest.raises(SendBlocked, match="conversation moved on"):
        session.execute(stale, YES)
    assert len(server.requests) == 1


def test_completion_prompt_of_a_conversation():
    conv = Conversation()
    conv.add(1, FIRST, RAW)
    prompt = conv.follow(SECOND).completion_prompt("The memo.")
    assert prompt == ("The memo.\n\nQuestion: Who presents the budget?\nAnswer: " + RAW
                      + "\n\nQuestion: And who reviews it before then?\nAnswer:")
