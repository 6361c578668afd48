"""Long documents: the context-window rule, the first part that fits, a chunked summary.

One rule for both faces (:func:`context_fit`): the request's tokens (the messages as
sent) plus the answer length asked for must fit the provider's ``context_tokens``. A
request over it is refused before detection or confirmation, with two choices:

- the first part that fits (:func:`first_part`: cut at a paragraph end);
- a chunked summary (:func:`split_sanitized`, :func:`prepare_chunked`,
  :func:`run_chunked`): the sanitized payload is split at paragraph ends into parts that
  fit, each part is one request through the ordinary send path (its own plan, re-scan and
  audit row), then the parts' summaries — the provider's raw answers, placeholders kept —
  are summarized in one last request, re-scanned too. Only the display is restored.

A cut never falls inside a change of the sanitized text, so each part is an ordinary
(original part, sanitized part, spans) triple: the re-scan of a part knows exactly which
of its values the policy protected. Progress is ``progress(done, total, words)``; a set
``cancel`` stops between steps and inside a streaming request.

Size (~470 lines): the split (cuts that never fall inside a change, parts re-cut until
their exact request fits), the plan and the result a confirmation and a pane read like a
single send's, and the run; one flow, read top to bottom.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from preflight.core.config import ProviderSettings
from preflight.core.errors import Cancelled, ConfigError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.plan import Confirmation, Finding, SendBlocked, SendPlan
from preflight.core.tasks import Task
from preflight.core.types import SanitizedText, Span

Progress = Callable[[int, int, str], None]

#: Where a part may end, best first: a blank line (a paragraph), a line end, a sentence
#: end, any space. A part is cut at the best kind that gives parts that fit.
_BREAKS = (re.compile(r"\n[ \t]*\n\s*"), re.compile(r"\n\s*"),
           re.compile(r"(?<=[.!?])\s+"), re.compile(r"\s+"))

FINAL_NOTE = ("The document below is made of the summaries of the consecutive parts of "
              "one long document, in order. Summarize the whole document from them.")


@dataclass(frozen=True)
class ContextFit:
    """Whether a request fits the provider's context window."""

    request_tokens: int        # the messages as sent
    answer_tokens: int         # the answer length asked for
    context_tokens: int        # the provider's window
    token_method: str = ""

    @property
    def needed(self) -> int:
        return self.request_tokens + self.answer_tokens

    @property
    def fits(self) -> bool:
        return self.needed <= self.context_tokens

    @property
    def budget(self) -> int:
        """Tokens of the request a window leaves once the answer is reserved."""
        return self.context_tokens - self.answer_tokens

    def sentence(self, provider: str) -> str:
        return (f"This request needs {self.needed:,} tokens ({self.request_tokens:,} to send "
                f"+ {self.answer_tokens:,} for the answer); {provider}'s context window "
                f"holds {self.context_tokens:,}.")


def context_fit(cost: Any, provider: ProviderSettings) -> ContextFit:
    """The rule, from a :class:`~preflight.core.send.cost.CostEstimate` of the request."""
    return ContextFit(cost.input_tokens, cost.max_output_tokens, provider.context_tokens,
                      cost.token_method)


@dataclass(frozen=True)
class Part:
    """One piece of a sanitized document, with the original text it came from."""

    original: str
    sanitized: SanitizedText
    spans: tuple[Span, ...]
    start: int                 # where it starts in the whole sanitized text
    end: int


def _cuts(sanitized: SanitizedText, start: int, end: int, pattern: re.Pattern[str],
          starts: list[int], ends: list[int]) -> list[int]:
    """Positions in (start, end) after a break of ``pattern``, never inside a change."""
    out = []
    for m in pattern.finditer(sanitized.text, start, end):
        p = m.end()
        if not start < p < end:
            continue
        j = bisect_left(ends, p + 1)             # first change ending after p
        if j < len(starts) and starts[j] < p:
            continue                             # p lies inside that change
        out.append(p)
    return out


def cut_points(sanitized: SanitizedText, count: Callable[[str], int], budget: int,
               a: int = 0, b: int | None = None) -> list[int]:
    """Offsets of the sanitized text in [a, b) where parts start (``a`` first): each part's pieces
    ``count`` at most ``budget`` tokens together, cut at the best break
    (:data:`_BREAKS`) that achieves it. Each piece is counted once, so the time grows
    with the text, not with (parts x text). Raises ValueError when a piece between two
    allowed cuts is over the budget (one huge change, a line without spaces)."""
    starts = [c.start for c in sanitized.changes]
    ends = [c.end for c in sanitized.changes]
    text = sanitized.text

    def split(a: int, b: int, level: int, tokens: int | None = None) -> list[int]:
        if (tokens if tokens is not None else count(text[a:b])) <= budget:
            return [a]
        if level == len(_BREAKS):
            raise ValueError("a piece of the document without any break is too long")
        cuts = _cuts(sanitized, a, b, _BREAKS[level], starts, ends)
        if not cuts:
            return split(a, b, level + 1)
        out: list[int] = []
        cur, acc = a, 0
        for s, e in zip([a] + cuts, cuts + [b]):
            n = count(text[s:e])
            if s > cur and acc + n > budget:
                out += split(cur, s, level + 1, acc)
                cur, acc = s, 0
            acc += n
        return out + split(cur, b, level + 1, acc)

    b = len(text) if b is None else b
    return split(a, b, 0) if b > a else [a]


def _source_at(sanitized: SanitizedText, pos: int, original_len: int) -> int:
    """Where position ``pos`` of the sanitized text sits in the original (changes that
    start at ``pos`` belong to what follows)."""
    changes = sanitized.changes
    if pos >= len(sanitized.text):
        return original_len
    k = bisect_left([c.start for c in changes], pos)   # changes[:k] start before pos
    if k == 0:
        return pos
    last = changes[k - 1]
    return pos + last.source_end - last.end


def slice_sanitized(original: str, sanitized: SanitizedText, spans: Sequence[Span],
                    a: int, b: int) -> Part:
    """The part [a, b) of ``sanitized`` (a and b outside every change) as its own triple."""
    sa = _source_at(sanitized, a, len(original))
    sb = _source_at(sanitized, b, len(original))
    last = b >= len(sanitized.text)
    changes = tuple(replace(c, start=c.start - a, end=c.end - a,
                            source_start=c.source_start - sa, source_end=c.source_end - sa)
                    for c in sanitized.changes
                    if a <= c.start and (c.start < b or (last and c.start == b)))
    report = sanitized.report
    if report.kept_spans is not None:
        report = replace(report, kept_spans=tuple(
            (s - sa, min(e, sb) - sa) for s, e in report.kept_spans if sa <= s < sb))
    part_spans = tuple(replace(s, start=s.start - sa, end=min(s.end, sb) - sa)
                       for s in spans if sa <= s.start < sb)
    return Part(original[sa:sb], replace(sanitized, text=sanitized.text[a:b],
                                         changes=changes, report=report),
                part_spans, a, b)


@dataclass(frozen=True)
class Fitter:
    """How parts are sized for one task and provider: ``count`` a text's tokens, the
    ``budget`` a part's text may take (the window less the answer and the request's own
    words), and the exact check ``fits`` on the request body a part makes."""

    count: Callable[[str], int]
    budget: int
    fits: Callable[[str], bool]


def fitter(session: Any, task: Task, provider: ProviderSettings) -> Fitter:
    """The :class:`Fitter` of ``session`` (its token counter and request builder)."""
    empty = session.estimate("", task, provider)
    budget = context_fit(empty, provider).budget - empty.input_tokens
    if budget <= 0:
        raise ConfigError(
            f"{provider.name}'s context window ({provider.context_tokens:,} tokens) cannot "
            f"hold the request's instructions and an answer of {empty.max_output_tokens:,} "
            "tokens.", "Set a shorter answer length (Settings → Answers) or the provider's "
                       "real context window (Settings → Providers).")
    return Fitter(lambda t: session.token_counter.count(t).tokens, budget,
                  lambda t: context_fit(session.estimate(t, task, provider), provider).fits)


def split_sanitized(original: str, sanitized: SanitizedText, spans: Sequence[Span],
                    fit: Fitter, limit: int | None = None) -> list[Part]:
    """``sanitized`` in consecutive parts whose requests fit (see :func:`cut_points`);
    ``limit``: at most that many parts, from the start (the first part alone: 1)."""
    return [slice_sanitized(original, sanitized, spans, a, b)
            for a, b in _bounds(sanitized, fit, 0, len(sanitized.text), fit.budget, limit)]


def _bounds(sanitized: SanitizedText, fit: Fitter, a: int, b: int, budget: int,
            limit: int | None) -> list[tuple[int, int]]:
    """The parts of [a, b), each checked on its exact request; one that is over (tokens
    counted apart and together differ a little) is cut again with a smaller budget."""
    cuts = cut_points(sanitized, fit.count, budget, a, b)
    out: list[tuple[int, int]] = []
    for x, y in zip(cuts, cuts[1:] + [b]):
        if limit is not None and len(out) >= limit:
            break
        if fit.fits(sanitized.text[x:y]):
            out.append((x, y))
        elif budget < 16:
            raise ValueError("no part of the document fits the context window")
        else:
            out += _bounds(sanitized, fit, x, y, budget * 9 // 10,
                           None if limit is None else limit - len(out))
    return out if limit is None else out[:limit]


def first_part(original: str, sanitized: SanitizedText, spans: Sequence[Span],
               fit: Fitter) -> Part:
    """The beginning of the document that fits, cut at the best break."""
    return split_sanitized(original, sanitized, spans, fit, limit=1)[0]


@dataclass(frozen=True)
class ChunkedPlan:
    """A chunked summary, ready to confirm: one plan per part (each re-scanned); the last
    request (the summaries' summary) is planned and re-scanned when the parts' answers
    are in. The confirmation covers the union of the parts' findings."""

    parts: tuple[SendPlan, ...]
    final_task: Task
    original: str = field(repr=False, default="")        # the whole document
    spans: tuple[Span, ...] = field(repr=False, default=())
    vault: Any = field(repr=False, default=None)

    @property
    def requests(self) -> int:
        return len(self.parts) + 1

    @property
    def provider(self) -> ProviderSettings:
        return self.parts[0].provider

    @property
    def findings(self) -> tuple[Finding, ...]:
        out: dict[str, Finding] = {}
        for plan in self.parts:
            for f in plan.findings:
                if f.id not in out or (f.blocking and not out[f.id].blocking):
                    out[f.id] = f
        return tuple(sorted(out.values(), key=lambda f: not f.blocking))

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.blocking)

    @property
    def prior_sends(self) -> tuple[Any, ...]:
        return tuple({p.record_id: p for plan in self.parts for p in plan.prior_sends}
                     .values())

    @property
    def input_tokens(self) -> int:
        return sum(p.cost.input_tokens for p in self.parts)

    # -- what a confirmation shows, as a single plan has it (the first part's request) --
    @property
    def cost(self) -> Any:
        """Every part's tokens and cost, plus the last request's answer (its input, the
        parts' answers, is at most one answer length per part)."""
        from preflight.core.send.cost import CostEstimate, price

        first = self.parts[0].cost
        answers = first.max_output_tokens * self.requests
        tokens_in = self.input_tokens + first.max_output_tokens * len(self.parts)
        return CostEstimate(tokens_in, answers, first.token_method,
                            price(tokens_in, 0, self.provider),
                            price(0, answers, self.provider), first.priced)

    def __getattr__(self, name: str) -> Any:
        # request, payload, task, method, epsilon, sanitized, notices, ledger…: the first
        # part's (the dialog shows its request and says how many follow)
        if name.startswith("_") or name in ("parts", "final_task"):
            raise AttributeError(name)
        return getattr(self.parts[0], name)


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled("Stopped by you.", "Nothing more was sent.")


def prepare_chunked(session: Any, original: str, sanitized: SanitizedText,
                    spans: Sequence[Span], task: Task, provider: str | ProviderSettings,
                    *, vault: Any = None, memory: Any = None,
                    progress: Progress | None = None,
                    cancel: threading.Event | None = None) -> ChunkedPlan:
    """Split, then plan and re-scan every part (``progress``: "Checking part 3 of 12")."""
    settings = session.provider(provider)
    part_task = Task("summarize", note=task.note)
    final_task = Task("summarize", note=f"{FINAL_NOTE} {task.note}".strip())
    if progress is not None:
        progress(0, 1, "Splitting the document at paragraph ends")
    parts = split_sanitized(original, sanitized, spans, fitter(session, part_task, settings))
    eps = sanitized.epsilon
    whole = _whole_values(original, sanitized, spans)
    plans = []
    for i, part in enumerate(parts):
        _check_cancel(cancel)
        if progress is not None:
            progress(i, len(parts), f"Checking part {i + 1} of {len(parts)}")
        plan = session.prepare_send(
            part.original, settings, sanitized.method, SanitizeParams(epsilon=eps),
            part_task, spans=list(part.spans), sanitized=part.sanitized, vault=vault,
            memory=memory, features={})
        plans.append(_with_whole_document(plan, part, whole))
    return ChunkedPlan(tuple(plans), final_task, original, tuple(spans), vault)


@dataclass(frozen=True)
class _Value:
    value: str
    type: str
    category: Any
    score: float


class _NoFreshDetection:
    """A detector that finds nothing: the extra pass runs the re-scan's leak finders."""

    warnings: list[str] = []

    def detect(self, text: str) -> list[Span]:
        return []


def _whole_values(original: str, sanitized: SanitizedText, spans: Sequence[Span]
                  ) -> list[_Value]:
    """The values the policy protects anywhere in the document (what the re-scan of the
    whole payload would search for)."""
    from preflight.core.pii.floor import BLOCKING_CATEGORIES

    kept = sanitized.report.kept_spans
    kept_set = set(kept or ())
    return [_Value(original[s.start:s.end], s.type, s.category, s.score) for s in spans
            if ((s.start, s.end) not in kept_set if kept is not None
                else s.category in BLOCKING_CATEGORIES)]


def _with_whole_document(plan: SendPlan, part: Part, whole: list[_Value]) -> SendPlan:
    """``plan`` whose findings also block a value protected elsewhere in the document and
    written as it is in this part (its own re-scan knows only the part's detections)."""
    from preflight.core.send.rescan import rescan

    out = {f.id: f for f in plan.findings}
    # the part's own detections were searched for by its plan's re-scan; searching here
    # for the whole document's values alone lets every part share one finder (the
    # re-scan builds it once per set of values: most of this step's time)
    for f in rescan(_NoFreshDetection(), part.original, part.sanitized, plan.request,
                    (), whole):
        if f.blocking and (f.id not in out or not out[f.id].blocking):
            out[f.id] = f
    return replace(plan, findings=tuple(sorted(out.values(),
                                               key=lambda f: (not f.blocking, f.part, f.start))))


@dataclass(frozen=True)
class ChunkedResult:
    """The answers of a chunked summary. ``final`` is None when the summaries' summary
    was not sent (its re-scan found what the confirmation did not cover): then the
    answer is the parts' summaries, restored, and ``withheld`` says why."""

    summaries: tuple[Any, ...]      # one SendResult per part
    final: Any                      # the SendResult of the summaries' summary, or None
    withheld: str = ""

    @property
    def _sent(self) -> tuple[Any, ...]:
        return (*self.summaries, *((self.final,) if self.final is not None else ()))

    @property
    def answer(self) -> str:
        if self.final is not None:
            return self.final.answer
        return "\n\n".join(f"Part {i + 1}: {r.answer.strip()}"
                            for i, r in enumerate(self.summaries))

    @property
    def answer_raw(self) -> str:
        if self.final is not None:
            return self.final.answer_raw
        return "\n\n".join(r.answer_raw.strip() for r in self.summaries)

    @property
    def notes(self) -> tuple[str, ...]:
        last = self.final if self.final is not None else self.summaries[-1]
        return tuple(last.notes) + ((self.withheld,) if self.withheld else ())

    @property
    def record_ids(self) -> tuple[int, ...]:
        return tuple(r.record_id for r in self._sent)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self._sent)

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self._sent)

    def __getattr__(self, name: str) -> Any:
        # finish_reason, answer_check…: the last answer's (what is shown)
        if name.startswith("_") or name in ("summaries", "final", "withheld"):
            raise AttributeError(name)
        return getattr(self.final if self.final is not None else self.summaries[-1], name)


def run_chunked(session: Any, plan: ChunkedPlan, confirmation: Confirmation, *,
                progress: Progress | None = None, cancel: threading.Event | None = None,
                on_chunk: Callable[[str], None] | None = None) -> ChunkedResult:
    """Send every part, then the summaries' summary (streamed to ``on_chunk``).

    Each request passes :meth:`SendSession.execute` (company rules, confirmation, audit
    row). The last payload is the parts' raw answers (placeholders as the provider wrote
    them), re-scanned against the whole original before it leaves: a blocking finding the
    confirmation does not cover withholds it (the result then holds the parts' summaries
    and says why: :class:`ChunkedResult`). Nothing is learnt
    from these answers: the prediction was made for one request on the whole text."""
    total = plan.requests
    for part in plan.parts:          # every part's rules before the first request leaves
        session.check(part, confirmation)
    results = []
    for i, part in enumerate(plan.parts):
        _check_cancel(cancel)
        if progress is not None:
            progress(i, total, f"Summarizing part {i + 1} of {len(plan.parts)}")
        results.append(session.execute(part, confirmation, cancel=cancel, learn=False))
    _check_cancel(cancel)
    if progress is not None:
        progress(len(plan.parts), total, "Summarizing the summaries")
    first = plan.parts[0]
    summaries = SanitizedText("\n\n".join(r.answer_raw.strip() for r in results),
                              first.sanitized.method)
    final_plan = session.prepare_send(
        plan.original, plan.provider, first.method, SanitizeParams(epsilon=first.epsilon),
        plan.final_task, spans=list(plan.spans), sanitized=summaries, vault=plan.vault,
        features={})
    own = {r.record_id for r in results}
    if final_plan.prior_sends and all(p.record_id in own for p in final_plan.prior_sends):
        # the whole document's fingerprint may match a part sent a moment ago (a part of
        # most of the text): that is this confirmed plan's own request, not a resend
        confirmation = replace(confirmation, resend_acknowledged=True)
    try:
        session.check(final_plan, confirmation)
    except SendBlocked as blocked:       # nothing of it left; the parts' answers stay
        return ChunkedResult(tuple(results), None, (
            f"The summary of the summaries was not sent: {blocked.message} The parts' "
            "summaries are shown instead; send them again after protecting those values."))
    final = session.execute(final_plan, confirmation, on_chunk=on_chunk, cancel=cancel,
                            learn=False)
    if progress is not None:
        progress(total, total, "Done")
    return ChunkedResult(tuple(results), final)
