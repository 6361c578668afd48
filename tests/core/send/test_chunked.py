"""Long documents (core/send/chunked.py): the context rule, parts cut at paragraph ends, a
chunked summary through the ordinary send path on a 0.9 MB document of real text, served
by the loopback provider."""

from __future__ import annotations

import json
import re
import threading

import pytest

from _fakes import FakeCounter, FakeDetector, FakeEmbedder, FakeFlow
from _long_doc import long_document, tab_person_names
from _loopback import Reply
from preflight.core.config import (
    CONTEXT_TOKENS_DEFAULT, ProviderSettings, Settings, load_settings, save_settings,
)
from preflight.core.errors import Cancelled, ConfigError
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.send.audit import AuditLog
from preflight.core.send.chunked import (
    context_fit, first_part, fitter, prepare_chunked, run_chunked, split_sanitized,
)
from preflight.core.send.plan import Confirmation
from preflight.core.send.presets import PRESETS, preset
from preflight.core.send.session import SendSession
from preflight.core.tasks import SUMMARIZE


def _session(server, tmp_path, context: int, names=()) -> SendSession:
    provider = ProviderSettings("loop", server.url, "m-1", context_tokens=context)
    settings = Settings(providers=[provider], default_provider="loop")
    return SendSession(settings, detector=FakeDetector(names=names, cities=()),
                       audit=AuditLog(tmp_path / "audit.sqlite3"), token_counter=FakeCounter(),
                       embedder=FakeEmbedder(), flow=FakeFlow())


def _sanitized(session: SendSession, text: str):
    spans = session.detector.detect(text)
    mech = create_mechanism("placeholder")
    return mech.sanitize(text, spans, SanitizeParams(seed=3)), spans, mech.vault


# -- settings and presets -------------------------------------------------------------

def test_presets_know_their_context_window():
    assert preset("openai").settings().context_tokens == 128_000
    assert preset("gemini").settings().context_tokens == 1_048_576
    assert all(p.settings().context_tokens >= 2048 for p in PRESETS)


def test_older_settings_file_loads_with_the_stated_default(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 2, "providers": [
        {"name": "x", "base_url": "https://api.example.com/v1", "model": "m"}]}))
    assert load_settings(path).providers[0].context_tokens == CONTEXT_TOKENS_DEFAULT
    settings = load_settings(path)
    settings.providers[0].context_tokens = 32_000
    save_settings(settings, path)
    assert load_settings(path).providers[0].context_tokens == 32_000


@pytest.mark.parametrize("bad", [0, 10, -5, "big", 2.5])
def test_a_context_window_out_of_range_names_the_key(tmp_path, bad):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"providers": [
        {"name": "x", "base_url": "https://api.example.com/v1", "model": "m",
         "context_tokens": bad}]}))
    with pytest.raises(ConfigError, match="providers\\[0\\].context_tokens"):
        load_settings(path)


# -- the rule and the split -----------------------------------------------------------

def test_a_09_mb_payload_does_not_fit_a_128k_window(server, tmp_path):
    text = long_document()
    session = _session(server, tmp_path, 128_000)
    fit = context_fit(session.estimate(text, SUMMARIZE, "loop"), session.provider("loop"))
    assert not fit.fits and fit.needed > 200_000
    assert "128,000" in fit.sentence("loop")


def test_parts_fit_cut_at_paragraph_ends_and_cover_the_document(server, tmp_path):
    text = long_document()
    session = _session(server, tmp_path, 32_768, names=tab_person_names())
    sanitized, spans, _vault = _sanitized(session, text)
    fit = fitter(session, SUMMARIZE, session.provider("loop"))
    parts = split_sanitized(text, sanitized, spans, fit)
    assert len(parts) >= 8
    assert "".join(p.sanitized.text for p in parts) == sanitized.text
    assert "".join(p.original for p in parts) == text
    whole = {(s.start, s.end, s.type) for s in spans}
    at = 0
    for p in parts:
        assert fit.fits(p.sanitized.text)
        assert p.start == 0 or re.search(r"\n[ \t]*\n\s*$",          # a paragraph end
                                         sanitized.text[p.start - 200:p.start])
        for s in p.spans:                       # every span at its place in the whole
            assert (s.start + at, s.end + at, s.type) in whole
        at += len(p.original)
        for c in p.sanitized.changes:           # every change still maps both ways
            assert p.sanitized.text[c.start:c.end] == c.replacement
            assert p.original[c.source_start:c.source_end] == c.original
    assert sum(len(p.spans) for p in parts) == len(spans)
    head = first_part(text, sanitized, spans, fit)
    assert head.sanitized.text == parts[0].sanitized.text


def test_a_window_too_small_for_the_answer_is_said_in_words(server, tmp_path):
    session = _session(server, tmp_path, 1024)
    session.settings.answer_max_tokens = 4000
    with pytest.raises(ConfigError, match="context window"):
        fitter(session, SUMMARIZE, session.provider("loop"))


# -- the chunked summary ---------------------------------------------------------------

def test_chunked_summary_of_09_mb_sends_every_part_then_the_summaries(server, tmp_path):
    text = long_document()
    names = tab_person_names()
    session = _session(server, tmp_path, 32_768, names=names)
    sanitized, spans, vault = _sanitized(session, text)
    said: list[str] = []
    plan = prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop", vault=vault,
                           progress=lambda i, n, words: said.append(words))
    n = len(plan.parts)
    assert plan.requests == n + 1
    # surnames written alone block in their part; one confirmation covers the union
    assert {f.id for f in plan.blocking} == {f.id for p in plan.parts for f in p.blocking}
    yes = Confirmation(confirmed=True, overrides=frozenset(f.id for f in plan.blocking))
    assert f"Checking part 3 of {n}" in said
    placeholder = next(c.replacement for c in sanitized.changes)
    server.script(*[Reply(deltas=[f"Part {i} is about {placeholder}."]) for i in range(n)],
                  Reply(deltas=["The whole case."]))
    result = run_chunked(session, plan, yes,
                         progress=lambda i, m, words: said.append(words))
    assert len(server.requests) == n + 1
    assert f"Summarizing part 2 of {n}" in said and "Summarizing the summaries" in said
    bodies = [r.body.decode() for r in server.requests]
    assert not any(name in body for body in bodies for name in names)
    last = json.loads(bodies[-1])["messages"][-1]["content"]
    assert placeholder in last and "Part 0 is about" in last    # raw answers, placeholders
    assert result.answer == "The whole case."
    rows = session.audit.records()
    assert len(rows) == n + 1                                    # one audit row per request


def test_cancel_between_parts_stops_cleanly(server, tmp_path):
    text = long_document()
    session = _session(server, tmp_path, 32_768, names=tab_person_names())
    sanitized, spans, vault = _sanitized(session, text)
    plan = prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop", vault=vault)
    yes = Confirmation(confirmed=True, overrides=frozenset(f.id for f in plan.blocking))
    cancel = threading.Event()
    server.script(*[Reply(deltas=["ok."]) for _ in range(plan.requests)])

    def progress(i, n, words):
        if i == 2:
            cancel.set()

    with pytest.raises(Cancelled):
        run_chunked(session, plan, yes, progress=progress,
                    cancel=cancel)
    assert len(server.requests) == 2


def test_unconfirmed_blocking_finding_of_a_part_stops_before_anything_leaves(server, tmp_path):
    text = long_document()
    session = _session(server, tmp_path, 32_768, names=tab_person_names())
    # the identity output: every name stays, so some part carries a blocking leak
    sanitized = create_mechanism("placeholder").sanitize(text, [], SanitizeParams())
    spans = session.detector.detect(text)
    plan = prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop")
    assert plan.blocking
    with pytest.raises(Exception, match="identifier"):
        run_chunked(session, plan, Confirmation(confirmed=True))
    assert server.requests == []


def test_summaries_carrying_a_protected_name_are_withheld_and_shown(server, tmp_path):
    text = long_document()
    names = tab_person_names()
    session = _session(server, tmp_path, 65_536, names=names)
    sanitized, spans, vault = _sanitized(session, text)
    plan = prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop", vault=vault)
    yes = Confirmation(confirmed=True, overrides=frozenset(f.id for f in plan.blocking))
    n = len(plan.parts)
    # the provider wrote a real name of the document into a summary (it guessed it)
    server.script(*[Reply(deltas=[f"{names[0]} appealed ({i})."]) for i in range(n)])
    result = run_chunked(session, plan, yes)
    assert len(server.requests) == n and result.final is None     # the last never left
    assert "was not sent" in result.withheld and result.answer.startswith("Part 1:")
    assert len(session.audit.records()) == n


class _FirstMentionOnly(FakeDetector):
    """Finds the names in the first 2,000 characters only (a detector that read the
    name once, at its introduction)."""

    def detect(self, text):
        return [s for s in super().detect(text) if s.start < 2000]


def test_a_name_protected_in_one_part_blocks_when_written_in_another(server, tmp_path):
    body = long_document()[:120_000]
    text = "Karin Lindqvist chaired the meeting.\n\n" + body + \
        "\n\nKarin Lindqvist closed the meeting."
    session = _session(server, tmp_path, 8192)
    session._detector = _FirstMentionOnly(names=("Karin Lindqvist",), cities=())
    spans = session.detector.detect(text)
    mech = create_mechanism("placeholder")
    sanitized = mech.sanitize(text, spans, SanitizeParams(seed=3))
    plan = prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop",
                           vault=mech.vault)
    assert len(plan.parts) >= 3
    last = plan.parts[-1]
    assert "Karin Lindqvist" in last.sanitized.text          # the detector missed it there
    assert any(f.value == "Karin Lindqvist" for f in last.blocking)
    with pytest.raises(Exception, match="Lindqvist"):
        run_chunked(session, plan, Confirmation(confirmed=True))
    assert server.requests == []
