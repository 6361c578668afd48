"""The ε ledger of a document: how much privacy budget its sends have spent together.

Composition rule (sequential composition): a d_X send at ε is ε·d-private for its
document; k sends of the same document at ε₁ … ε_k are, together, (ε₁ + … + ε_k)·d-private
— an observer who sees every payload can average the noise away at exactly that rate. So
the ledger *adds* the ε of every send of the document:

- "the same document" is what the resend check matches (:mod:`preflight.core.send.
  fingerprint`): the exact text, a normalized copy, or a near-duplicate (edited copy).
  Counting a near-duplicate's ε in full is conservative: the tokens the edit changed
  are not covered twice;
- a send without d_X adds 0 (its replaced values never leave the machine, and what it
  sends as written has no ε to spend) but is still counted as a send;
- a record from before the ledger existed counts its recorded ε (see
  :func:`preflight.core.send.audit.ledger_epsilon`).

A company policy may cap the total (``max_document_epsilon``): a send that would take the
document above it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from preflight.core.send.audit import PriorSend
from preflight.core.types import SanitizedText

_TOLERANCE = 1e-9


def send_epsilon(sanitized: SanitizedText) -> float:
    """The ε one send of ``sanitized`` spends on its document: its d_X ε (the mechanism
    reports an ε only when d_X ran), else 0."""
    eps = sanitized.epsilon
    return float(eps) if eps is not None else 0.0


@dataclass(frozen=True)
class EpsilonLedger:
    """The document's ε before and after one more send."""

    prior_sends: int          # earlier sends of the document (with or without d_X)
    spent: float              # their ε, summed
    this_send: float          # the ε this send adds
    limit: float | None = None  # the company's max_document_epsilon

    @property
    def total(self) -> float:
        return self.spent + self.this_send

    @property
    def exceeds(self) -> bool:
        """Whether this send would take the document above the limit (a send that adds
        no ε never does: it spends nothing the limit counts)."""
        return (self.limit is not None and self.this_send > 0
                and self.total > self.limit + _TOLERANCE)

    def describe(self) -> str:
        """One line for the plan: what was spent, what this send adds, the total."""
        before = (f"{_eps(self.spent)} over {self.prior_sends} earlier send(s)"
                  if self.prior_sends else "nothing yet (first send)")
        cap = f" (your organization's limit: {_eps(self.limit)})" if self.limit is not None \
            else ""
        return (f"ε spent on this document: {before}; this send adds {_eps(self.this_send)} "
                f"→ {_eps(self.total)} in total{cap}")

    def block_reason(self) -> tuple[str, str] | None:
        """(message, hint) when this send would exceed the company's limit, else None."""
        if not self.exceeds:
            return None
        assert self.limit is not None
        left = max(0.0, self.limit - self.spent)
        return (f"Sending this would bring the ε spent on this document to "
                f"{_eps(self.total)}, above the limit of {_eps(self.limit)} set by your "
                f"organization ({_eps(self.spent)} already spent over {self.prior_sends} "
                "send(s)).",
                f"Choose ε ≤ {_eps(left)} or a policy without d_X, or keep the document "
                "local." if left > 0 else
                "The document's budget is used up: use a policy without d_X, or keep it "
                "local.")

    def to_json(self) -> dict[str, Any]:
        return {"prior_sends": self.prior_sends, "spent": self.spent,
                "this_send": self.this_send, "total": self.total, "limit": self.limit,
                "exceeds": self.exceeds, "composition": "sequential"}


def ledger_for(priors: Sequence[PriorSend], this_send: float,
               limit: float | None = None) -> EpsilonLedger:
    """The ledger of a document whose earlier sends are ``priors``."""
    return EpsilonLedger(len(priors), float(sum(p.spent for p in priors)), float(this_send),
                         limit)


def _eps(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"
