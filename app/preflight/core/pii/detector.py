"""``PiiDetector``: Presidio + spaCy with Preflight's own recognizers, deny/allow lists
and overlap resolution, run on the canonical view of the text.

The spaCy pipeline is a model folder given to the constructor, or the ``ner`` model of a
:class:`~preflight.core.ports.ModelLocator`. When it is missing, unset or broken the
detector falls back to a blank English pipeline: pattern recognizers (emails, cards,
keys, addresses...) keep working, names/organizations/places are not found, and
``detector.warnings`` says so.

Evasions: detection runs on :func:`~preflight.core.pii.canonical.canonicalize`'s view
(zero-width characters removed, look-alike letters mapped, ``[at]``/``[dot]`` e-mails,
spelled or spaced digits...) and every span is mapped back to the original characters it
covers.

Paragraphs and long documents: the NER model reads the canonical text paragraph by
paragraph, the recognizers unit by unit, a few short paragraphs at once
(:mod:`~preflight.core.pii.paragraphs`, whose caches let ``detect_incremental`` re-analyze
only edited units and the model re-read only edited paragraphs); a paragraph longer than
``WINDOW_CHARS`` is analyzed in windows
cut at line or word breaks, overlapping by ``WINDOW_OVERLAP`` so an entity on a boundary
is found whole, once (each window keeps the spans that start in its own part). Person
checks and value propagation then run once over the whole document. Memory and time grow
linearly with the length (see ``preflight_eval.bench_detect_limits``).

Everything runs offline: e-mail validation uses the public-suffix snapshot bundled with
tldextract (see :mod:`preflight.core.pii.recognizers.email`).

Two cores: with ``ner_process=True`` (what the product's services build) a text's NER
model work runs in a helper process while this one runs the recognizers that need no
entities (:mod:`~preflight.core.pii.early_pass`) and the rest of each window's analysis
as its entities arrive (:mod:`~preflight.core.pii.ner_process`): the same results, less
waiting; anything the helper cannot do, this process does itself.

Thread safety: the engine is built lazily on first use; ``detect`` may be called from
several threads, analysis calls are serialized by an internal lock (spaCy pipelines are
not documented as thread-safe).

Size (~760 lines): one pipeline in order (canonical view, windows, recognizers, the name
and reference passes, overlaps, the company floor) passing one list of spans; the passes
themselves live in their own modules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from preflight.core.config import DetectionSettings
from preflight.core.errors import ConfigError, InputError, ModelUnavailableError
from preflight.core.pii.canonical import canonicalize
from preflight.core.pii.cleaning import DocTerms, to_span
from preflight.core.pii.entities import EVIDENCE_KEY
from preflight.core.pii.date_spans import complete_dates, drop_vague_dates
from preflight.core.pii.floor import NO_FLOOR, DetectionFloor
from preflight.core.pii.generic_refs import refine_named_spans
from preflight.core.pii.names import complete_names, covering_surname_given
from preflight.core.pii.overlaps import resolve_overlaps, uncovered
from preflight.core.pii.paragraphs import (
    ParagraphCache, RawResult, detection_units, paragraph_units,
)
from preflight.core.pii.steps import DetectionSteps, Progress
from preflight.core.pii.person_evidence import (
    add_lexicon, known_names, pipeline_lexicon, recheck_organizations, recheck_persons,
)
from preflight.core.pii.presidio_loader import import_presidio
from preflight.core.pii.propagate import PROPAGATED, name_parts, propagate_values
from preflight.core.ports import ModelLocator
from preflight.core.types import Category, Evidence, Span

__all__ = ["PiiDetector", "build_analyzer", "propagate_values", "PROPAGATED", "text_windows",
           "NER_MAPPING"]

log = logging.getLogger(__name__)

#: spaCy labels → Presidio entity types (ORG is ON, unlike Presidio's default config).
NER_MAPPING = {
    "PERSON": "PERSON", "PER": "PERSON",
    "ORG": "ORGANIZATION",
    "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION",
    "NORP": "NRP",
    "DATE": "DATE_TIME", "TIME": "DATE_TIME",
}
NER_IGNORED = ["CARDINAL", "EVENT", "LANGUAGE", "LAW", "MONEY", "ORDINAL", "PERCENT",
               "PRODUCT", "QUANTITY", "WORK_OF_ART"]
#: Detection window size and overlap (characters of canonical text).
WINDOW_CHARS = 16_000
WINDOW_OVERLAP = 800
#: Characters the NER model reads per batch (``nlp.pipe``): a batch shares the model's
#: per-call work among short paragraphs, and its memory grows with its tokens (64 full
#: windows at once took 130 MB more on a 1 MB document than one window at a time).
NER_BATCH_CHARS = WINDOW_CHARS
#: The CLI's words; the window's come from ``fix="install-models"``. A degraded
#: detector's warning (shown by both faces) names no command: see ``_load_nlp``.
_INSTALL_HINT = "Run `preflight models install --role ner` (or `./setup.sh run`)."
_WARNING_HINT = ("Reinstall the local models: Settings → Local models in the window, "
                 "`preflight models install` in a terminal.")


class PiiDetector:
    """Detects PII spans in a text (see the module docstring for models and threads).

    Args:
        settings: deny/allow lists, score threshold, language (defaults if None).
        nlp_model_path: a spaCy model folder (wins over ``models``).
        analyzer: a ready Presidio ``AnalyzerEngine`` (tests); skips model loading.
        models: a :class:`ModelLocator` asked for the ``"ner"`` model folder.
    With neither a path nor a locator, the detector runs without the NER model and says
    so in ``warnings``.
    """

    def __init__(
        self,
        settings: DetectionSettings | None = None,
        nlp_model_path: str | Path | None = None,
        analyzer: Any | None = None,
        *,
        models: ModelLocator | None = None,
        floor: DetectionFloor = NO_FLOOR,
        ner_process: bool = False,
    ) -> None:
        self.settings = settings or DetectionSettings()
        # the company's floor: the types the allow-list and threshold cannot loosen
        self.floor = floor
        check_threshold(self.settings)
        self._nlp_model_path = Path(nlp_model_path) if nlp_model_path else None
        self._models = models
        self._analyzer = analyzer
        self._lock = threading.RLock()
        self.warnings: list[str] = []
        self.ner_available: bool | None = None if analyzer is None else True
        self._units = ParagraphCache()
        # the NER model's entities of each paragraph: an edit reads its paragraph again,
        # not the others of its unit
        self._entities = ParagraphCache()
        self._lexicon: Any = None      # English dictionary words, once the model loads
        self._ner_process = ner_process
        self.ner_helper: Any = None     # the NerProcess reading long texts, when started

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Build the engine now (otherwise the first ``detect`` does it)."""
        self._engine()

    def _engine(self):
        with self._lock:
            if self._analyzer is None:
                if (self.settings.language or "en") != "en":
                    raise ConfigError(
                        f"Detection language '{self.settings.language}' is not supported.",
                        "Set the detection language to 'en' in the settings.",
                    )
                # before spaCy: loading a pipeline imports Presidio through its spaCy
                # factory entry point, which would bypass the lean import
                import_presidio()
                nlp = self._load_nlp()
                self._lexicon = pipeline_lexicon(nlp)
                self._analyzer = build_analyzer(nlp)
            return self._analyzer

    def _model_path(self) -> Path:
        if self._nlp_model_path is not None:
            path = self._nlp_model_path
        elif self._models is not None:
            path = Path(self._models.path("ner"))
        else:
            raise ModelUnavailableError("No NER model was configured for detection.",
                                        _INSTALL_HINT, fix="install-models")
        if not path.is_dir():
            raise ModelUnavailableError(f"The NER model folder {path} does not exist.",
                                        _INSTALL_HINT, fix="install-models")
        return path

    def _load_nlp(self):
        import spacy

        path: Path | None = None
        try:
            path = self._model_path()
            # Only the entity recognizer is used. In en_core_web_sm the NER has its own
            # embedding layer, so tok2vec/tagger/parser/lemmatizer can go: same entities,
            # about 40 % less time. Lemmas (Presidio's context words) are the lower-case
            # token text; the model's products run on numpy's BLAS (lean_nlp.py).
            from preflight.core.pii.lean_nlp import load_pipeline

            helper = None
            if self._ner_process:       # loads its copy while this process loads its own
                from preflight.core.pii.ner_process import shared_helper

                helper = shared_helper(path, _UNUSED_PIPES)
            nlp = load_pipeline(path, _UNUSED_PIPES)
            self.ner_available = "ner" in nlp.pipe_names
            add_lexicon(nlp, path)
            self.ner_helper = helper if self.ner_available else None
            return nlp
        except ModelUnavailableError as err:
            reason = err.message
            # a hint of the locator's own (a chosen model that is gone) when it has no
            # face-specific remedy; the install remedy in words both faces can show
            hint = _WARNING_HINT if err.fix else err.hint
        except Exception as exc:  # noqa: BLE001 - a damaged model folder fails in many ways
            reason = f"The NER model at {path} cannot be loaded ({type(exc).__name__})."
            hint = _WARNING_HINT
        log.warning("NER model unavailable; using pattern recognizers only")
        self.warnings.append(
            f"{reason} Names, organizations and places are not detected until it is "
            f"restored. {hint}".strip()
        )
        self.ner_available = False
        return spacy.blank("en")

    # -- detection -----------------------------------------------------------------------

    def detect(self, text: str, *, progress: Progress | None = None,
               cancel: threading.Event | None = None) -> list[Span]:
        """Non-overlapping spans sorted by start; offsets are code points into ``text``
        (the original, whatever the canonical view changed). A full pass: every
        paragraph is analyzed again. ``progress(share, words)`` hears how far the
        analysis is (per detection window); a set ``cancel`` stops it between windows
        with :class:`~preflight.core.errors.Cancelled`."""
        return self._detect(text, reuse=False, progress=progress, cancel=cancel)

    def detect_incremental(self, text: str, *, progress: Progress | None = None,
                           cancel: threading.Event | None = None) -> list[Span]:
        """:meth:`detect`, re-analyzing only paragraphs not seen in an earlier call (the
        live preview while the user edits); the result equals a full pass (see
        :mod:`~preflight.core.pii.paragraphs`)."""
        return self._detect(text, reuse=True, progress=progress, cancel=cancel)

    def _detect(self, text: str, reuse: bool, progress: Progress | None = None,
                cancel: threading.Event | None = None) -> list[Span]:
        if not isinstance(text, str):
            raise InputError("The text to scan is not a string.", "Pass the document text.")
        check_threshold(self.settings)
        if not text.strip():
            return []
        analyzer = self._engine()
        canon = canonicalize(text)
        spans = self._detect_canonical(canon.text, analyzer, reuse, DetectionSteps(progress, cancel))
        if canon.is_identity:
            return spans
        mapped = []
        for span in spans:
            start, end = canon.to_original(span.start, span.end)
            mapped.append(dataclasses.replace(span, start=start, end=end))
        return resolve_overlaps(mapped)

    def _analyze_units(self, units: Sequence[str], analyzer, deny,
                       steps: DetectionSteps | None = None,
                       reuse: bool = False) -> list[list[RawResult]]:
        """Presidio's findings in each unit (:func:`~.paragraphs.detection_units`),
        offsets relative to it. The NER model reads each paragraph of a unit on its own,
        all of them as one stream (``nlp.pipe``, batches of up to :data:`NER_BATCH_CHARS`
        characters: a third less time than one call per paragraph, same entities), and
        the recognizers read the unit with its paragraphs' entities. While the helper
        process reads a window's entities, this process runs the recognizers that do not
        need them (:mod:`~preflight.core.pii.early_pass`). With ``reuse`` (an edit), a
        paragraph's entities read by an earlier call are taken again. An analyzer without
        an NLP engine of its own (a test double) is asked window by window."""
        from preflight.core.pii.ner_process import Found

        windows = [(i, *w) for i, u in enumerate(units) for w in text_windows(u)]
        texts = [units[i][start:end] for i, start, end, _, _ in windows]
        pieces = [paragraph_units(t) for t in texts]
        wanted = [[t[a:b] for a, b in found] for t, found in zip(texts, pieces)]
        uses = Counter(p for found in wanted for p in found)
        first_use: dict[str, int] = {}
        for k, found in enumerate(wanted):
            for p in found:
                first_use.setdefault(p, k)
        extra = {"ad_hoc_recognizers": [deny]} if deny is not None else {}
        out: list[list[RawResult]] = [[] for _ in units]
        engine = getattr(analyzer, "nlp_engine", None)
        steps = steps or DetectionSteps(None, None)
        steps.start(len(windows))
        work = _EarlyWork(analyzer, engine, texts, steps)
        held: dict[str, Any] = {}       # a paragraph's entities, until its last use
        if reuse and engine is not None:
            for p in first_use:
                if (known := self._entities.get((p,))) is not None:
                    held[p] = Found(known)
        # each distinct paragraph read once (a repeated signature, a quoted reply)
        to_read = [p for p in first_use if p not in held]
        with self._lock, _one_blas_thread(engine), contextlib.closing(self._ner_artifacts(
                engine, to_read, work, [first_use[p] for p in to_read])) as artifacts:
            for k, ((i, start, _end, own_start, own_end), text) in enumerate(
                    zip(windows, texts)):
                steps.step()
                early, tokens = work.of(k)
                read = []
                for p in wanted[k]:
                    if p in held:
                        item = held.pop(p)
                    else:
                        item = next(artifacts)
                        if engine is not None:
                            self._entities.put((p,), _entities_of(item))
                    uses[p] -= 1
                    if uses[p]:
                        # a repeated paragraph, kept as its entities: a Doc held to the end
                        # of a long text would hold the memory of all of them
                        held[p] = (item if engine is None or isinstance(item, Found)
                                   else Found(_entities_of(item)))
                    read.append(item)
                nlp_artifacts = _with_entities(engine, text, pieces[k], read, tokens)
                if nlp_artifacts is not None:
                    extra["nlp_artifacts"] = nlp_artifacts
                with early:
                    results = analyzer.analyze(text=text, language="en", **extra)
                out[i] += self._own_results(units[i], results, start, own_start,
                                            own_end)
        return out

    def _ner_artifacts(self, engine: Any, texts: list[str], work: _EarlyWork,
                       read_by: list[int]) -> Iterator[Any]:
        """Presidio's NLP artifacts of each text in order, read by this process; from the
        moment the helper process can take the rest (loaded, free) and the rest is long
        enough, read side by side with it (:func:`~.ner_process.side_by_side`), the early
        pass of the windows from there on in ``work`` (``read_by[n]``: the window text
        ``n`` belongs to). The first texts are offered to the helper before this returns,
        so a pass the helper takes from the start is known to be one."""
        if engine is None:
            return (None for _ in texts)
        from preflight.core.pii.ner_process import (
            PARALLEL_MIN_CHARS, STREAM_BATCH_CHARS, side_by_side,
        )

        def handed(first: int) -> Iterator[Any] | None:
            rest = texts[first:]
            if self.ner_helper is None or sum(map(len, rest)) < PARALLEL_MIN_CHARS:
                return None
            small = list(_batches(rest, STREAM_BATCH_CHARS))
            answers = self.ner_helper.stream(small)
            if answers is None:
                return None
            work.start(read_by[first])
            return side_by_side(engine, small, answers, work.ahead)

        def read() -> Iterator[Any]:
            done = 0
            for batch in _batches(texts, NER_BATCH_CHARS):
                if done and (rest := handed(done)) is not None:
                    yield from rest
                    return
                for _, artifacts in engine.process_batch(batch, "en",
                                                         batch_size=len(batch)):
                    yield artifacts
                done += len(batch)

        return handed(0) or read()

    def _own_results(self, paragraph: str, results, start: int, own_start: int,
                     own_end: int) -> list[RawResult]:
        """The results of the window at ``start`` that belong to it, relative to the
        paragraph."""
        out = []
        for r in results:
            # A finding belongs to the window whose own part it starts in; one that
            # begins at this window's left edge and runs into its own part is the rest
            # of a value longer than the overlap (a pasted key blob) that the previous
            # window cut off: kept too, the same-type merge joins the pieces.
            cut_off = start > 0 and r.start == 0 and r.end + start > own_start
            if own_start <= r.start + start < own_end or cut_off:
                meta = dict(r.recognition_metadata or {})
                a, b = r.start + start, r.end + start
                pieces = [(a, b)]
                if Evidence.STATISTICAL in meta.get(EVIDENCE_KEY, Evidence.RULE):
                    person = r.entity_type == "PERSON"
                    pieces = _first_line(paragraph, a, b, self._lexicon, names_below=person)
                    if person:
                        pieces = [(x, _before_address(paragraph, x, y)) for x, y in pieces]
                out.extend(RawResult(x, y, r.entity_type, r.score, meta)
                           for x, y in pieces if x < y)
        return out

    def _detect_canonical(self, text: str, analyzer, reuse: bool = False,
                          steps: DetectionSteps | None = None) -> list[Span]:
        from preflight.core.pii.recognizers.lists import (
            deny_recognizer, deny_variant, term_pattern,
        )

        settings = self.settings
        deny = deny_recognizer(settings)
        deny_category = _deny_category(settings)
        terms = DocTerms(text, self._lexicon)
        allow = term_pattern(settings.allow_list)
        allowed_ranges = [m.span() for m in allow.finditer(text)] if allow else []
        allowed_values = {t.strip().casefold() for t in settings.allow_list if t.strip()}
        variant = (id(analyzer), deny_variant(settings))
        spans: list[Span] = []
        units = detection_units(text)
        per_unit = self._units.results_many(
            [text[a:b] for a, b in units], variant, reuse,
            lambda ps: self._analyze_units(ps, analyzer, deny, steps, reuse))
        for (p_start, _p_end), found in zip(units, per_unit):
            for r in found:
                span = to_span(text, r.shifted(p_start), deny_category, terms)
                if span is None:
                    continue
                if span.type != "DENY_LIST":
                    if span.score < self.floor.threshold(settings.score_threshold,
                                                         span.type, span.category):
                        continue
                    guarded = self.floor.guards(span.type, span.category)
                    if not guarded and (text[span.start:span.end].casefold() in allowed_values
                                        or any(a <= span.start and span.end <= b
                                               for a, b in allowed_ranges)):
                        continue
                spans.append(span)
        spans = recheck_organizations(text, recheck_persons(text, spans, terms),
                                      self._lexicon)
        spans = refine_named_spans(text, spans, terms)
        spans = complete_dates(text, drop_vague_dates(text, spans))
        spans = complete_names(text, covering_surname_given(text, spans, terms), terms)
        # a guarded value on the allow-list is still copied to its other occurrences
        kept = {v.casefold() for s in spans if self.floor.guards(s.type, s.category)
                for v in (text[s.start:s.end].strip(), *(
                    name_parts(text[s.start:s.end].strip()) if s.type == "PERSON" else ()))}
        spans.extend(propagate_values(text, spans, allowed_values - kept))
        final = resolve_overlaps(spans)
        # A span that lost an overlap leaves its text bare where the winner does not
        # reach ("Red Hat Linux", an organization, lost to a person "Linux" copied from
        # elsewhere): a value detected anywhere is covered there too.
        bare = uncovered(spans, final)
        refill = propagate_values(text, final, allowed_values - kept, within=bare) if bare else []
        return resolve_overlaps(final + refill) if refill else final


def _one_blas_thread(engine: Any) -> contextlib.AbstractContextManager[Any]:
    """:func:`~preflight.core.pii.lean_nlp.one_blas_thread` around a spaCy engine's
    work (Presidio is imported once there is an engine)."""
    if engine is None:
        return contextlib.nullcontext()
    from preflight.core.pii.lean_nlp import one_blas_thread

    return one_blas_thread()


def _batches(texts: Sequence[str], chars: int) -> Iterator[list[str]]:
    """``texts`` in order, in runs of at most ``chars`` characters (a longer text alone)."""
    batch: list[str] = []
    size = 0
    for text in texts:
        if batch and size + len(text) > chars:
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


def _first_line(text: str, start: int, end: int, lexicon: Any = None,
                names_below: bool = False) -> list[tuple[int, int]]:
    """A NER span cut to its first non-blank line: the model reads a signature's name and
    the address line under it as one name ("Carolyn Kline\n4724"), which would lose the
    name to the address when the two overlap. A name that wrapped prose broke across
    two lines stays whole (:func:`_wrapped_name`). With ``names_below`` (a person span),
    the lines right under the first that hold only capitalized census names are kept
    too, each a span of its own: an Outlook header wraps "On Behalf Of\nRobert\nHarley\n
    Sent:", which the model reads as one name, and a rule's "Harley" inside it was
    dropped with it."""
    if _wrapped_name(text, start, end, lexicon):
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    pos = start
    for line in text[start:end].split("\n"):
        a = pos + len(line) - len(line.lstrip())
        b = a + len(line.strip())
        pos += len(line) + 1
        if not pieces:
            if a < b:
                pieces.append((a, b))
        elif names_below and _names_only(text[a:b]):
            pieces.append((a, b))
        else:
            break
    return pieces or [(start, start)]


def _names_only(line: str) -> bool:
    """One to three capitalized words, each a census given name or surname."""
    words = line.split()
    names = known_names()
    return (0 < len(words) <= 3 and bool(_NAME_WORDS.fullmatch(line))
            and all(w[0].isupper() and w.casefold() in names for w in words))


_NAME_WORDS = re.compile(r"[^\W\d_][\w'’.-]*(?:[ \t]+[^\W\d_][\w'’.-]*)*")
#: A line at least this long before its last words is prose wrapped at a fixed width
#: (e-mail, a man page), not a signature, a list or a table.
WRAPPED_LINE_CHARS = 40


def _wrapped_name(text: str, start: int, end: int, lexicon: Any = None) -> bool:
    """The span is a name broken by the wrap of a prose line: one line break, the first
    part closing a long line of prose and the second opening the next line, both only
    words ("… written by Susan Angebranndt, Raymond\nDrewry, Philip Karlton"), and each
    word of the second a listed name or no dictionary word ("Tom\nSent", "Linux\nMandrake"
    are a name and the next line's first word)."""
    value = text[start:end]
    if value.count("\n") != 1:
        return False
    first, second = value.split("\n")
    line_start = text.rfind("\n", 0, start) + 1
    if not (first and second and first == first.rstrip() and second == second.lstrip()
            and _NAME_WORDS.fullmatch(first) and _NAME_WORDS.fullmatch(second)
            and len(value.split()) <= 4 and start - line_start >= WRAPPED_LINE_CHARS
            and text[line_start:start].strip()):
        return False
    names = known_names()
    return all(w.casefold() in names or (lexicon is not None and w.casefold() not in lexicon)
               for w in second.split())


# an address (its whole first word), a bracket, or a table's column gap
_ADDRESS_MARK = re.compile(r"[ \t]*(?:[<(\[|]|[^\s<>()\[\]|]*@)|[ \t]{3,}|\t")


def _before_address(text: str, start: int, end: int) -> int:
    """Where a NER person span ends before an address it ran into: the model reads a
    changelog's " -- Lee Garrett <debian@…>  Tue" or a THANKS file's "Adrian Bunk
    bunk@stusta.de" as one name, which then loses to the e-mail address it overlaps (and
    the name went out)."""
    m = _ADDRESS_MARK.search(text, start, end)
    return m.start() if m and m.start() > start else end


def check_threshold(settings: DetectionSettings) -> None:
    """Refuse a score threshold outside 0–1 (above 1 would silently turn detection off)."""
    value = settings.score_threshold
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"The detection score threshold {value!r} is outside 0–1.",
            "Set detection.score_threshold to a number between 0 and 1 (default 0.35).",
        )


def _with_entities(engine: Any, text: str, pieces: list[tuple[int, int]],
                   read: list[Any], tokens: Any) -> Any:
    """``text``'s artifacts from what the NER model read of each of its ``pieces`` (its
    paragraphs): artifacts, or the helper's entities (:class:`~.ner_process.Found`),
    put on ``tokens`` (this process's tokens of ``text``) or on new ones; ``text`` read
    here whole if an entity does not fall on this tokenizer's tokens. None without an
    engine."""
    from preflight.core.pii.ner_process import Found

    if engine is None:
        return None
    if len(read) == 1 and pieces[0] == (0, len(text)) and not isinstance(read[0], Found):
        return read[0]
    entities = [(start + a, end + a, label)
                for (a, _b), item in zip(pieces, read) for start, end, label in _entities_of(item)]
    try:
        return engine.artifacts_with_entities(text, entities, "en", tokens)
    except ValueError:
        return next(a for _, a in engine.process_batch([text], "en"))


def _entities_of(item: Any) -> tuple[tuple[int, int, str], ...]:
    """``(start_char, end_char, label)`` of the entities the NER model read in a text:
    the helper's (:class:`~.ner_process.Found`) or those of artifacts read here."""
    from preflight.core.pii.ner_process import Found

    if isinstance(item, Found):
        return tuple(item.entities)
    return tuple((e.start_char, e.end_char, e.label_) for e in item.tokens.ents)


class _EarlyWork:
    """The early pass (:mod:`~preflight.core.pii.early_pass`) of a detection pass's
    windows, from the one the helper process starts reading at: each window's before its
    entities are taken, and the next windows' (up to :attr:`AHEAD` ahead) whenever this
    process would otherwise wait for the helper's answer (not after a Cancel: the pass
    stops at its next window)."""

    AHEAD = 8

    def __init__(self, analyzer: Any, engine: Any, texts: list[str],
                 steps: DetectionSteps) -> None:
        self.analyzer, self.engine, self.texts = analyzer, engine, texts
        self._cancel = steps.cancel
        self.on = False
        self._current = 0
        self._next = 0                  # the first window whose early pass has not run
        self._done: dict[int, tuple[Any, Any]] = {}

    def start(self, first: int) -> None:
        """The helper reads the entities of the windows from ``first`` on."""
        self.on = True
        self._next = max(self._next, first)

    def of(self, k: int) -> tuple[Any, Any]:
        """Window ``k``'s early results (a context for its ``analyze``) and its tokens
        (``None`` while the helper is not used)."""
        self._current = k
        if not self.on:
            return contextlib.nullcontext(), None
        if k not in self._done:
            self._run(k)
        return self._done.pop(k)

    def ahead(self) -> bool:
        """Run the next window's early pass; False when none is left to run."""
        k = max(self._next, self._current + 1)
        if not self.on or k >= len(self.texts) or k > self._current + self.AHEAD:
            return False
        if self._cancel is not None and self._cancel.is_set():
            return False
        self._run(k)
        return True

    def _run(self, k: int) -> None:
        from preflight.core.pii.early_pass import run_early

        tokens = self.engine.artifacts_with_entities(self.texts[k], (), "en")
        self._done[k] = (run_early(self.analyzer, self.texts[k], tokens), tokens)
        self._next = max(self._next, k + 1)


def text_windows(text: str, size: int = WINDOW_CHARS,
                 overlap: int = WINDOW_OVERLAP) -> list[tuple[int, int, int, int]]:
    """Detection windows ``(start, end, own_start, own_end)``: the ``own`` parts tile the
    text, cut at paragraph, line or word breaks; each window adds up to ``overlap``
    characters of context on both sides."""
    n = len(text)
    if n <= size + overlap:
        return [(0, n, 0, n)]
    cuts = [0]
    while n - cuts[-1] > size + overlap:
        cuts.append(_break_before(text, cuts[-1] + size, cuts[-1] + size // 2))
    cuts.append(n)
    out = []
    for a, b in zip(cuts, cuts[1:]):
        start = 0 if a == 0 else _break_before(text, a - overlap, a - 2 * overlap)
        end = n if b == n else _break_after(text, b + overlap, b + 2 * overlap)
        out.append((start, end, a, b))
    return out


def _break_before(text: str, pos: int, lo: int) -> int:
    """The last paragraph/line/word break in ``[lo, pos]`` (the position after it)."""
    lo = max(lo, 0)
    for sep in ("\n\n", "\n", " "):
        i = text.rfind(sep, lo, pos)
        if i >= 0:
            return i + len(sep)
    return pos


def _break_after(text: str, pos: int, hi: int) -> int:
    """The first line/word break in ``[pos, hi]`` (the position of it)."""
    hi = min(hi, len(text))
    for sep in ("\n", " "):
        i = text.find(sep, pos, hi)
        if i >= 0:
            return i
    return min(pos, len(text))


_UNUSED_PIPES = ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer",
                 "morphologizer"]


def _deny_category(settings: DetectionSettings) -> Category:
    value = getattr(settings, "deny_list_category", None) or Category.DIRECT_IDENTIFIER.value
    try:
        return Category(value)
    except ValueError:
        raise ConfigError(
            f"Unknown deny-list category '{value}'.",
            "Use one of: " + ", ".join(c.value for c in Category) + ".",
        ) from None


def build_analyzer(nlp, extra_recognizers: Iterable[Any] = (),
                   regions: tuple[str, ...] | None = None):
    """A Presidio ``AnalyzerEngine`` on an already loaded spaCy pipeline, with Presidio's
    English recognizers (e-mail swapped for the offline one, phone numbers parsed for
    ``regions``, default :func:`phone_regions`) plus Preflight's own."""
    import_presidio()
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration

    from preflight.core.pii.lean_nlp import LeanSpacyNlpEngine

    from preflight.core.pii.recognizers.addresses import StreetAddressRecognizer
    from preflight.core.pii.recognizers.config_secrets import ConfigSecretRecognizer
    from preflight.core.pii.recognizers.confidential import (
        AssetRecognizer, HealthRecognizer, MedicalRecognizer, MoneyRecognizer,
    )
    from preflight.core.pii.recognizers.dates import DateOfBirthRecognizer
    from preflight.core.pii.recognizers.email import OfflineEmailRecognizer
    from preflight.core.pii.recognizers.financial import (
        BankAccountRecognizer, CardNumberRecognizer, IbanChecksumRecognizer,
    )
    from preflight.core.pii.recognizers.hosts import (
        InternalHostRecognizer, WholeHostUrlRecognizer,
    )
    from preflight.core.pii.recognizers.identifiers import (
        ContextualNhsRecognizer, LabeledIdentifierRecognizer,
    )
    from preflight.core.pii.recognizers.national_ids import NationalIdRecognizer
    from preflight.core.pii.recognizers.names import (
        AllCapsNameRecognizer, CopyrightHolderRecognizer, EmailNameRecognizer,
        MailHeaderNameRecognizer, NameCueRecognizer, PeopleLineRecognizer,
    )
    from preflight.core.pii.recognizers.orgs import FacilityRecognizer, OrganizationCueRecognizer
    from preflight.core.pii.recognizers.person_cues import (
        GivenNameInProseRecognizer, IntroducedNameRecognizer, NameShapeRecognizer,
    )
    from preflight.core.pii.recognizers.phones import (
        PhoneNumberParserRecognizer, PhonePatternRecognizer, phone_regions,
    )
    from preflight.core.pii.recognizers.reference_numbers import ReferenceNumberRecognizer
    from preflight.core.pii.recognizers.script_names import ScriptNameRecognizer
    from preflight.core.pii.recognizers.secrets import (
        CueSecretRecognizer, HighEntropyTokenRecognizer, SecretsRecognizer,
    )

    engine = LeanSpacyNlpEngine(
        models=[{"lang_code": "en", "model_name": "preloaded"}],
        ner_model_configuration=NerModelConfiguration(
            model_to_presidio_entity_mapping=dict(NER_MAPPING),
            labels_to_ignore=list(NER_IGNORED),
        ),
    )
    engine.nlp = {"en": nlp}  # a loaded pipeline; Presidio's load() only takes names
    registry = RecognizerRegistry(supported_languages=["en"])
    presidio_log = logging.getLogger("presidio-analyzer")
    level = presidio_log.level
    presidio_log.setLevel(logging.ERROR)  # it warns once per non-English recognizer skipped
    try:
        registry.load_predefined_recognizers(languages=["en"], nlp_engine=engine)
    finally:
        presidio_log.setLevel(level)
    registry.remove_recognizer("EmailRecognizer")
    registry.remove_recognizer("PhoneRecognizer")  # 8 regions by default: 8 passes
    registry.remove_recognizer("NhsRecognizer")    # a checksum one number in 11 passes
    registry.remove_recognizer("UrlRecognizer")    # stopped inside host names
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    for recognizer in (
        PhoneRecognizer(supported_regions=regions or phone_regions()),
        OfflineEmailRecognizer(), SecretsRecognizer(), HighEntropyTokenRecognizer(),
        ConfigSecretRecognizer(), CueSecretRecognizer(),
        CardNumberRecognizer(), IbanChecksumRecognizer(), BankAccountRecognizer(),
        StreetAddressRecognizer(), DateOfBirthRecognizer(), PhonePatternRecognizer(),
        PhoneNumberParserRecognizer(regions or phone_regions()),
        HealthRecognizer(), MedicalRecognizer(), MoneyRecognizer(), AssetRecognizer(),
        AllCapsNameRecognizer(), NameCueRecognizer(), MailHeaderNameRecognizer(),
        EmailNameRecognizer(), PeopleLineRecognizer(), CopyrightHolderRecognizer(),
        NameShapeRecognizer(), GivenNameInProseRecognizer(), IntroducedNameRecognizer(),
        ScriptNameRecognizer(),
        OrganizationCueRecognizer(), LabeledIdentifierRecognizer(), ContextualNhsRecognizer(),
        ReferenceNumberRecognizer(), NationalIdRecognizer(), WholeHostUrlRecognizer(),
        InternalHostRecognizer(), FacilityRecognizer(), *extra_recognizers,
    ):
        registry.add_recognizer(recognizer)
    from preflight.core.pii.recognizers.base import (
        DIGIT_PATTERN_RECOGNIZERS, evidence_of, skip_without_digits,
    )

    for recognizer in registry.recognizers:
        evidence_of(recognizer)   # each declares its evidence: refused here, not mid-scan
        if type(recognizer).__name__ in DIGIT_PATTERN_RECOGNIZERS:
            skip_without_digits(recognizer)
    from preflight.core.pii.context import BisectContextEnhancer, grouped_context_pass

    return grouped_context_pass(AnalyzerEngine)(registry=registry, nlp_engine=engine, supported_languages=["en"],
                          context_aware_enhancer=BisectContextEnhancer())
