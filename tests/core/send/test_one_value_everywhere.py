"""One request, one verdict: a value the product classified in any part of a request — the
document, the question, the instruction, an earlier send of the same document — is
protected in every part of it, and the re-scan blocks a payload that still carries such a
value or a part of a protected name written alone.

Everything goes through the real send path (SendSession, the policy mechanism, the
re-scan, the request builder) to the loopback capture server; the detector is a fake
that reads a name only where it is capitalized, as the small NER model does."""

from __future__ import annotations

import json
import re

import pytest

from _fakes import FakeCounter, FakeDetector, FakeEmbedder, FakeFlow
from _loopback import Reply
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.placeholder_memory import PlaceholderMemory
from preflight.core.sanitize.policy import PRESETS
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.send.audit import AuditLog
from preflight.core.send.session import Confirmation, SendBlocked, SendSession
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Category, Span

# The board minutes write the chair's name in lower case (a pasted chat line) and her
# surname alone: a detector that needs capitals finds neither.
MINUTES = ("Minutes of the procurement board, 12 May.\n"
           "The framework contract was reviewed by karin lindqvist before the vote. "
           "Lindqvist asked for a two-week delay, which the board granted.")
QUESTION = "What did Karin Lindqvist ask the board for?"


class SplitVerdictDetector(FakeDetector):
    """Calls the same string a place in a long text and a person in a short one, as the
    small model does with "April Lee" in a paragraph and in a one-line question."""

    def __init__(self, value: str) -> None:
        super().__init__(names=(), cities=())
        self.value = value

    def detect(self, text: str) -> list[Span]:
        typ, cat = (("LOCATION", Category.QUASI_IDENTIFIER) if len(text) > 80
                    else ("PERSON", Category.DIRECT_IDENTIFIER))
        return [Span(m.start(), m.end(), typ, cat, 0.85, "SpacyRecognizer", f"NER {typ}",
                     NER_EVIDENCE)
                for m in re.finditer(re.escape(self.value), text)]


def _session(server, tmp_path, detector) -> SendSession:
    provider = ProviderSettings("loop", server.url, "m-1")
    return SendSession(
        Settings(providers=[provider], default_provider="loop"), detector=detector,
        audit=AuditLog(tmp_path / "audit.sqlite3"), token_counter=FakeCounter(),
        embedder=FakeEmbedder(), flow=FakeFlow())


def _sanitized(text: str, detector, memory=None):
    spans = detector.detect(text)
    mech = PolicyMechanism(PRESETS["identifiers"], memory=memory)
    return spans, mech.sanitize(text, spans, SanitizeParams(seed=1)), mech.vault


def _wire(server) -> str:
    (req,) = server.requests
    return (req.raw_head + req.body).decode("utf-8") + json.dumps(
        json.loads(req.body), ensure_ascii=False)


def test_a_name_only_the_question_reveals_leaves_neither_copy(server, tmp_path):
    detector = FakeDetector(names=("Karin Lindqvist",), cities=())
    session = _session(server, tmp_path, detector)
    spans, sanitized, vault = _sanitized(MINUTES, detector)
    assert spans == []                       # the document's copies are missed there
    plan = session.prepare_send(MINUTES, "loop", sanitized.method, SanitizeParams(),
                                Task("question", question=QUESTION), spans=spans,
                                sanitized=sanitized, vault=vault)
    assert plan.blocking == ()
    token = plan.task.question.split("did ")[1].split(" ask")[0]
    assert re.fullmatch(r"<PERSON_\d+>", token)
    # the full name and the surname alone take the question's token in the document
    assert plan.sanitized.text.count(token) == 2
    server.script(Reply(deltas=[f"{token} asked for a delay."]))
    result = session.execute(plan, Confirmation(confirmed=True), learn=False)
    wire = _wire(server).casefold()
    assert "lindqvist" not in wire and "karin" not in wire
    assert result.answer == "Karin Lindqvist asked for a delay."


def test_a_place_in_the_document_that_the_question_calls_a_person_is_protected(server,
                                                                               tmp_path):
    doc = ("We met April Lee at the supplier day and agreed on the pilot; April Lee will "
           "send the figures on Monday.")
    detector = SplitVerdictDetector("April Lee")
    session = _session(server, tmp_path, detector)
    spans, sanitized, vault = _sanitized(doc, detector)
    assert "April Lee" in sanitized.text     # a place: the default policy keeps it
    plan = session.prepare_send(doc, "loop", sanitized.method, SanitizeParams(),
                                Task("question", question="When will April Lee send them?"),
                                spans=spans, sanitized=sanitized, vault=vault)
    assert plan.blocking == ()
    server.script(Reply(deltas=["Monday."]))
    session.execute(plan, Confirmation(confirmed=True), learn=False)
    wire = _wire(server)
    assert "April Lee" not in wire and "april lee" not in wire.casefold()


def test_the_instruction_protects_the_document_and_the_question(server, tmp_path):
    detector = FakeDetector(names=("Karin Lindqvist",), cities=())
    session = _session(server, tmp_path, detector)
    spans, sanitized, vault = _sanitized(MINUTES, detector)
    task = Task("question", question="What did karin lindqvist ask for?",
                note="Address the answer to Karin Lindqvist.")
    plan = session.prepare_send(MINUTES, "loop", sanitized.method, SanitizeParams(), task,
                                spans=spans, sanitized=sanitized, vault=vault)
    server.script(Reply(deltas=["A delay."]))
    session.execute(plan, Confirmation(confirmed=True), learn=False)
    assert "lindqvist" not in _wire(server).casefold()


def test_a_value_protected_in_an_earlier_send_is_protected_again(server, tmp_path):
    detector = FakeDetector(names=("Karin Lindqvist",), cities=())
    memory = PlaceholderMemory.open("file:/minutes.txt", tmp_path)
    session = _session(server, tmp_path, detector)
    spans, sanitized, vault = _sanitized(MINUTES, detector, memory)
    first = session.prepare_send(MINUTES, "loop", sanitized.method, SanitizeParams(),
                                 Task("question", question=QUESTION), spans=spans,
                                 sanitized=sanitized, vault=vault, memory=memory)
    token = first.task.question.split("did ")[1].split(" ask")[0]
    # a later summary of the same document, without the question, from the file's memory
    later = PlaceholderMemory.open("file:/minutes.txt", tmp_path)
    spans, sanitized, vault = _sanitized(MINUTES, detector, later)
    plan = session.prepare_send(MINUTES, "loop", sanitized.method, SanitizeParams(),
                                SUMMARIZE, spans=spans, sanitized=sanitized, vault=vault,
                                memory=later)
    assert plan.blocking == ()
    assert "lindqvist" not in plan.sanitized.text.casefold()
    assert token in plan.sanitized.text      # the token the earlier request gave it
    server.script(Reply(deltas=["Minutes."]))
    session.execute(plan, Confirmation(confirmed=True, resend_acknowledged=True),
                    learn=False)
    assert "lindqvist" not in _wire(server).casefold()


def test_a_surname_alone_in_the_payload_blocks_until_allowed(server, tmp_path):
    doc = ("Karin Lindqvist chaired the board. The contract was signed after Lindqvist "
           "asked for a delay.")
    detector = FakeDetector(names=("Karin Lindqvist",), cities=())
    session = _session(server, tmp_path, detector)
    # the window passes the spans it had: the full name only (no propagated surname)
    spans = detector.detect(doc)
    mech = PolicyMechanism(PRESETS["identifiers"])
    sanitized = mech.sanitize(doc, spans, SanitizeParams(seed=1))
    assert "Lindqvist asked" in sanitized.text
    plan = session.prepare_send(doc, "loop", sanitized.method, SanitizeParams(), SUMMARIZE,
                                spans=spans, sanitized=sanitized, vault=mech.vault)
    (finding,) = plan.blocking
    assert (finding.value, finding.type, finding.kind) == ("Lindqvist", "PERSON", "leak")
    with pytest.raises(SendBlocked):
        session.execute(plan, Confirmation(confirmed=True), learn=False)
    assert server.requests == []
    server.script(Reply(deltas=["ok"]))
    session.execute(plan, Confirmation(confirmed=True, overrides=frozenset({finding.id})),
                    learn=False)
    assert len(server.requests) == 1


@pytest.mark.parametrize("doc, blocks", [
    # a verb at the start of a sentence, and the text writes the word in lower case too
    ("Grant Wilson approved it. Grant the team a week; the grant runs out in May.", False),
    # the same word at a sentence start, but never written as a word: block, allow by item
    ("Grant Wilson approved it. Grant asked for a week.", True),
    # capitalized inside a sentence: the name
    ("Grant Wilson approved it. Ask Grant about the grant before May.", True),
    # a given name shorter than three letters is too common to block on
    ("Al Wilson approved it. Al asked for a week.", False),
])
def test_name_parts_alone(server, tmp_path, doc, blocks):
    detector = FakeDetector(names=("Grant Wilson", "Al Wilson"), cities=())
    session = _session(server, tmp_path, detector)
    spans = [s for s in detector.detect(doc) if s.start == 0]
    mech = PolicyMechanism(PRESETS["identifiers"])
    sanitized = mech.sanitize(doc, spans, SanitizeParams(seed=1))
    plan = session.prepare_send(doc, "loop", sanitized.method, SanitizeParams(), SUMMARIZE,
                                spans=spans, sanitized=sanitized, vault=mech.vault)
    parts = [f.value for f in plan.blocking]
    assert (parts != []) is blocks, parts


def test_patching_keeps_the_rest_of_the_sanitized_text():
    from preflight.core.send.request_scope import patch_sanitized

    text = "Call Ann Lee at noon; Ann Lee knows Bo."
    spans = [Span(5, 8, "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "x", "x")]  # "Ann"
    mech = PolicyMechanism(PRESETS["identifiers"])
    sanitized = mech.sanitize(text, spans, SanitizeParams(seed=1))
    # "Ann Lee" twice: the first overlaps the change of "Ann", the second is new
    patched = patch_sanitized(text, sanitized, [(5, 12, "<PERSON_9>", "PERSON"),
                                                (22, 29, "<PERSON_9>", "PERSON")])
    assert patched.text == "Call <PERSON_9> at noon; <PERSON_9> knows Bo."
    for c in patched.changes:
        assert patched.text[c.start:c.end] == c.replacement
        assert text[c.source_start:c.source_end] == c.original
    # a value inside a change already made is left as it was
    assert patch_sanitized(text, sanitized, [(5, 8, "<PERSON_9>", "PERSON")]).text == \
        sanitized.text


def test_the_memory_finds_earlier_values_in_other_spellings(tmp_path):
    from preflight.core.sanitize.operators import value_key
    from preflight.core.send.request_scope import remembered_spans

    memory = PlaceholderMemory.open("file:/claims.txt", tmp_path)
    memory.record("placeholder", "PERSON", value_key("Tomás Ferreira", "PERSON"),
                  "<PERSON_1>")
    memory.record("placeholder", "PHONE_NUMBER",
                  value_key("+351 21 555 0147", "PHONE_NUMBER"), "<PHONE_NUMBER_1>")
    memory.record("placeholder", "PERSON", value_key("mark", "PERSON"), "<PERSON_2>")
    memory.save()
    later = PlaceholderMemory.open("file:/claims.txt", tmp_path)
    text = ("Claim filed by TOMÁS FERREIRA (tel. +351-21-555-0147). Please mark the "
            "form as received.")
    found = {(text[s.start:s.end], s.type) for s in remembered_spans(text, later)}
    assert found == {("TOMÁS FERREIRA", "PERSON"), ("+351-21-555-0147", "PHONE_NUMBER")}


def test_a_memory_written_before_the_value_index_still_answers(tmp_path):
    from preflight.core.sanitize.operators import value_key
    from preflight.core.sanitize.placeholder_memory import memory_path

    memory = PlaceholderMemory.open("file:/old.txt", tmp_path)
    memory.record("placeholder", "EMAIL_ADDRESS", value_key("ana@firma.example", ""),
                  "<EMAIL_ADDRESS_3>")
    memory.save()
    path = memory_path("file:/old.txt", tmp_path)
    data = json.loads(path.read_text())
    del data["values"]                      # the file as an earlier version wrote it
    path.write_text(json.dumps(data))
    old = PlaceholderMemory.open("file:/old.txt", tmp_path)
    assert old.label_of(value_key("ANA@firma.example", "")) == "EMAIL_ADDRESS"
    assert old.label_of(value_key("bo@firma.example", "")) is None


def test_a_text_that_cannot_be_patched_blocks_instead(server, tmp_path):
    from dataclasses import replace

    doc = ("We met April Lee at the supplier day and agreed on the pilot; April Lee will "
           "send the figures on Monday.")
    detector = SplitVerdictDetector("April Lee")
    session = _session(server, tmp_path, detector)
    spans, sanitized, vault = _sanitized(doc, detector)
    # a mechanism that rewrote a word without saying so: its changes no longer map the
    # text, so nothing can be placed in it
    odd = replace(sanitized, text=sanitized.text.replace("figures", "numbers"))
    plan = session.prepare_send(doc, "loop", odd.method, SanitizeParams(),
                                Task("question", question="When will April Lee send them?"),
                                spans=spans, sanitized=odd, vault=vault)
    assert plan.sanitized.text == odd.text
    assert {(f.value, f.part) for f in plan.blocking} == {("April Lee", "document")}
