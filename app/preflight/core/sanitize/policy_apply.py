"""Carrying a :class:`~preflight.core.sanitize.policy.Policy` out on one document.

:class:`PolicyMechanism` implements the mechanism protocol. Each protected span goes to
the operator of its action (placeholder and pseudonym share one vault, so the answer is
restored from one place); kept spans stay as written. With d_X on the rest (the hybrid),
every token outside the protected spans then gets ε-d_X noise from the exact all-ε
engine, so :meth:`PolicyMechanism.prepare` gives a slider as fast as plain d_X: the
operators run once, and ``at(ε)`` only merges their fixed replacements with d_X's output
at that ε. With d_X on the whole text or on the spans only, the policy *is* d_X.

Every output says which policy produced it (``method`` is the policy's name,
``report.policy`` describes it) and which detected spans it kept on purpose
(``report.kept_spans``), so the re-scan before sending does not block on them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Sequence

from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.dx_prepared import merge_fixed
from preflight.core.sanitize.operators import document_sha256, validate_spans
from preflight.core.sanitize.policy import Action, DxScope, Policy, effective_type
from preflight.core.sanitize.vault import Vault
from preflight.core.types import SanitizedText, SanitizeReport, Span, apply_replacements

_REVERSIBLE = (Action.PLACEHOLDER, Action.PSEUDONYM)


def guarantee(policy: Policy, n_protected: int, dx_sentence: str | None) -> str:
    """One sentence that states exactly what holds for this output."""
    if policy.dx in (DxScope.ALL, DxScope.SPANS):
        return dx_sentence or ""
    if n_protected:
        s = (f"The {n_protected} protected span(s) are replaced on this machine and their "
             f"values never leave it")
    else:
        s = "No value this policy protects was detected, so no value was replaced"
    if policy.dx is DxScope.REST and dx_sentence is not None:
        return s + ". " + dx_sentence
    return s + "; the rest of the text is sent as written."


class _Parts:
    """The operator half of a policy's output: fixed replacements, vault, facts."""

    def __init__(self, policy: Policy, text: str, spans: Sequence[Span],
                 params: SanitizeParams, vault: Vault, collaborators: dict[str, Any]) -> None:
        ordered = validate_spans(text, spans)
        decided = [(s, policy.action_for(s, text[s.start:s.end])) for s in ordered]
        self.protected = [s for s, a in decided if a is not Action.KEEP]
        self.kept = [s for s, a in decided if a is Action.KEEP]
        self.actions = dict(Counter(a.value for _s, a in decided))
        self.reps: list[tuple[int, int, str, str]] = []
        entries = []
        for action in dict.fromkeys(a for _s, a in decided if a is not Action.KEEP):
            group = [s for s, a in decided if a is action]
            if action is Action.GENERALIZE:     # "26-year-old" generalizes as an age
                group = [replace(s, type=effective_type(s, text[s.start:s.end]))
                         for s in group]
            extra = dict(collaborators) if action in _REVERSIBLE else {}
            if action in _REVERSIBLE:
                extra["vault"] = Vault()
            op = create_mechanism(action.value, **extra)
            out = op.sanitize(text, group, params)
            self.reps += [(c.source_start, c.source_end, c.replacement, c.type)
                          for c in out.changes]
            if action in _REVERSIBLE:
                entries += list(extra["vault"].entries)
        self.reps.sort(key=lambda r: (r[0], r[1]))
        self.reversible = bool(entries)
        vault.reset(policy.name, document_sha256(text), entries)


class PolicyMechanism:
    """A policy as a mechanism. One instance per document (it owns the vault)."""

    def __init__(self, policy: Policy, *, dx: Any = None, vault: Vault | None = None,
                 **collaborators: Any) -> None:
        """``dx``: the shared d_X mechanism (needed only when the policy uses d_X);
        ``collaborators`` go to the reversible operators (e.g. a placeholder memory)."""
        self.policy = policy
        self.name = policy.name
        self._dx = dx
        self.vault = vault if vault is not None else Vault()
        self._collaborators = collaborators
        # Whether outputs can hold placeholders or pseudonyms to restore (then the vault
        # is written even when this document had nothing to replace).
        self.reversible = policy.dx not in (DxScope.ALL, DxScope.SPANS) and any(
            a in _REVERSIBLE for a in (policy.fallback, *policy.by_type.values(),
                                       *policy.by_category.values()))

    def _need_dx(self) -> Any:
        if self._dx is None:
            from preflight.core.errors import ConfigError

            raise ConfigError(f"The policy '{self.policy.name}' adds d_X noise, which needs "
                              "the token embedding space.",
                              "Build the mechanism through the application's services.")
        return self._dx

    def _parts(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> _Parts:
        return _Parts(self.policy, text, spans, params, self.vault, self._collaborators)

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams
                 ) -> SanitizedText:
        """The output at one ε (d_X prepares just that point: no slider envelope)."""
        if not self.policy.uses_dx:
            return _compose(self.policy, text, self._parts(text, spans, params), None)
        dx = self._need_dx()
        if params.epsilon is None and self.policy.epsilon is not None:
            params = replace(params, epsilon=self.policy.epsilon)
        if self.policy.dx in (DxScope.ALL, DxScope.SPANS):
            scope = "all" if self.policy.dx is DxScope.ALL else "pii"
            return _compose(self.policy, text, None,
                            dx.sanitize(text, list(spans), replace(params, scope=scope)))
        parts = self._parts(text, spans, params)
        return _compose(self.policy, text, parts,
                        dx.sanitize(text, parts.protected, replace(params, scope="rest")))

    def prepare(self, text: str, spans: Sequence[Span], params: SanitizeParams
                ) -> "PolicyPrepared":
        """The one-time work; ``at(ε)`` is then as fast as d_X's slider."""
        dx = self._need_dx()
        if self.policy.dx in (DxScope.ALL, DxScope.SPANS):
            scope = "all" if self.policy.dx is DxScope.ALL else "pii"
            return PolicyPrepared(self, text, list(spans), None,
                                  dx.prepare(text, list(spans), replace(params, scope=scope)))
        parts = self._parts(text, spans, params)
        inner = dx.prepare(text, parts.protected, replace(params, scope="rest"))
        return PolicyPrepared(self, text, list(spans), parts, inner)


def _compose(policy: Policy, text: str, parts: _Parts | None,
             dx_out: SanitizedText | None, *, merged: bool = False) -> SanitizedText:
    """The policy's output: operator replacements plus d_X's (if any), in text order.
    ``merged``: ``dx_out`` already holds the operator replacements (the slider path)."""
    if parts is None:                     # the policy is d_X alone
        assert dx_out is not None
        report = replace(dx_out.report, policy=policy.summary(), kept_spans=(),
                         guarantee=guarantee(policy, 0, dx_out.report.guarantee))
        return SanitizedText(dx_out.text, policy.name, dx_out.changes, report)
    if merged:
        assert dx_out is not None
        out, changes = dx_out.text, dx_out.changes
    else:
        reps = list(parts.reps)
        if dx_out is not None:           # the same merge as the slider's one-pass path
            reps = merge_fixed([(c.source_start, c.source_end, c.replacement, c.type)
                                for c in dx_out.changes], reps)
        out, changes = apply_replacements(text, reps)
    report = SanitizeReport(
        dx=dx_out.report.dx if dx_out is not None else None,
        policy=policy.summary(),
        reversible=parts.reversible,
        replaced=len(parts.protected),
        kept=len(parts.kept),
        actions=parts.actions,
        kept_spans=tuple((s.start, s.end) for s in parts.kept),
        guarantee=guarantee(policy, len(parts.protected),
                            dx_out.report.guarantee if dx_out is not None else None),
    )
    return SanitizedText(out, policy.name, changes, report)


class PolicyPrepared:
    """A document prepared under a d_X policy: ``at(ε)`` for any ε of the slider."""

    def __init__(self, mech: PolicyMechanism, text: str, spans: list[Span],
                 parts: _Parts | None, inner: Any) -> None:
        self.mech, self.text, self.spans = mech, text, spans
        self._parts, self._inner = parts, inner

    @property
    def policy(self) -> Policy:
        return self.mech.policy

    @property
    def vault(self) -> Vault | None:
        return self.mech.vault if self._parts is not None and self._parts.reversible else None

    @property
    def epsilon_range(self) -> tuple[float, float]:
        lo, hi = self._inner.epsilon_range
        return float(lo), float(hi)

    @property
    def seed(self) -> int:
        return int(self._inner.seed)

    @property
    def dx_part(self) -> Any:
        """The d_X preparation of the tokens the policy leaves to the noise."""
        return self._inner.dx_part

    def at(self, epsilon: float) -> SanitizedText:
        if self._parts is None:
            return _compose(self.mech.policy, self.text, None, self._inner.at(epsilon))
        # one pass writes d_X's tokens and the fixed replacements (no second rebuild)
        return _compose(self.mech.policy, self.text, self._parts,
                        self._inner.at(epsilon, fixed=self._parts.reps), merged=True)

    def resample(self, seed: int | None = None) -> "PolicyPrepared":
        """The same replacements with fresh d_X noise."""
        return PolicyPrepared(self.mech, self.text, self.spans, self._parts,
                              self._inner.resample(seed))

    def update(self, new_text: str, new_spans: Sequence[Span]) -> "PolicyPrepared":
        """The edited document, reusing the noise of tokens it still has."""
        if self._parts is None:
            return PolicyPrepared(self.mech, new_text, list(new_spans), None,
                                  self._inner.update(new_text, list(new_spans)))
        parts = self.mech._parts(new_text, new_spans, self._inner.params)
        return PolicyPrepared(self.mech, new_text, list(new_spans), parts,
                              self._inner.update(new_text, parts.protected))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._inner, name)

