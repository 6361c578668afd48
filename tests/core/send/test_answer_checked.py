"""Every answer is checked against the document it answers (issue 48, item 1): the check
travels with the result, names what came through the payload's changes, and the realized
utility that is shown, stored in the audit log and learned from is the similarity
discounted by the flagged facts. Fakes for detector/embedder/flow; a real HTTP server on
loopback."""

from __future__ import annotations

import pytest

from _fakes import (
    FakeCounter, FakeDetector, FakeEmbedder, FakeFlow, FakeRestorer, FakeVault,
)
from _loopback import Reply
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.answer_review import NAMES_UNCHECKED, check_line
from preflight.core.send.audit import AuditLog
from preflight.core.send.session import Confirmation, SendSession
from preflight.core.tasks import SUMMARIZE

MAIL = ("Hi Bob Stone,\nFollowing our review, Alice Martin confirmed that your salary rises "
        "by 4% to $52,400, effective 1 April 2025. We met in Lyon on 18 March to discuss it.\n"
        "Regards, alice.martin@corp.example")
YES = Confirmation(confirmed=True)


def session_with(server, tmp_path, *, detector=None, embedder=None, flow=None, slm=None):
    provider = ProviderSettings("loop", server.url, "m-1")
    return SendSession(
        Settings(providers=[provider], default_provider="loop"),
        detector=detector or FakeDetector(), audit=AuditLog(tmp_path / "audit.sqlite3"),
        token_counter=FakeCounter(), embedder=embedder or FakeEmbedder(0.8),
        flow=flow if flow is not None else FakeFlow(), slm=slm,
        restorer_factory=FakeRestorer)


def sent(session, server, deltas, method="fake-placeholder"):
    vault = {"vault": FakeVault()} if method == "fake-placeholder" else {}
    plan = session.prepare_send(MAIL, "loop", method, SanitizeParams(seed=1), SUMMARIZE,
                                **vault)
    server.script(Reply(deltas=deltas))
    return plan, session.execute(plan, YES)


def test_a_date_an_amount_and_a_name_not_in_the_document_are_flagged(server, tmp_path):
    flow = FakeFlow()
    session = session_with(server, tmp_path, flow=flow)
    # the provider sees placeholders; restored, the answer names Bob Stone (in the
    # document) and invents the rest
    _, result = sent(session, server, ["<PERSON_1>'s salary rises to $55,000 from ",
                                       "January 2025, approved by Carol Diaz."])
    assert result.answer.startswith("Bob Stone's salary")
    check = result.answer_check
    assert check is not None
    flagged = {(f.kind, f.text) for f in check.unsupported}
    assert flagged == {("amount", "$55,000"), ("date", "January 2025"), ("name", "Carol Diaz")}
    assert not any(f.from_noise for f in check.unsupported)   # the payload had none of them
    assert "Bob Stone" in {f.text for f in check.facts if f.supported}
    assert check.summary() == "not in your document: $55,000, January 2025, Carol Diaz"
    # the realized score is discounted, the cosine kept beside it
    assert result.similarity == pytest.approx(0.8)
    assert result.realized_utility is not None and result.realized_utility < 0.3
    row = session.audit.get(result.record_id)
    assert row["realized_utility"] == pytest.approx(result.realized_utility)
    _, learned, meta = flow.records[0]
    assert learned == pytest.approx(result.realized_utility)
    assert meta["similarity"] == pytest.approx(0.8) and meta["unsupported_facts"] == 3
    js = result.to_json()
    assert js["answer_check"]["unsupported"] == 3 and js["similarity"] == pytest.approx(0.8)


def test_a_faithful_answer_keeps_its_similarity(server, tmp_path):
    session = session_with(server, tmp_path)
    _, result = sent(session, server, ["<PERSON_1>'s salary rises by 4% to $52,400 from ",
                                       "1 April 2025, as <PERSON_2> confirmed."])
    assert not result.answer_check.flagged
    assert result.answer_check.supported_count >= 4
    assert result.realized_utility == pytest.approx(0.8) == result.similarity


def test_a_fact_the_payload_brought_in_is_marked_as_come_through_it(server, tmp_path):
    # a stand-in name the restorer cannot map back: in the payload, not in the document
    session = session_with(server, tmp_path)
    plan, result = sent(session, server, ["Carol Diaz asked for the review."],
                        method="fake-surrogate")
    assert "Carol Diaz" in plan.sanitized.text and "Carol Diaz" not in MAIL
    (fact,) = result.answer_check.unsupported
    assert fact.text == "Carol Diaz" and fact.from_noise
    assert check_line(result.answer_check, dx=True) == (
        "not in your document: Carol Diaz; Carol Diaz came through d_X noise (the words the "
        "noise put into the text sent)")
    assert "came from the changed text that was sent" in check_line(result.answer_check,
                                                                    dx=False)


def test_the_answer_is_checked_without_learning_too(server, tmp_path):
    session = session_with(server, tmp_path)
    plan = session.prepare_send(MAIL, "loop", "fake-placeholder", SanitizeParams(seed=1),
                                SUMMARIZE, vault=FakeVault())
    server.script(Reply(deltas=["The raise starts on 1 June 2025."]))
    result = session.execute(plan, YES, learn=False)
    assert [f.text for f in result.answer_check.unsupported] == ["1 June 2025"]
    assert result.realized_utility is None


def test_a_failing_detector_leaves_names_unchecked_and_says_so(server, tmp_path):
    class BreaksOnAnswers(FakeDetector):
        def detect(self, text):
            if "Carol" in text:
                raise RuntimeError("detector process gone")
            return super().detect(text)

    session = session_with(server, tmp_path, detector=BreaksOnAnswers())
    _, result = sent(session, server, ["Carol Diaz approved $55,000."])
    assert [f.text for f in result.answer_check.unsupported] == ["$55,000"]
    assert NAMES_UNCHECKED in result.notes
    assert result.answer == "Carol Diaz approved $55,000."     # the answer is kept


def test_a_local_answer_is_checked_against_the_original(server, tmp_path):
    class InventingSLM:
        def run(self, task, text, on_token=None, cancel=None):
            return "Bob Stone's raise of 4% starts on 1 May 2025, says Carol Diaz."

    session = session_with(server, tmp_path, slm=InventingSLM())
    local = session.keep_local(MAIL, SUMMARIZE)
    flagged = [f.text for f in local.answer_check.unsupported]
    assert flagged == ["1 May 2025", "Carol Diaz"]
    assert not any(f.from_noise for f in local.answer_check.unsupported)
    assert local.to_json()["answer_check"]["unsupported"] == 2
    assert server.requests == []


def test_learning_retried_later_checks_the_stored_answer(server, tmp_path):
    flow = FakeFlow(fail=True)
    provider = ProviderSettings("loop", server.url, "m-1")
    session = SendSession(
        Settings(providers=[provider], default_provider="loop", store_original_in_audit=True),
        detector=FakeDetector(), audit=AuditLog(tmp_path / "audit.sqlite3"),
        token_counter=FakeCounter(), embedder=FakeEmbedder(fail=True), flow=flow,
        restorer_factory=FakeRestorer)
    _, result = sent(session, server, ["Carol Diaz approved $55,000 in January 2025."])
    assert result.learning == "pending"
    session.learner.embedder = FakeEmbedder(0.8)
    flow.fail = False
    assert session.flush_pending_learning() == 1
    _, learned, meta = flow.records[0]
    assert meta["unsupported_facts"] == 3 and learned < 0.8 * 0.5
    assert session.audit.get(result.record_id)["realized_utility"] == pytest.approx(learned)


def test_a_fact_the_user_wrote_in_the_question_is_not_invented(server, tmp_path):
    """The question is the user's own text: the answer may repeat what it states (a
    date, an amount) without being flagged; what neither holds is still flagged."""
    from preflight.core.tasks import Task

    session = session_with(server, tmp_path)
    task = Task("question",
                question="Was the raise still due on 30 June 2025, and above $50,000?")
    plan = session.prepare_send(MAIL, "loop", "fake-placeholder", SanitizeParams(seed=1),
                                task, vault=FakeVault())
    server.script(Reply(deltas=["Yes: on 30 June 2025 the salary of $52,400 is above ",
                                "$50,000, but not $61,000."]))
    result = session.execute(plan, YES)
    flagged = {f.text for f in result.answer_check.unsupported}
    assert flagged == {"$61,000"}


def test_a_very_long_answer_is_checked_on_its_beginning_and_says_so():
    from preflight.core.send.answer_review import CHECKED_CHARS, review_answer

    filler = "The review went well. " * (CHECKED_CHARS // 20)
    answer = "It starts in January 2031. " + filler + "It ends in March 2040."
    check, note = review_answer(MAIL, answer, FakeDetector())
    assert {f.text for f in check.unsupported} == {"January 2031"}
    assert note is not None and f"{CHECKED_CHARS:,}" in note
    short, none = review_answer(MAIL, "It starts in January 2031.", FakeDetector())
    assert none is None and {f.text for f in short.unsupported} == {"January 2031"}
