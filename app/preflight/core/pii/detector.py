"""``PiiDetector``: Presidio + spaCy with Preflight's own recognizers, deny/allow lists
and overlap resolution.

The spaCy pipeline is the ``ner`` model of :class:`preflight.runtime.models.ModelManager`
(or a folder given explicitly). When it is missing or broken the detector falls back to a
blank English pipeline: pattern recognizers (emails, cards, keys, addresses...) keep
working, names/organizations/places are not found, and ``detector.warnings`` says so.

Everything runs offline: e-mail validation uses the public-suffix snapshot bundled with
tldextract (see :mod:`preflight.core.pii.recognizers.email`).

Thread safety: the engine is built lazily on first use; ``detect`` may be called from
several threads, calls are serialized by an internal lock (spaCy pipelines are not
documented as thread-safe).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from preflight.core.config import DetectionSettings
from preflight.core.errors import ConfigError, InputError, ModelUnavailableError
from preflight.core.pii.entities import STATISTICAL_RECOGNIZERS, category_of, why_for
from preflight.core.pii.overlaps import resolve_overlaps
from preflight.core.pii.recognizers.base import WHY_KEY
from preflight.core.pii.recognizers.lists import DenyListRecognizer, term_pattern
from preflight.core.types import Category, Span

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
NER_RECOGNIZERS = STATISTICAL_RECOGNIZERS
# Acronyms the small model likes to call organizations next to the numbers they label.
_NOT_ORGS = {"SSN", "IBAN", "DOB", "API", "ID", "PIN", "CVV", "URL", "IP", "PO", "ZIP",
             "SWIFT", "BIC", "VAT", "EIN", "NHS", "AWS", "IT", "HR", "FYI", "ASAP", "CC",
             "BCC", "RE", "FW", "FWD", "PDF", "OK", "TIN", "ITIN", "MRN", "PS"}
# Field labels and words the small model tags as a one-word person name.
_NOT_NAMES = {"tel", "fax", "card", "email", "e-mail", "phone", "mobile", "host", "dob", "bank",
              "contact", "shipping", "al", "iban", "ssn", "re", "fwd", "subject", "dear",
              "hi", "hello", "thanks", "regards", "cheers", "mr", "mrs", "ms", "dr",
              "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
              "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
              "sunday"}


class PiiDetector:
    """Detects PII spans in a text (see the module docstring for models and threads).

    Args:
        settings: deny/allow lists, score threshold, language (defaults if None).
        nlp_model_path: a spaCy model folder; None asks the model manager for "ner".
        analyzer: a ready Presidio ``AnalyzerEngine`` (tests); skips model loading.
    """

    def __init__(
        self,
        settings: DetectionSettings | None = None,
        nlp_model_path: str | Path | None = None,
        analyzer: Any | None = None,
    ) -> None:
        self.settings = settings or DetectionSettings()
        self._nlp_model_path = Path(nlp_model_path) if nlp_model_path else None
        self._analyzer = analyzer
        self._lock = threading.RLock()
        self.warnings: list[str] = []
        self.ner_available: bool | None = None if analyzer is None else True

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
                self._analyzer = build_analyzer(self._load_nlp())
            return self._analyzer

    def _load_nlp(self):
        import spacy

        path = self._nlp_model_path
        try:
            if path is None:
                from preflight.runtime.models import ModelManager

                path = ModelManager().path("ner")
            if not Path(path).is_dir():
                raise ModelUnavailableError(
                    f"The NER model folder {path} does not exist.",
                    "Run `preflight models install --role ner`.",
                )
            # Only the entity recognizer is used. In en_core_web_sm the NER has its own
            # embedding layer, so tok2vec/tagger/parser/lemmatizer can go: same entities,
            # about 40 % less time. Lemmas (Presidio's context words) become lower-case
            # token text.
            nlp = spacy.load(path, exclude=_UNUSED_PIPES)
            self.ner_available = "ner" in nlp.pipe_names
            _add_lower_lemmas(nlp)
            return nlp
        except ModelUnavailableError as err:
            reason = err.message
            hint = err.hint
        except Exception as exc:  # noqa: BLE001 - a damaged model folder fails in many ways
            reason = f"The NER model at {path} cannot be loaded ({type(exc).__name__})."
            hint = "Run `preflight models install --role ner` to restore it."
        log.warning("NER model unavailable; using pattern recognizers only")
        self.warnings.append(
            f"{reason} Names, organizations and places are not detected until it is "
            f"restored. {hint}".strip()
        )
        self.ner_available = False
        nlp = spacy.blank("en")
        _add_lower_lemmas(nlp)
        return nlp

    # -- detection -----------------------------------------------------------------------

    def detect(self, text: str) -> list[Span]:
        """Non-overlapping spans sorted by start; offsets are code points into ``text``."""
        if not isinstance(text, str):
            raise InputError("The text to scan is not a string.", "Pass the document text.")
        if not text.strip():
            return []
        analyzer = self._engine()
        settings = self.settings
        deny = DenyListRecognizer(settings.deny_list) if settings.deny_list else None
        with self._lock:
            results = analyzer.analyze(
                text=text,
                language="en",
                ad_hoc_recognizers=[deny] if deny is not None else None,
            )
        deny_category = _deny_category(settings)
        terms = _DocTerms(text)
        allow = term_pattern(settings.allow_list)
        allowed_ranges = [m.span() for m in allow.finditer(text)] if allow else []
        allowed_values = {t.strip().casefold() for t in settings.allow_list if t.strip()}
        spans: list[Span] = []
        for r in results:
            span = _to_span(text, r, deny_category, terms)
            if span is None:
                continue
            if span.type != "DENY_LIST":
                if span.score < settings.score_threshold:
                    continue
                if text[span.start:span.end].casefold() in allowed_values or any(
                    a <= span.start and span.end <= b for a, b in allowed_ranges
                ):
                    continue
            spans.append(span)
        spans.extend(propagate_values(text, spans, allowed_values))
        return resolve_overlaps(spans)


#: Types whose value, once detected, is searched for everywhere else in the document: a
#: name the model tags in the greeting but not in the signature must not leak.
_PROPAGATED_CATEGORIES = {Category.DIRECT_IDENTIFIER, Category.SECRET}
_PROPAGATED_TYPES = {"ORGANIZATION", "LOCATION", "DATE_OF_BIRTH", "STREET_ADDRESS"}
_NAME_PART = re.compile(r"[^\W\d_][\w'’-]*")
PROPAGATED = "PropagatedValue"


def propagate_values(text: str, spans: list[Span], allowed: set[str] = frozenset()) -> list[Span]:
    """Spans for every other whole-word occurrence of a detected value.

    Matching ignores case and runs of whitespace. For person names, each capitalized part
    of three letters or more (a first or last name written alone) is propagated too, but
    only where it appears capitalized. Returned spans may overlap the input; the caller
    resolves overlaps.
    """
    by_value: dict[str, Span] = {}
    parts: dict[str, Span] = {}
    for span in spans:
        if span.category not in _PROPAGATED_CATEGORIES and span.type not in _PROPAGATED_TYPES:
            continue
        value = text[span.start:span.end].strip()
        if len(value) < 2 or value.casefold() in allowed:
            continue
        best = by_value.get(value.casefold())
        if best is None or span.score > best.score:
            by_value[value.casefold()] = span
        if span.type == "PERSON":
            for m in _NAME_PART.finditer(value):
                part = m.group()
                if len(part) >= 3 and part[0].isupper() and part.lower() not in _NOT_NAMES \
                        and part.casefold() not in allowed:
                    parts.setdefault(part, span)
    found: list[Span] = []
    seen = {(s.start, s.end) for s in spans}
    covered: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        covered.setdefault(s.type, []).append((s.start, s.end))

    def add(pattern: re.Pattern[str] | None, lookup, case_sensitive: bool) -> None:
        if pattern is None:
            return
        for m in pattern.finditer(text):
            if (m.start(), m.end()) in seen:
                continue
            key = m.group() if case_sensitive else re.sub(r"\s+", " ", m.group()).casefold()
            source = lookup(key)
            if source is None or (case_sensitive and not m.group()[0].isupper()):
                continue
            if any(a <= m.start() and m.end() <= b for a, b in covered.get(source.type, ())):
                continue  # already inside a detection of that type
            seen.add((m.start(), m.end()))
            label = source.type.replace("_", " ").lower()
            found.append(Span(
                m.start(), m.end(), source.type, source.category,
                round(source.score * 0.95, 4), PROPAGATED,
                f"Same {'name' if case_sensitive else 'value'} as a {label} detected "
                "elsewhere in this document",
            ))

    norm = {re.sub(r"\s+", " ", k): v for k, v in by_value.items()}
    add(term_pattern(by_value_source(text, by_value)), norm.get, False)
    if parts:
        part_re = re.compile(r"(?<![\w])(?:" + "|".join(
            re.escape(p) for p in sorted(parts, key=len, reverse=True)) + r")(?![\w])")
        add(part_re, parts.get, True)
    return found


def by_value_source(text: str, by_value: dict[str, Span]) -> list[str]:
    """The detected values as written in the text (terms for :func:`term_pattern`)."""
    return [text[s.start:s.end].strip() for s in by_value.values()]


_UNUSED_PIPES = ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer",
                 "morphologizer"]
_LEMMA_PIPE = "preflight_lower_lemma"


def _add_lower_lemmas(nlp) -> None:
    """Give every token its lower-cased text as lemma (Presidio matches context words
    against lemmas; the real lemmatizer needs the tagger, which we skip for speed)."""
    from spacy.language import Language

    if not Language.has_factory(_LEMMA_PIPE):
        @Language.component(_LEMMA_PIPE)
        def lower_lemma(doc):
            for token in doc:
                token.lemma_ = token.lower_
            return doc

    if _LEMMA_PIPE not in nlp.pipe_names:
        nlp.add_pipe(_LEMMA_PIPE, last=True)


def _deny_category(settings: DetectionSettings) -> Category:
    value = getattr(settings, "deny_list_category", None) or Category.DIRECT_IDENTIFIER.value
    try:
        return Category(value)
    except ValueError:
        raise ConfigError(
            f"Unknown deny-list category '{value}'.",
            "Use one of: " + ", ".join(c.value for c in Category) + ".",
        ) from None


class _DocTerms:
    """Facts about the document that tell NER junk from names (computed once per text)."""

    _DEFINED = re.compile(r"\(([A-Z][A-Z0-9]{1,7}s?)\)")

    def __init__(self, text: str) -> None:
        self.text = text
        self.defined_acronyms = set(self._DEFINED.findall(text))
        self._lower_words: set[str] | None = None

    def used_in_lower_case(self, word: str) -> bool:
        if self._lower_words is None:
            self._lower_words = set(re.findall(r"\b[a-z][a-z'-]+\b", self.text))
        return word.lower() in self._lower_words


def _to_span(text: str, result: Any, deny_category: Category,
             terms: _DocTerms | None = None) -> Span | None:
    """A Presidio result → a cleaned :class:`Span` (None when cleaning leaves nothing)."""
    meta = result.recognition_metadata or {}
    recognizer = meta.get("recognizer_name") or "unknown"
    start, end, typ = result.start, result.end, result.entity_type
    if recognizer in NER_RECOGNIZERS:
        start, end = _trim(text, start, end)
        if start >= end or not _plausible_ner(typ, text[start:end], terms):
            return None
    elif start >= end:
        return None
    why = meta.get(WHY_KEY) or why_for(
        recognizer, typ, bool(meta.get("is_score_enhanced_by_context"))
    )
    category = deny_category if typ == "DENY_LIST" else category_of(typ)
    return Span(start, end, typ, category, float(min(1.0, result.score)), recognizer, why)


_ET_AL = re.compile(r"[ \t]+et[ \t]+al\.?$")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Strip punctuation, a possessive 's and a citation's "et al" from NER spans."""
    # names start and end with a letter or digit (drops quotes, brackets, emoji, dashes)
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not text[end - 1].isalnum():
        end -= 1
    m = _ET_AL.search(text, start, end)
    if m:
        end = m.start()
    for suffix in ("'s", "’s"):
        if text[start:end].endswith(suffix) and end - start > 2:
            end -= 2
    return start, end


_DIGIT = re.compile(r"\d")


def _plausible_ner(typ: str, value: str, terms: _DocTerms | None = None) -> bool:
    """Drop the small NER model's typical junk: numbers called names, field labels and
    common words called persons, acronyms the text defines as terms called organizations."""
    if typ in ("PERSON", "LOCATION", "NRP"):
        if _DIGIT.search(value) or not any(c.isalpha() for c in value):
            return False
        if typ == "PERSON" and " " not in value:
            if value.lower() in _NOT_NAMES:
                return False
            if terms is not None and value[:1].isupper() and terms.used_in_lower_case(value):
                return False
        return True
    if typ == "ORGANIZATION":
        if value.upper() in _NOT_ORGS:
            return False
        if terms is not None and value in terms.defined_acronyms:
            return False
        digits = sum(c.isdigit() for c in value)
        return any(c.isalpha() for c in value) and digits / len(value) < 0.3
    return True


def build_analyzer(nlp, extra_recognizers: Iterable[Any] = ()):
    """A Presidio ``AnalyzerEngine`` on an already loaded spaCy pipeline, with Presidio's
    English recognizers (e-mail swapped for the offline one) plus Preflight's own."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine

    from preflight.core.pii.recognizers.addresses import StreetAddressRecognizer
    from preflight.core.pii.recognizers.confidential import (
        AssetRecognizer, HealthRecognizer, MedicalRecognizer, MoneyRecognizer,
    )
    from preflight.core.pii.recognizers.dates import DateOfBirthRecognizer
    from preflight.core.pii.recognizers.email import OfflineEmailRecognizer
    from preflight.core.pii.recognizers.financial import (
        BankAccountRecognizer, CardNumberRecognizer, IbanChecksumRecognizer,
    )
    from preflight.core.pii.recognizers.names import (
        AllCapsNameRecognizer, EmailNameRecognizer, NameCueRecognizer,
    )
    from preflight.core.pii.recognizers.orgs import OrganizationCueRecognizer
    from preflight.core.pii.recognizers.phones import PhonePatternRecognizer
    from preflight.core.pii.recognizers.secrets import (
        HighEntropyTokenRecognizer, SecretsRecognizer,
    )

    engine = SpacyNlpEngine(
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
    for recognizer in (
        OfflineEmailRecognizer(), SecretsRecognizer(), HighEntropyTokenRecognizer(),
        CardNumberRecognizer(), IbanChecksumRecognizer(), BankAccountRecognizer(),
        StreetAddressRecognizer(), DateOfBirthRecognizer(), PhonePatternRecognizer(),
        HealthRecognizer(), MedicalRecognizer(), MoneyRecognizer(), AssetRecognizer(),
        AllCapsNameRecognizer(), NameCueRecognizer(), EmailNameRecognizer(),
        OrganizationCueRecognizer(), *extra_recognizers,
    ):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])
