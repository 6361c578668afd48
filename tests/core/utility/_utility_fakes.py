"""Fakes for the utility-assessor tests: an SLM, an embedder and a predictor that need
no model files and answer instantly, but behave enough like the real ones that the code
under test can get things wrong."""

from __future__ import annotations

import zlib

import re
import threading

import numpy as np
from preflight.core.tasks import Task
from preflight.core.types import SanitizedText
from preflight.core.utility.features import as_mapping

_WORD = re.compile(r"\w+")


class FakeSLM:
    """Summary = the first 12 words; correction = the text with 'zz' tokens dropped."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def run(self, task: Task, text: str, on_token=None, cancel=None) -> str:
        with self.lock:
            self.calls.append((task.kind, text))
        if cancel is not None and cancel.is_set():
            from preflight.core.errors import Cancelled

            raise Cancelled()
        if task.kind == "correct":
            return " ".join(w for w in text.split() if not w.startswith("zz"))
        return " ".join(text.split()[:12])

    def perplexity(self, text: str) -> float:
        words = _WORD.findall(text) or ["x"]
        junk = sum(w.startswith("zz") for w in words) / len(words)
        return 20.0 + 400.0 * junk


class FakeEmbedder:
    """Hashed bag of words: texts sharing words are similar, disjoint texts are not.

    A stable hash (crc32), not ``hash()``: Python salts ``hash`` per process, so bucket
    collisions — and the similarity of disjoint texts — would change from run to run."""

    dim = 256

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in _WORD.findall(text.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
        return out

    def similarity(self, a: str, b: str) -> float:
        va, vb = self.embed([a, b])
        return float(np.dot(va, vb))


class LinearPredictor:
    """Stands in for UtilityPredictor: utility grows with the share of unchanged tokens."""

    metrics: dict = {}

    def __init__(self, refined_offset: float = 0.0, fast_offset: float = 0.0) -> None:
        self.refined_offset = refined_offset
        self.fast_offset = fast_offset

    def reads(self, feature):
        return True             # every feature: the assessor computes them all

    def predict_fast(self, features, corrected=False):
        return 1.0 - float(as_mapping(features)["frac_tokens_changed"]) + self.fast_offset

    def predict(self, features, corrected=False):
        return self.predict_fast(features) + self.refined_offset

    def estimate(self, features, *, refined=True, corrected=False, explain=True):
        from preflight.core.utility.predictor import Estimate

        f = as_mapping(features)
        full = refined and f.get("sim_slm_sanitized") is not None \
            and f.get("sim_slm_sanitized") == f.get("sim_slm_sanitized")
        value = self.predict(f) if full else self.predict_fast(f)
        return Estimate(value, "full" if full else "fast")


DOC = ("Alice Martin met Bob Stone in Paris on Monday to discuss the merger plan. "
       "The plan moves the whole support team to Lyon before the end of the year. "
       "Everyone agreed that the budget must stay below two million euros.")


def dx_like(text: str, epsilon: float) -> SanitizedText:
    """A deterministic d_X stand-in: a share of words that falls as ε grows becomes 'zz…'."""
    words = list(re.finditer(r"\S+", text))
    share = max(0.0, min(1.0, 1.0 - epsilon / 100.0))
    n_change = int(round(share * len(words)))
    reps = []
    for k, m in enumerate(words):
        if k % max(1, len(words)) < n_change:
            reps.append((m.start(), m.end(), f"zz{k}", "TOKEN"))
    from preflight.core.types import DxReport, SanitizeReport, apply_replacements

    out, changes = apply_replacements(text, reps)
    return SanitizedText(out, "dx", changes, SanitizeReport(
        dx=DxReport(epsilon, tokens_changed=n_change, tokens_total=len(words))))


class FakePrepared:
    epsilon_range = (1.0, 100.0)

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[float] = []

    def at(self, epsilon: float) -> SanitizedText:
        self.calls.append(epsilon)
        return dx_like(self.text, epsilon)

    @property
    def dx_part(self) -> "FakePrepared":
        return self


class FakeDx:
    """The shared d_X mechanism's two calls over :func:`dx_like` and FakePrepared, and
    its calibrated range (what the faces' rules read)."""

    name = "dx"
    epsilon_range = FakePrepared.epsilon_range

    def sanitize(self, text, spans, params):
        return dx_like(text, params.epsilon)

    def prepare(self, text, spans, params):
        return FakePrepared(text)
