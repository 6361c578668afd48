"""The words the user types into a request — the question and the custom instruction —
sanitized with the document's policy and vault before they leave.

A name typed into "Ask a question" would otherwise go out as written, next to a document
where the same name is ``<PERSON_1>``. :func:`sanitize_task` finds what to protect in
each user-typed field — what the detector finds there, plus every value detected in the
document that the field repeats (whole words, any case) — and replaces it as the
document's policy says:

- a value the document's vault already holds gets the *same* token (``<PERSON_1>`` in
  the question and in the document), so the answer names one person and restores;
- a first or last name alone takes the token of the one full name it belongs to;
- any other value the policy replaces reversibly (placeholder or pseudonym) gets a new
  numbered placeholder, added to a copy of the vault so the answer restores it too (a
  stand-in name for a value only the question names could not be told from a real one);
- mask, redact, generalize and delete work as in the document; kept types stay.

A policy of d_X alone (noise on the whole text or on the detected values) has no per-type
actions; a question is too short for noise to protect it, so it follows the default
"Protect identifiers" rules. Secrets are never rewritten here: a key or password typed
into a question stays, so the re-scan blocks the send and tells the user to remove it
(an allow-listed or replaced key would teach nothing and hide a mistake).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from preflight.core.ports import Detector
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.operators import value_key
from preflight.core.sanitize.policy import (
    DEFAULT_POLICY, PRESETS, Action, DxScope, Policy, effective_type, policy_from_mapping,
)
from preflight.core.sanitize.surrogates import placeholder_label
from preflight.core.sanitize.vault import PLACEHOLDER, Vault, VaultEntry, placeholder_token
from preflight.core.tasks import Task
from preflight.core.types import Category, SanitizedText, Span, apply_replacements

_REVERSIBLE = (Action.PLACEHOLDER, Action.PSEUDONYM)
MIN_VALUE_CHARS = 3          # shorter document values ("Al") match too much prose


def document_policy(sanitized: SanitizedText) -> Policy:
    """The policy that produced ``sanitized`` (its ``report.policy``), as it applies to
    user-typed text; the default policy when it has none or is d_X alone."""
    described = sanitized.report.policy
    if described is None:
        return PRESETS[DEFAULT_POLICY]
    policy = policy_from_mapping({
        "name": described.name or "document", "dx": described.dx,
        "fallback": described.fallback,
        "categories": dict(described.by_category),
        "types": dict(described.by_type),
    }, "the document's policy")
    if policy.dx in (DxScope.ALL, DxScope.SPANS):
        return PRESETS[DEFAULT_POLICY]
    return policy


def sanitize_task(task: Task, *, detector: Detector, original: str,
                  sanitized: SanitizedText, spans: Sequence[Span], vault: Any
                  ) -> tuple[Task, Any]:
    """``task`` with its question and note sanitized, and the vault that restores the
    answer (``vault`` itself when nothing new was added; a copy with the new entries
    otherwise — the document's vault is never changed; a vault of another kind is
    returned as it is). The send path uses
    :func:`~preflight.core.send.request_scope.protect_request`, which also protects the
    document's copies of what only the typed text revealed."""
    if not (task.question.strip() or task.note.strip()):
        return task, vault
    policy = document_policy(sanitized)
    entries = list(vault.entries) if isinstance(vault, Vault) else []
    before = len(entries)
    reserved = (original + "\n" + sanitized.text).lower()
    question, _ = sanitize_user_text(task.question, original, spans,
                                     _detected(detector, task.question), policy, entries,
                                     reserved)
    note, _ = sanitize_user_text(task.note, original, spans, _detected(detector, task.note),
                                 policy, entries, reserved)
    if len(entries) > before:
        vault = vault_with(vault, entries, policy)
    return task.with_user_text(question, note), vault


def _detected(detector: Detector, text: str) -> list[Span]:
    return list(detector.detect(text)) if text.strip() else []


def vault_with(vault: Any, entries: Sequence[VaultEntry], policy: Policy) -> Any:
    """A copy of ``vault`` holding ``entries`` (a vault of another kind stays as it is)."""
    if not (vault is None or isinstance(vault, Vault)):
        return vault
    copy = Vault(method=getattr(vault, "method", "") or policy.name,
                 document_sha256=getattr(vault, "document_sha256", ""))
    copy.reset(copy.method, copy.document_sha256, entries)
    return copy


def sanitize_user_text(text: str, original: str, spans: Sequence[Span],
                       found: Sequence[Span], policy: Policy, entries: list[VaultEntry],
                       reserved: str) -> tuple[str, list[Span]]:
    """``text`` (typed by the user) with what to protect in it replaced — ``found`` (its
    detections, and values found for it elsewhere in the request) plus the document's
    values it repeats — and the spans of ``text`` the policy protects (secrets included:
    they stay in the text for the re-scan to block)."""
    if not text.strip():
        return text, []
    reps: list[tuple[int, int, str, str]] = []
    protected: list[Span] = []
    # what the policy keeps changes nothing, so it never hides a reading that protects
    # the same words ("April Lee" a place in the document, a person here)
    acting = [(s, policy.action_for(s, text[s.start:s.end]))
              for s in _document_values(text, original, spans) + list(found)]
    actions = {id(s): a for s, a in acting}
    for span in _without_overlaps([s for s, a in acting
                                   if a is not Action.KEEP or s.category is Category.SECRET]):
        action = actions[id(span)]
        protected.append(span)
        if span.category is Category.SECRET:
            continue                    # left for the re-scan to block (see the module)
        reps.append((span.start, span.end,
                     token_for_value(text, span, action, entries, reserved + text.lower()),
                     span.type))
    out, _changes = apply_replacements(text, reps)
    return out, protected


def token_for_value(text: str, span: Span, action: Action, entries: list[VaultEntry],
                    reserved: str) -> str:
    """What replaces ``text[span]`` under ``action``: the vault's token for the value (a
    new numbered placeholder, recorded in ``entries``, when it has none and the action
    is reversible), or the irreversible operator's output."""
    value = text[span.start:span.end]
    token = _vault_token(entries, span.type, value)
    if token is not None:
        return token
    if action in _REVERSIBLE:
        return _new_placeholder(entries, span.type, value, reserved)
    return _operator_replacement(action, text, span)


def _document_values(text: str, original: str, spans: Sequence[Span]) -> list[Span]:
    """Every document value the text repeats, typed as in the document."""
    out, seen = [], set()
    for s in spans:
        value = original[s.start:s.end].strip()
        if len(value) < MIN_VALUE_CHARS or (s.type, value.casefold()) in seen:
            continue
        seen.add((s.type, value.casefold()))
        for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE):
            out.append(Span(m.start(), m.end(), s.type, s.category, s.score,
                            "DocumentValue", "a value detected in the document"))
    return out


def _without_overlaps(spans: list[Span]) -> list[Span]:
    """Longest first at each place; the document's reading of a value wins a tie."""
    kept: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -(s.end - s.start))):
        if kept and s.start < kept[-1].end:
            continue
        kept.append(s)
    return kept


def _vault_token(entries: Sequence[VaultEntry], etype: str, value: str) -> str | None:
    """The token the vault gives this value (any spelling it replaced), or the one full
    name a lone first or last name belongs to."""
    key = value_key(value, etype)
    for e in entries:
        if e.type == etype and key in {value_key(f, etype) for f in (e.original, *e.forms)}:
            return e.token
    if etype == "PERSON" and " " not in value.strip():
        owners = {e.token for e in entries if e.type == "PERSON"
                  and key in value_key(e.original, etype).split()}
        if len(owners) == 1:
            return owners.pop()
    return None


def _new_placeholder(entries: list[VaultEntry], etype: str, value: str,
                     reserved: str) -> str:
    """A placeholder numbered after every one of its label in the vault, never one the
    texts already contain (restoring must stay unambiguous); recorded in ``entries``."""
    label = placeholder_label(etype)
    used = [e.label_number[1] for e in entries
            if e.kind == PLACEHOLDER and e.label_number[0] == label]
    n = max(used, default=0) + 1
    while f"{label.lower()}_{n}" in reserved or f"{label.lower()}{n}" in reserved:
        n += 1
    token = placeholder_token(label, n)
    entries.append(VaultEntry(token, etype, value, PLACEHOLDER))
    return token


def _operator_replacement(action: Action, text: str, span: Span) -> str:
    """What the irreversible operator writes for this one value (as in the document)."""
    if action is Action.GENERALIZE:
        span = Span(span.start, span.end, effective_type(span, text[span.start:span.end]),
                    span.category, span.score, span.recognizer, span.why)
    out = create_mechanism(action.value).sanitize(text, [span], SanitizeParams())
    return out.changes[0].replacement if out.changes else text[span.start:span.end]
