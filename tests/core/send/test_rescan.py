"""The re-scan blocks leaks, not noise: the real detector (Presidio + spaCy) on news-like
text, the real placeholder operator, a request built by the real provider client.

``policy_output`` stands in for the lead's ``policy_apply`` for policies whose actions are
only placeholder and keep: the same contract (method = the policy's name,
``report.policy`` = ``Policy.summary()``, ``report.kept_spans`` = the kept source
ranges), the real placeholder operator on the protected spans."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import pytest

from _models import require_model
from preflight.core.config import ProviderSettings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.operators import PlaceholderOperator
from preflight.core.sanitize.policy import PRESETS, Action, Policy
from preflight.core.send.plan import Finding
from preflight.core.send.providers import create_client
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.send.rescan import rescan
from preflight.core.tasks import SUMMARIZE, Task
from preflight.core.types import Change, SanitizedText, Span

pytestmark = pytest.mark.slow

# "Protect identifiers" with every date kept, so placeholder and keep are its only actions.
POLICY = PRESETS["identifiers"].with_actions(
    {"DATE_TIME": Action.KEEP, "AGE": Action.KEEP, "DATE_OF_BIRTH": Action.KEEP,
     "URL": Action.KEEP})

NEWS = ("STOCKHOLM, March 3 (Reuters) - Swedish truck maker Volvo <VOLV ST> said on Tuesday "
        "that chief executive Martin Lundstedt would meet analysts in Gothenburg, while "
        "shares of satellite group AST SpaceMobile, listed as ASTS ST in Stockholm, rose 4 "
        "percent. Reporting by Johan Ahlander; editing by Susan Fenton.")
TICKERS = ("VOLV ST", "ASTS ST")


@pytest.fixture(scope="module")
def detector():
    from preflight.core.pii.detector import PiiDetector

    return PiiDetector(nlp_model_path=require_model("ner"))


def policy_output(text: str, spans: Sequence[Span], policy: Policy = POLICY) -> SanitizedText:
    actions = [(s, policy.action_for(s, text[s.start:s.end])) for s in spans]
    assert {a for _, a in actions} <= {Action.KEEP, Action.PLACEHOLDER}, "stand-in too simple"
    protected = [s for s, a in actions if a is Action.PLACEHOLDER]
    out = PlaceholderOperator().sanitize(text, protected, SanitizeParams())
    report = replace(out.report, policy=policy.summary(),
                     kept_spans=tuple((s.start, s.end) for s, a in actions if a is Action.KEEP))
    return SanitizedText(out.text, policy.name, out.changes, report)


def findings(detector, text: str, spans: Sequence[Span], sanitized: SanitizedText,
             task: Task = SUMMARIZE) -> tuple[Finding, ...]:
    client = create_client(ProviderSettings("p", "http://127.0.0.1:9/v1", "m"))
    request = client.build_request(task, sanitized.text)
    return rescan(detector, text, sanitized, request, spans)


class TickersReadAsNames:
    """The real detector, plus what the NER model used to say of the tickers in a
    placeholder payload: a PERSON (the detector now retypes most tickers itself, so the
    re-scan's rule for NER-only names is exercised on the model's old reading)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.warnings = inner.warnings

    def detect(self, text: str) -> list[Span]:
        from preflight.core.types import Category

        spans = [s for s in self.inner.detect(text) if text[s.start:s.end] not in TICKERS]
        for t in TICKERS:
            i = text.find(t)
            if i >= 0:
                spans.append(Span(i, i + len(t), "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                                  "SpacyRecognizer", "The NER model tagged it as a name",
                                  NER_EVIDENCE))
        return sorted(spans, key=lambda s: s.start)


def test_a_ticker_the_ner_model_calls_a_person_is_a_note_not_a_block(detector):
    spans = detector.detect(NEWS)
    # The tickers stay in the payload (the user unticked them as false positives; a
    # detector that knows tickers would not flag them in the first place)...
    kept_tickers = [s for s in spans if NEWS[s.start:s.end] not in TICKERS]
    sanitized = policy_output(NEWS, kept_tickers)
    assert all(t in sanitized.text for t in TICKERS)
    assert "Martin Lundstedt" not in sanitized.text and "<PERSON_1>" in sanitized.text
    # ...where the re-scan tags them as names (which used to block the send):
    noisy = TickersReadAsNames(detector)
    found = findings(noisy, NEWS, kept_tickers, sanitized)
    assert [f for f in found if f.blocking] == []
    tickers = [f for f in found if f.value in TICKERS]
    assert tickers and all(f.kind == "note" and "NER" in f.reason for f in tickers)
    # Placeholders the policy wrote and the values it kept are no findings at all.
    assert not any("PERSON_" in f.value or f.value in ("Volvo", "Gothenburg", "Reuters")
                   for f in found)


@pytest.mark.parametrize("value, type_", [
    ("jane.roe@example.com", "EMAIL_ADDRESS"),
    ("DE89 3704 0044 0532 0130 00", "IBAN_CODE"),
    ("4111 1111 1111 1111", "CREDIT_CARD"),
    ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "API_KEY"),
    ("RCCMNL83S18D969H", "NATIONAL_ID"),
    ("build-07.corp.northwind.local", "INTERNAL_HOST"),
])
def test_a_validated_identifier_or_secret_fresh_in_the_payload_blocks(detector, value, type_):
    text = "Volvo said on Tuesday that analysts in Gothenburg would meet its board."
    spans = detector.detect(text)
    sanitized = policy_output(text, spans)
    question = f"Does this change anything for the account of {value} in the report?"
    found = findings(detector, text, spans, sanitized, Task("question", question=question))
    (hit,) = [f for f in found if f.value == value]
    assert (hit.type, hit.kind, hit.blocking, hit.part) == (type_, "validated", True,
                                                            "instruction")


def test_a_protected_person_left_in_the_payload_blocks(detector):
    text = ("Chief executive Martin Lundstedt met analysts in Gothenburg. Later Martin "
            "Lundstedt said margins would improve.")
    spans = detector.detect(text)
    second = text.index("Martin", 20)
    assert any(s.type == "PERSON" and s.start < second for s in spans)
    # A sanitization that missed the second mention:
    sanitized = policy_output(text, [s for s in spans if s.start < second])
    assert sanitized.text.count("Martin Lundstedt") == 1
    found = findings(detector, text, spans, sanitized)
    (leak,) = [f for f in found if f.blocking]
    assert (leak.type, leak.value, leak.kind) == ("PERSON", "Martin Lundstedt", "leak")


def test_a_protected_value_the_mechanism_changed_in_part_blocks_under_its_own_name(detector):
    # d_X drew another token for "jane" and the rest of the address through: the payload
    # holds "narrowly.doe@example.com", which the re-scan detects across the change
    text = "Write to jane.doe@example.com about the merger plan."
    spans = detector.detect(text)
    (email,) = [s for s in spans if s.type == "EMAIL_ADDRESS"]
    at = text.index("jane")
    payload = text.replace("jane", "narrowly", 1)
    change = Change(at, at + len("narrowly"), at, at + 4, "TOKEN", "jane", "narrowly")
    sanitized = SanitizedText(payload, "dx", (change,), replace(
        policy_output(text, []).report, kept_spans=()))
    found = findings(detector, text, spans, sanitized)
    (leak,) = [f for f in found if f.blocking]
    # what leaves is the original's value (the window's "left" list names it so too),
    # not a new address found fresh
    assert (leak.type, leak.value, leak.kind) == ("EMAIL_ADDRESS", text[email.start:email.end],
                                                  "leak")
    assert "partly" in leak.reason


def test_what_a_generalization_keeps_of_a_value_is_no_leak(detector):
    # "3 March 2024" generalized to its year: the re-scan reads "2024" as a date inside
    # the change, which the mechanism wrote on purpose (it blocked every such send once)
    text = "Jane Doe met Max Power on 3 March 2024 about the merger plan."
    spans = detector.detect(text)
    assert any(text[s.start:s.end] == "3 March 2024" for s in spans)
    at = text.index("3 March 2024")
    payload = text.replace("3 March 2024", "2024", 1)
    change = Change(at, at + 4, at, at + len("3 March 2024"), "DATE_TIME", "3 March 2024",
                    "2024")
    sanitized = SanitizedText(payload, "policy", (change,), replace(
        policy_output(text, []).report, kept_spans=()))
    found = findings(detector, text, [s for s in spans if s.type == "DATE_TIME"], sanitized)
    assert [f for f in found if f.blocking] == []


def test_a_kept_organization_in_the_payload_is_no_finding(detector):
    text = "Swedish truck maker Volvo said on Tuesday that Anna Svensson would lead sales."
    spans = detector.detect(text)
    assert any(s.type == "ORGANIZATION" and text[s.start:s.end] == "Volvo" for s in spans)
    sanitized = policy_output(text, spans)
    assert "Volvo" in sanitized.text and "Anna Svensson" not in sanitized.text
    found = findings(detector, text, spans, sanitized)
    assert not any(f.value == "Volvo" for f in found)
    assert [f for f in found if f.blocking] == []
    # The same organization under a policy that protects it would block if left.
    everything = Policy("everything-placeholder", "t", fallback=Action.PLACEHOLDER)
    missed = [s for s in spans if text[s.start:s.end] != "Volvo"]
    out = policy_output(text, missed, everything)
    found = findings(detector, text, spans, SanitizedText(
        out.text, out.method, out.changes, replace(out.report, kept_spans=())))
    assert any(f.value == "Volvo" and f.kind == "leak" and f.blocking for f in found)


@pytest.mark.parametrize("noise", ["company", "Company", "for"])
def test_an_ordinary_word_detected_once_does_not_block_elsewhere(noise):
    """The detector once read an ordinary word as a name; its other occurrences are
    prose, not a leak (the detected one was replaced)."""
    from preflight.core.types import Category

    text = f"{noise} records. The {noise.lower()} will call."
    span = Span(0, len(noise), "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                "SpacyRecognizer", "", NER_EVIDENCE)

    class Quiet:
        warnings: list[str] = []

        def detect(self, text):
            return []

    sanitized = policy_output(text, [span])
    assert noise.lower() in sanitized.text.lower()
    assert [f for f in findings(Quiet(), text, [span], sanitized) if f.blocking] == []


def test_a_name_detected_once_still_blocks_where_it_was_missed():
    from preflight.core.types import Category

    text = "Kline wrote it. Later Kline signed."
    span = Span(0, 5, "PERSON", Category.DIRECT_IDENTIFIER, 0.85, "SpacyRecognizer", "",
                NER_EVIDENCE)

    class Quiet:
        warnings: list[str] = []

        def detect(self, text):
            return []

    sanitized = policy_output(text, [span])
    blocking = [f for f in findings(Quiet(), text, [span], sanitized) if f.blocking]
    assert [f.value for f in blocking] == ["Kline"]


@pytest.mark.parametrize("text, value", [
    ("The minister said closed borders were the biggest detriment to the Soviet Union.\n\n"
     "He pointed to East Germany, where after 15 years of Soviet rule the factories stand "
     "idle.", "Soviet"),
    ("The meeting in Sacramento is billed as a conference of the California Democratic "
     "Council. Much of its strength comes from the fact that every Democratic club of any "
     "size belongs to it.", "Democratic"),
    ("He gets a big kick -- several every Saturday, in fact -- out of football.\n\nThe team "
     "will be heavily favored Saturday over Oklahoma.", "Saturday"),
])
def test_a_value_detected_once_is_protected_at_every_occurrence(detector, text, value):
    """A quasi-identifier the model reads in one sentence and not in the other (a
    nationality, a party, a weekday) is protected wherever it is written under a policy
    that protects its kind: the payload holds none, and the re-scan, which blocks a value
    classified anywhere, has nothing to block (before, "Everything detected" sent nothing
    here: 7 of 133 real texts of policy_accept were blocked so)."""
    spans = detector.detect(text)
    at = [i for i in range(len(text)) if text.startswith(value, i)]
    assert len(at) >= 2
    assert all(any(s.start <= i < s.end for s in spans) for i in at), spans
    out = policy_output(text, spans, PRESETS["everything"])
    assert value not in out.text
    assert [f for f in findings(detector, text, spans, out) if f.blocking] == []
