"""Features of one sanitization, from which the cloud answer's utility is predicted.

Naming follows the utility-assessor paper: A = ε, B = sim(original, sanitized),
C = sim(original, SLM answer on the original), D = sim(original, SLM answer on the
sanitized text); the target E = sim(original, cloud answer on the sanitized text).

Features come in two tiers:

* **fast** — computed from the texts and the change list alone, no model call
  (ε, method indicator, share of tokens/characters changed, PII items removed/left,
  length). They drive the instant prediction while the user moves the slider.
* **refined** — need the similarity model and the SLM (B, C, D, SLM perplexity).

Every feature is a float; a missing value is NaN (the regressor handles it), e.g. ε for
the classic operators, which instead set their method indicator.

Policies (``core/sanitize/policy.py``) mix mechanisms: some spans get an operator, some are
kept, and d_X may noise the rest. Their outputs are described by three *policy features*
— ``dx_share`` (share of the text's tokens under d_X noise), ``spans_replaced_share``
(share of the detected spans an operator replaced) and ``spans_kept`` (spans the policy
left as written on purpose) — next to the method indicator of the mechanism that
dominates. Rows written before these features existed (a single mechanism each) get them
derived from their method indicator (:func:`derived_policy_features`).

Two *document-form features* say what kind of text the document is, from its characters
and lines alone (:func:`document_form`): ``letter_share`` (letters among its non-space
characters) and ``field_line_share`` (its lines shaped "Label: value", such as an
e-mail's or a memo's headers). A summary lands closer to running prose than to a form of
headers, names and numbers, so they set the level the answer's utility starts from.
Chosen out of fold on the train and calibration documents only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from preflight.core.pii.propagate import trie_regex
from preflight.core.types import SanitizedText, SanitizeReport, Span

# The mechanisms known when the regressor was trained; one indicator each.
METHODS = ("dx", "placeholder", "redact", "delete", "mask", "pseudonym", "generalize")

POLICY_FEATURES = ("dx_share", "spans_replaced_share", "spans_kept")
DOCUMENT_FORM_FEATURES = ("letter_share", "field_line_share")
# Document-level features: the same for every sanitization of one document. The
# "unsanitized" models (the utility expected from sending the original) read only these.
DOCUMENT_FEATURES = ("log_words", "pii_total", *DOCUMENT_FORM_FEATURES)
DOCUMENT_REFINED_FEATURES = ("sim_slm_original", "log_ppl_original")

FAST_FEATURES = (
    "epsilon",           # A (NaN for operators)
    "log_epsilon",
    *(f"method_{m}" for m in METHODS),
    "frac_tokens_changed",
    "frac_chars_changed",
    "pii_total",
    "pii_left",
    "frac_pii_left",
    "log_words",
    "length_ratio",
    *POLICY_FEATURES,
    *DOCUMENT_FORM_FEATURES,
)
REFINED_FEATURES = (
    "sim_sanitized",         # B
    "sim_slm_original",      # C
    "sim_slm_sanitized",     # D
    "slm_d_minus_c",         # D - C: how much the SLM lost to sanitization
    "log_ppl_sanitized",     # SLM perplexity on the (sanitized or corrected) text
    "log_ppl_ratio",         # ... relative to the original's
    "log_ppl_original",      # SLM perplexity on the original (a document feature)
)
ALL_FEATURES = FAST_FEATURES + REFINED_FEATURES
# The SLM's perplexity on the sanitized text and its ratio to the original's: the feature
# pass computes them, no shipped model reads them. Out of fold (158 documents; mean of
# fold assignments 0, 1, 2) the full model fails 28.2 % without them against 27.6 % with
# them (per assignment 28.6/29.7/26.5 against 27.6/28.6/26.6; RMSE 0.0985 against 0.0979),
# while their scoring pass was a quarter of every refined step (0.9 of 3.7 s). ``python -m
# preflight_eval.eval_utility [--seed K]`` prints both models; the assessor runs the pass
# only for a bundle that reads them (an older or a company bundle).
SANITIZED_PERPLEXITY = ("log_ppl_sanitized", "log_ppl_ratio")
FULL_MODEL_FEATURES = tuple(f for f in ALL_FEATURES if f not in SANITIZED_PERPLEXITY)
# What the instant model reads: on a few hundred training rows the per-document extras
# (PII counts, length) let the trees memorize documents instead of learning the effect of
# the change share; the full model keeps them because B, C, D anchor it. The document's
# form is read by both: out of fold on the train and calibration documents it takes the
# instant model's Failed from 38.1 to 29.1 % (the full model's from 26.7 to 24.9 %).
FAST_MODEL_FEATURES = (
    "epsilon",
    *(f"method_{m}" for m in METHODS),
    "frac_tokens_changed",
    "frac_chars_changed",
    "length_ratio",
    *POLICY_FEATURES,
    *DOCUMENT_FORM_FEATURES,
)
PAPER_FEATURES = ("epsilon", "sim_sanitized", "sim_slm_original", "sim_slm_sanitized")
BASELINE_FEATURES = ("epsilon", *(f"method_{m}" for m in METHODS))

_WORD = re.compile(r"\w+", re.UNICODE)
# A line that starts with a short label and a colon: "Subject: ...", "Date: ...".
_FIELD_LINE = re.compile(r"^\s*[\w .-]{1,30}:\s", re.UNICODE)
NAN = float("nan")


@functools.lru_cache(maxsize=8)
def word_count(text: str) -> int:
    """Words of ``text``; cached: every slider step and the scope check count the same
    document again."""
    return len(_WORD.findall(text))


@functools.lru_cache(maxsize=8)
def document_form(text: str) -> tuple[float, float]:
    """(``letter_share``, ``field_line_share``) of a document: letters among its non-space
    characters, and the share of its non-empty lines shaped "Label: value". Cached: the
    slider asks for the same document's form at every ε. NaN for a text without them."""
    visible = sum(not c.isspace() for c in text)
    lines = [line for line in text.splitlines() if line.strip()]
    letters = sum(c.isalpha() for c in text) / visible if visible else NAN
    fields = sum(1 for line in lines if _FIELD_LINE.match(line)) / len(lines) if lines else NAN
    return letters, fields


@dataclass(frozen=True)
class Features:
    """The features of one sanitization, as a typed value.

    A = ``epsilon``, B = ``sim_sanitized``, C = ``sim_slm_original``, D =
    ``sim_slm_sanitized`` (also readable as ``.A`` … ``.D``). The refined ones are NaN
    until :meth:`with_refined` fills them. :meth:`as_dict` gives the flat name → float
    form the regressor, the training rows and JSON use (names in :data:`ALL_FEATURES`).
    """

    epsilon: float                      # A (NaN for the classic operators)
    method: str
    frac_tokens_changed: float
    frac_chars_changed: float
    pii_total: int
    pii_left: int
    words: int                          # words of the original
    length_ratio: float                 # len(sanitized) / len(original)
    dx_share: float = NAN               # share of the text's tokens under d_X noise
    spans_replaced_share: float = NAN   # share of detected spans an operator replaced
    spans_kept: int = 0                 # spans the policy keeps as written on purpose
    letter_share: float = NAN           # the document's form (:func:`document_form`)
    field_line_share: float = NAN
    sim_sanitized: float = NAN          # B
    sim_slm_original: float = NAN       # C
    sim_slm_sanitized: float = NAN      # D
    ppl_sanitized: float = NAN          # SLM perplexity on the (sanitized or repaired) text
    ppl_original: float = NAN
    refined: bool = False

    @property
    def A(self) -> float:  # noqa: N802 - the paper's names
        return self.epsilon

    @property
    def B(self) -> float:  # noqa: N802
        return self.sim_sanitized

    @property
    def C(self) -> float:  # noqa: N802
        return self.sim_slm_original

    @property
    def D(self) -> float:  # noqa: N802
        return self.sim_slm_sanitized

    def with_refined(self, *, sim_sanitized: float, sim_slm_original: float,
                     sim_slm_sanitized: float, ppl_sanitized: float = NAN,
                     ppl_original: float = NAN) -> Features:
        """These features plus B, C, D and the perplexities."""
        return dataclasses.replace(
            self, sim_sanitized=sim_sanitized, sim_slm_original=sim_slm_original,
            sim_slm_sanitized=sim_slm_sanitized, ppl_sanitized=ppl_sanitized,
            ppl_original=ppl_original, refined=True)

    def as_dict(self) -> dict[str, float]:
        """Name → float for the regressor and JSON: :data:`FAST_FEATURES`, plus
        :data:`REFINED_FEATURES` once refined."""
        eps = self.epsilon
        out: dict[str, float] = {
            "epsilon": eps,
            "log_epsilon": math.log(eps) if eps == eps and eps > 0 else NAN,
            "frac_tokens_changed": self.frac_tokens_changed,
            "frac_chars_changed": self.frac_chars_changed,
            "pii_total": float(self.pii_total),
            "pii_left": float(self.pii_left),
            "frac_pii_left": self.pii_left / self.pii_total if self.pii_total else NAN,
            "log_words": math.log1p(self.words),
            "length_ratio": self.length_ratio,
            "dx_share": self.dx_share,
            "spans_replaced_share": self.spans_replaced_share,
            "spans_kept": float(self.spans_kept),
            "letter_share": self.letter_share,
            "field_line_share": self.field_line_share,
        }
        for m in METHODS:
            out[f"method_{m}"] = 1.0 if self.method == m else 0.0
        if self.refined:
            out.update(refined_features(
                sim_sanitized=self.sim_sanitized, sim_slm_original=self.sim_slm_original,
                sim_slm_sanitized=self.sim_slm_sanitized, ppl_sanitized=self.ppl_sanitized,
                ppl_original=self.ppl_original))
        return out


def method_indicator(sanitized: SanitizedText) -> str:
    """The mechanism a policy's output amounts to, in the regressor's terms: "dx" when
    d_X noise is in it, else the action that replaced the most spans."""
    report = sanitized.report
    if report.policy is None:
        return sanitized.method
    if report.epsilon is not None:
        return "dx"
    counts = {a: n for a, n in (report.actions or {}).items() if a != "keep"}
    if counts:
        return max(counts, key=lambda a: counts[a])
    fallback = report.policy.fallback
    return fallback if fallback != "keep" else "placeholder"


def fast_features(
    original: str, sanitized: SanitizedText, spans: Sequence[Span] = ()
) -> Features:
    """Features that need no model call (milliseconds, whatever the document size)."""
    report = sanitized.report
    eps = report.epsilon                # reported by the d_X mechanism; None for operators
    epsilon = float(eps) if eps is not None else NAN

    n_chars = max(len(original), 1)
    changed_chars = sum(c.source_end - c.source_start for c in sanitized.changes)
    total_tokens = report.dx.tokens_total if report.dx is not None else None
    if total_tokens:
        frac_tokens = float(report.dx.tokens_changed or 0) / float(total_tokens)
    else:
        frac_tokens = _frac_words_changed(original, sanitized)
    kept = set(report.kept_spans or ())     # left on purpose by the policy
    judged = [s for s in spans if (s.start, s.end) not in kept]
    method = method_indicator(sanitized)
    letters, fields = document_form(original)
    return Features(
        epsilon=epsilon,
        method=method,
        frac_tokens_changed=frac_tokens,
        frac_chars_changed=min(changed_chars / n_chars, 1.0),
        pii_total=len(judged),
        pii_left=_count_left(original, judged, sanitized.text),
        words=word_count(original),
        length_ratio=len(sanitized.text) / n_chars,
        dx_share=_dx_share(report),
        spans_replaced_share=_replaced_share(report, method, len(spans)),
        spans_kept=len(kept),
        letter_share=letters,
        field_line_share=fields,
    )


def _count_left(original: str, spans: Sequence[Span], sanitized: str) -> int:
    """How many of ``spans`` have their value somewhere in ``sanitized`` (as a substring,
    exactly as written)."""
    left = values_present({original[s.start:s.end] for s in spans}, sanitized)
    return sum(1 for s in spans if original[s.start:s.end] in left)


def values_present(values: set[str], text: str) -> set[str]:
    """The ``values`` that occur in ``text`` as substrings (exact, case-sensitive).

    One pass over ``text`` with a trie of the values, not one search per value: a
    document of tens of thousands of identifiers would otherwise take values x text."""
    source = trie_regex(values, fold=False, literal=True)
    if source is None:
        return set()
    # the look-ahead matches at every position (the scan moves one character on), and
    # the trie yields the longest value there; shorter ones at the same start are found
    # by matching again with the text cut before the end of the last one
    pattern = re.compile(f"(?=({source}))", re.DOTALL)
    found: set[str] = set()
    for m in pattern.finditer(text):
        start, end = m.span(1)
        while end > start:
            found.add(text[start:end])
            if len(found) == len(values):
                return found
            shorter = pattern.match(text, start, end - 1)
            end = shorter.end(1) if shorter else start
    return found


def _dx_share(report: SanitizeReport) -> float:
    """Share of the text's tokens that d_X noises: 1 for whole-text d_X, the non-protected
    rest for a hybrid policy, the spans' tokens for d_X on spans, 0 without d_X."""
    dx = report.dx
    if dx is None:
        return 0.0
    total, noised = dx.tokens_in_text, dx.tokens_total
    if total and noised is not None:
        return min(1.0, float(noised) / float(total))
    return 1.0 if dx.scope == "all" else NAN


def _replaced_share(report: SanitizeReport, method: str, n_spans: int) -> float:
    """Share of the detected spans an operator replaced (a policy says how many it replaced
    and kept; a plain operator replaces every span it is given; d_X alone replaces none)."""
    if report.replaced is not None:
        replaced, kept = report.replaced, report.kept or 0
        return replaced / (replaced + kept) if replaced + kept else NAN
    if method == "dx" or report.policy is not None:
        return 0.0
    return 1.0 if n_spans else NAN


def derived_policy_features(row: Mapping[str, float]) -> dict[str, float]:
    """The policy features of a row written before they existed: one mechanism per row,
    told by its method indicator (d_X: all tokens noised, no span replaced; an operator:
    no noise, every detected span replaced; nothing kept on purpose either way)."""
    if not any(_present(row.get(f"method_{m}")) for m in METHODS):
        return {}
    dx = float(row.get("method_dx") or 0.0) == 1.0
    return {"dx_share": 1.0 if dx else 0.0,
            "spans_replaced_share": 0.0 if dx else 1.0,
            "spans_kept": 0.0}


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _frac_words_changed(original: str, sanitized: SanitizedText) -> float:
    """Share of the original's words that fall inside a changed source range."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(original)]
    if not words:
        return 0.0
    ranges = sorted((c.source_start, c.source_end) for c in sanitized.changes)
    hit = 0
    j = 0
    for start, end in words:
        while j < len(ranges) and ranges[j][1] <= start:
            j += 1
        if j < len(ranges) and ranges[j][0] < end:
            hit += 1
    return hit / len(words)


def refined_features(
    *,
    sim_sanitized: float,
    sim_slm_original: float,
    sim_slm_sanitized: float,
    ppl_sanitized: float = NAN,
    ppl_original: float = NAN,
) -> dict[str, float]:
    """B, C, D and the perplexity features, from already computed similarities."""
    log_s = math.log(ppl_sanitized) if ppl_sanitized == ppl_sanitized and ppl_sanitized > 0 else NAN
    log_o = math.log(ppl_original) if ppl_original == ppl_original and ppl_original > 0 else NAN
    return {
        "log_ppl_original": log_o,
        "sim_sanitized": sim_sanitized,
        "sim_slm_original": sim_slm_original,
        "sim_slm_sanitized": sim_slm_sanitized,
        "slm_d_minus_c": sim_slm_sanitized - sim_slm_original,
        "log_ppl_sanitized": log_s,
        "log_ppl_ratio": log_s - log_o,
    }


def as_mapping(features: Features | Mapping[str, float]) -> Mapping[str, float]:
    """The flat form of ``features`` (a :class:`Features` or an already flat mapping, as
    stored in training rows and the learning-on-the-flow database)."""
    return features.as_dict() if isinstance(features, Features) else features


def vector(features: Features | Mapping[str, float], names: Sequence[str]) -> list[float]:
    """Features in the order ``names``; absent ones are NaN, except the policy features
    of an older row, which are derived from its method indicator."""
    features = as_mapping(features)
    derived: dict[str, float] | None = None
    out = []
    for name in names:
        value = features.get(name)
        if not _present(value) and name in POLICY_FEATURES:
            if derived is None:
                derived = derived_policy_features(features)
            value = derived.get(name)
        out.append(NAN if value is None else float(value))
    return out
