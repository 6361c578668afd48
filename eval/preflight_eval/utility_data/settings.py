"""Which sanitizations a document gets in the utility data set: setting kinds.

A *setting* is one way of sanitizing one document (method, ε, seed, corrected). A *setting
kind* draws the settings of its kind for a document and produces the sanitized text.
Each kind draws from its own random stream, seeded by (data-set seed, document id, kind
name): adding a kind later (e.g. the policy presets "identifiers" and "identifiers-dx")
adds rows to every document without changing the settings — and so the stored rows — of
the kinds already there. To add one, write a class with ``name``, ``sample`` and
``sanitize`` and pass it to :func:`register_setting_kind`; the generator then fills in the
missing (document, setting) pairs on its next run.

Kinds here: ``dx`` (whole-text d_X at 3–4 ε drawn log-uniformly across the mechanism's
calibrated range, one per equal-width bin of log ε; each ε also, with probability
``CORRECT_P``, in a "corrected" variant where the local SLM repairs the grammar first and
both models read the repaired text) and the classic operators over every detected span
(``placeholder``, ``pseudonym``, ``generalize``, ``redact``), each with its own
probability per document; and the policies ``identifiers`` (the default) and
``identifiers-dx`` (the hybrid, at 2 ε).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, Sequence

from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.types import SanitizedText, Span

CORRECT_P = 0.4
OPERATOR_P = {"placeholder": 0.7, "pseudonym": 0.45, "generalize": 0.45, "redact": 0.45}

# The first FULL_GRID_DOCS documents of the generation order (the 24 of sessions 2–3) drew
# about ten settings each. From the 25th on, a lighter draw (about six per document) buys
# more documents for the same hours of the stand-in: documents, not rows, are what the
# by-document split and the held-out report need. Each kind scales its own draw only.
FULL_GRID_DOCS = 24
LIGHT = {"dx_counts": (2, 3), "correct_p": 0.3, "operator_scale": 0.45, "policy_scale": 0.75,
         "policy_dx_counts": (1,)}


@dataclass(frozen=True)
class Setting:
    kind: str                     # setting kind name ("original" for the unsanitized text)
    method: str                   # mechanism or policy actually run
    epsilon: float | None = None
    seed: int | None = None
    corrected: bool = False
    # what the cloud is asked: "summarize", or "question" (the document's recorded
    # question, :mod:`.questions`); rows written before the task existed are summaries
    task: str = "summarize"

    @property
    def key(self) -> str:
        eps = "-" if self.epsilon is None else f"{self.epsilon:.6g}"
        # a summary's key is the one its rows were stored under before tasks existed
        task = "" if self.task == "summarize" else f"|{self.task}"
        return f"{self.kind}|{self.method}|{eps}|{self.seed}|{int(self.corrected)}{task}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "method": self.method, "epsilon": self.epsilon,
                "seed": self.seed, "corrected": self.corrected, "task": self.task}


ORIGINAL = Setting("original", "none")


class DocumentContext:
    """One document's shared work: its spans and (lazily) its d_X preparation."""

    def __init__(self, doc_id: str, text: str, spans: Sequence[Span], seed: int,
                 light: bool = False) -> None:
        self.doc_id = doc_id
        self.text = text
        self.spans = tuple(spans)
        self.seed = seed
        self.light = light          # the lighter draw (see FULL_GRID_DOCS)
        self.cache: dict[str, Any] = {}

    def rng(self, kind: str) -> random.Random:
        h = hashlib.sha256(f"{self.seed}|{self.doc_id}|{kind}".encode()).hexdigest()
        return random.Random(int(h[:16], 16))

    def doc_seed(self, kind: str) -> int:
        return int(hashlib.sha256(f"seed|{self.seed}|{self.doc_id}|{kind}".encode())
                   .hexdigest()[:15], 16)


class SettingKind(Protocol):
    name: str

    def sample(self, ctx: DocumentContext) -> list[Setting]: ...

    def sanitize(self, ctx: DocumentContext, setting: Setting) -> tuple[SanitizedText, Any]:
        """The sanitized text and the vault that restores its answer (or None)."""


def log_uniform_bins(lo: float, hi: float, count: int, rng: random.Random) -> list[float]:
    """One ε per equal-width bin of log ε over [lo, hi], uniform within its bin."""
    a, b = math.log(lo), math.log(hi)
    return [round(math.exp(a + (i + rng.random()) * (b - a) / count), 4) for i in range(count)]


# How mechanisms are built: the composition root's factory (``Services.mechanism``, which
# gives d_X its token space), installed by the entry points with :func:`use_mechanisms`.
_mechanism_factory: Callable[..., Any] = create_mechanism


def use_mechanisms(factory: Callable[..., Any]) -> None:
    """Build every setting's mechanism with ``factory(name, **collaborators)``."""
    global _mechanism_factory
    _mechanism_factory = factory


class DxKind:
    """Whole-text d_X (scope "all", the paper's setting) at several ε, same noise draw."""

    name = "dx"

    def __init__(self, mechanism: Any = None, counts: tuple[int, ...] = (3, 4),
                 correct_p: float = CORRECT_P) -> None:
        self._mech = mechanism
        self.counts = counts
        self.correct_p = correct_p

    @property
    def mechanism(self) -> Any:
        if self._mech is None:
            self._mech = _mechanism_factory("dx")
        return self._mech

    def sample(self, ctx: DocumentContext) -> list[Setting]:
        rng = ctx.rng(self.name)
        lo, hi = self.mechanism.epsilon_range
        seed = ctx.doc_seed(self.name)
        counts, correct_p = ((LIGHT["dx_counts"], LIGHT["correct_p"]) if ctx.light
                             else (self.counts, self.correct_p))
        out = []
        for eps in log_uniform_bins(lo, hi, rng.choice(counts), rng):
            out.append(Setting("dx", "dx", eps, seed))
            if rng.random() < correct_p:
                out.append(Setting("dx", "dx", eps, seed, corrected=True))
        return out

    def sanitize(self, ctx: DocumentContext, setting: Setting) -> tuple[SanitizedText, Any]:
        key = f"dx:{setting.seed}"
        if key not in ctx.cache:   # one preparation per document serves every ε
            ctx.cache[key] = self.mechanism.prepare(
                ctx.text, ctx.spans, SanitizeParams(seed=setting.seed, scope="all"))
        return ctx.cache[key].at(setting.epsilon), None


class OperatorKind:
    """A classic operator over every detected span ("everything detected")."""

    def __init__(self, name: str, probability: float) -> None:
        self.name = name
        self.probability = probability

    def sample(self, ctx: DocumentContext) -> list[Setting]:
        rng = ctx.rng(self.name)
        p = self.probability * (LIGHT["operator_scale"] if ctx.light else 1.0)
        if rng.random() >= p:
            return []
        return [Setting(self.name, self.name, None, ctx.doc_seed(self.name))]

    def sanitize(self, ctx: DocumentContext, setting: Setting) -> tuple[SanitizedText, Any]:
        mech = _mechanism_factory(setting.method)
        out = mech.sanitize(ctx.text, ctx.spans, SanitizeParams(seed=setting.seed))
        return out, getattr(mech, "vault", None)


class PolicyKind:
    """A named policy (issue 12's presets): "identifiers" as it is, "identifiers-dx" at
    2 ε drawn like d_X's (one preparation per document serves both)."""

    def __init__(self, name: str, probability: float, dx_counts: tuple[int, ...] = ()) -> None:
        self.name = name
        self.probability = probability
        self.dx_counts = dx_counts

    def sample(self, ctx: DocumentContext) -> list[Setting]:
        rng = ctx.rng(self.name)
        p = self.probability * (LIGHT["policy_scale"] if ctx.light else 1.0)
        if rng.random() >= p:
            return []
        seed = ctx.doc_seed(self.name)
        if not self.dx_counts:
            return [Setting(self.name, self.name, None, seed)]
        lo, hi = setting_kinds()["dx"].mechanism.epsilon_range   # type: ignore[attr-defined]
        counts = LIGHT["policy_dx_counts"] if ctx.light else self.dx_counts
        return [Setting(self.name, self.name, eps, seed)
                for eps in log_uniform_bins(lo, hi, rng.choice(counts), rng)]

    def sanitize(self, ctx: DocumentContext, setting: Setting) -> tuple[SanitizedText, Any]:
        key = f"{self.name}:{setting.seed}"
        if key not in ctx.cache:
            mech = _mechanism_factory(setting.method)
            params = SanitizeParams(seed=setting.seed)
            ctx.cache[key] = (mech, mech.prepare(ctx.text, ctx.spans, params)
                              if self.dx_counts else mech.sanitize(ctx.text, ctx.spans, params))
        mech, made = ctx.cache[key]
        out = made.at(setting.epsilon) if self.dx_counts else made
        return out, mech.vault if mech.reversible else None


POLICY_P = {"identifiers": 0.8, "identifiers-dx": 0.5}

_KINDS: dict[str, SettingKind] = {}


def register_setting_kind(kind: SettingKind) -> None:
    _KINDS[kind.name] = kind


def setting_kinds() -> dict[str, SettingKind]:
    if not _KINDS:
        register_setting_kind(DxKind())
        for name, p in OPERATOR_P.items():
            register_setting_kind(OperatorKind(name, p))
        register_setting_kind(PolicyKind("identifiers", POLICY_P["identifiers"]))
        register_setting_kind(PolicyKind("identifiers-dx", POLICY_P["identifiers-dx"], (2,)))
    return dict(_KINDS)


def shipped_kinds() -> dict[str, SettingKind]:
    """Every setting kind the product ships, each on every document: the default policy,
    placeholder, pseudonym, generalize, whole-text d_X at 3 ε (one per bin of the
    calibrated range, none corrected) and the hybrid policy at 2 ε — the grid of the
    frozen test set. Same kind names, so the same seeded streams, as :func:`setting_kinds`."""
    kinds: dict[str, SettingKind] = {"identifiers": PolicyKind("identifiers", 1.0)}
    for name in ("placeholder", "pseudonym", "generalize"):
        kinds[name] = OperatorKind(name, 1.0)
    kinds["dx"] = DxKind(counts=(3,), correct_p=0.0)
    kinds["identifiers-dx"] = PolicyKind("identifiers-dx", 1.0, (2,))
    return kinds


def document_settings(ctx: DocumentContext, kinds: dict[str, SettingKind],
                      tasks: Sequence[str] = ("summarize",)) -> list[Setting]:
    """The unsanitized send first, then every kind's settings for this document; the
    whole list once per task (the same sanitizations, asked another thing)."""
    out = [ORIGINAL]
    for kind in kinds.values():
        out.extend(kind.sample(ctx))
    return [replace(s, task=task) for task in tasks for s in out]
