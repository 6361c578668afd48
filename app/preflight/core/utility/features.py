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
"""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

from preflight.core.types import SanitizedText, Span

# The mechanisms known when the regressor was trained; one indicator each.
METHODS = ("dx", "placeholder", "redact", "delete", "mask", "pseudonym", "generalize")

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
)
REFINED_FEATURES = (
    "sim_sanitized",         # B
    "sim_slm_original",      # C
    "sim_slm_sanitized",     # D
    "slm_d_minus_c",         # D - C: how much the SLM lost to sanitization
    "log_ppl_sanitized",     # SLM perplexity on the (sanitized or corrected) text
    "log_ppl_ratio",         # ... relative to the original's
)
ALL_FEATURES = FAST_FEATURES + REFINED_FEATURES
# What the instant model reads: on a few hundred training rows the per-document extras
# (PII counts, length) let the trees memorize documents instead of learning the effect of
# the change share; the full model keeps them because B, C, D anchor it.
FAST_MODEL_FEATURES = (
    "epsilon",
    *(f"method_{m}" for m in METHODS),
    "frac_tokens_changed",
    "frac_chars_changed",
    "length_ratio",
)
PAPER_FEATURES = ("epsilon", "sim_sanitized", "sim_slm_original", "sim_slm_sanitized")
BASELINE_FEATURES = ("epsilon", *(f"method_{m}" for m in METHODS))

_WORD = re.compile(r"\w+", re.UNICODE)
NAN = float("nan")


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def fast_features(
    original: str, sanitized: SanitizedText, spans: Sequence[Span] = ()
) -> dict[str, float]:
    """Features that need no model call (milliseconds, whatever the document size)."""
    info = sanitized.info or {}
    eps = info.get("epsilon")
    if eps is None and sanitized.method == "dx":
        eps = info.get("eps")
    epsilon = float(eps) if eps is not None else NAN

    n_chars = max(len(original), 1)
    changed_chars = sum(c.source_end - c.source_start for c in sanitized.changes)
    frac_chars = min(changed_chars / n_chars, 1.0)
    total_tokens = info.get("tokens_total")
    if total_tokens:
        frac_tokens = float(info.get("tokens_changed", 0)) / float(total_tokens)
    else:
        frac_tokens = _frac_words_changed(original, sanitized)

    pii_left = sum(1 for s in spans if original[s.start : s.end] in sanitized.text)
    pii_total = len(spans)
    feats: dict[str, float] = {
        "epsilon": epsilon,
        "log_epsilon": math.log(epsilon) if epsilon == epsilon and epsilon > 0 else NAN,
        "frac_tokens_changed": frac_tokens,
        "frac_chars_changed": frac_chars,
        "pii_total": float(pii_total),
        "pii_left": float(pii_left),
        "frac_pii_left": pii_left / pii_total if pii_total else NAN,
        "log_words": math.log1p(word_count(original)),
        "length_ratio": len(sanitized.text) / n_chars,
    }
    for m in METHODS:
        feats[f"method_{m}"] = 1.0 if sanitized.method == m else 0.0
    return feats


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
        "sim_sanitized": sim_sanitized,
        "sim_slm_original": sim_slm_original,
        "sim_slm_sanitized": sim_slm_sanitized,
        "slm_d_minus_c": sim_slm_sanitized - sim_slm_original,
        "log_ppl_sanitized": log_s,
        "log_ppl_ratio": log_s - log_o,
    }


def vector(features: Mapping[str, float], names: Sequence[str]) -> list[float]:
    """Features in the order ``names``; absent ones are NaN."""
    out = []
    for name in names:
        value = features.get(name)
        out.append(NAN if value is None else float(value))
    return out
