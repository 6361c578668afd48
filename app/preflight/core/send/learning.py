"""Learning on the flow: after an answer, the realized utility goes to the flow learner.

The realized utility is the paper's similarity of the original and the answer discounted by
the facts the answer states that the document does not hold
(:func:`~preflight.core.utility.answer_check.faithful_utility`): a cosine alone scored
invented dates and a reversed fact as high as a faithful summary. The raw similarity stays
beside it (:class:`Realized`, the learner's ``meta``). Learning never costs the user the
answer: when the embedder or the learner is unavailable, the record stays ``flow_pending``
and :meth:`FlowRecorder.flush_pending` retries later."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable

from preflight.core.ports import Embedder
from preflight.core.send.audit import AuditLog
from preflight.core.send.plan import SendPlan
from preflight.core.utility.answer_check import AnswerCheck, check_answer, faithful_utility

log = logging.getLogger(__name__)

#: How a stored answer is checked when its learning is retried: (document, answer) → check.
Checker = Callable[[str, str], AnswerCheck]


@dataclass(frozen=True)
class Realized:
    """The realized utility of one answer, and what it was made from."""

    utility: float          # shown and learned from: similarity discounted by the check
    similarity: float       # the paper's cosine of document and answer


def realized_of(similarity: float, check: AnswerCheck | None) -> Realized:
    """The similarity discounted by ``check`` (None: no check ran, the similarity)."""
    utility = faithful_utility(similarity, check) if check is not None else similarity
    return Realized(float(utility), float(similarity))


class FlowRecorder:
    """Hands realized utilities to the flow learner.

    ``embedder``: the :class:`~preflight.core.ports.Embedder` that computes the
    similarity (None: not available, the pair stays pending). ``flow``: an object with
    ``record(features, realized_utility, meta)``; None builds the core's FlowLearner on
    first use. ``checker``: checks a stored answer whose learning is retried (None: the
    answer check without a detector — numbers, amounts, dates, contradictions).
    """

    def __init__(self, audit: AuditLog, embedder: Embedder | None = None,
                 flow: Any = None, checker: Checker | None = None) -> None:
        self.audit = audit
        self.embedder = embedder
        self._flow = flow
        self.checker: Checker = checker if checker is not None else check_answer

    @property
    def flow(self) -> Any:
        if self._flow is None:
            from preflight.core.utility.flow import FlowLearner

            self._flow = FlowLearner()
        return self._flow

    def learn(self, record_id: int, original: str, answer: str,
              features: dict[str, float] | None, plan: SendPlan | None,
              predicted: float | None, provider: dict[str, str] | None = None,
              check: AnswerCheck | None = None) -> tuple[Realized | None, str]:
        """(realized utility, "recorded" | "pending" | "skipped"). ``provider``
        ({"provider", "model"}) names the answer's provider when there is no ``plan``;
        ``check``: the answer checked against ``original`` (None: checked here by the
        recorder's ``checker``)."""
        if not answer.strip():
            self.audit.update(record_id, flow_pending=0)
            return None, "skipped"
        try:
            if self.embedder is None:
                raise LookupError("no embedder")
            similarity = float(self.embedder.similarity(original, answer))
            if math.isnan(similarity):
                raise ValueError("similarity is NaN")
            if check is None:
                check = self.checker(original, answer)
            realized = realized_of(similarity, check)
            self.audit.update(record_id, realized_utility=realized.utility)
        except Exception as exc:  # noqa: BLE001 - learning never costs the user the answer
            log.warning("realized utility not computed yet (%s); kept for later",
                        type(exc).__name__)
            return None, "pending"
        try:
            # provider + model: each provider's answers train its own model (flow.py)
            meta = {"record_id": record_id, "predicted_utility": predicted, **(provider or {}),
                    "similarity": realized.similarity,
                    "unsupported_facts": len(check.unsupported),
                    "supported_facts": check.supported_count}
            if plan is not None:
                meta.update(provider=plan.provider.name, model=plan.provider.model,
                            method=plan.method, epsilon=plan.epsilon, task=plan.task.kind)
            self.flow.record(dict(features or {}), realized.utility, meta)
            self.audit.update(record_id, flow_pending=0)
            return realized, "recorded"
        except Exception as exc:  # noqa: BLE001
            log.warning("flow learner unavailable (%s); the pair is kept for later",
                        type(exc).__name__)
            return realized, "pending"

    def flush_pending(self) -> int:
        """Hand finished sends still marked pending to the flow learner; returns how many
        were recorded. Needs the original text (stored only with the user's opt-in) when
        the realized utility was never computed."""
        done = 0
        for row in self.audit.pending_flow():
            answer = row["answer_restored"] or ""
            if row["realized_utility"] is None and not row["original_text"]:
                continue
            if row["realized_utility"] is not None:
                try:
                    self.flow.record({"epsilon": row["epsilon"]}, float(row["realized_utility"]),
                                     {"record_id": row["id"], "method": row["method"],
                                      "provider": row["provider"], "model": row["model"]})
                    self.audit.update(row["id"], flow_pending=0)
                    done += 1
                except Exception as exc:  # noqa: BLE001
                    log.warning("flow learner still unavailable (%s)", type(exc).__name__)
                    break
            else:
                _, state = self.learn(row["id"], row["original_text"], answer,
                                      {"epsilon": row["epsilon"]}, None,
                                      row["predicted_utility"],
                                      {"provider": row["provider"], "model": row["model"]})
                done += state == "recorded"
        return done
