"""One conversation per document: the turns a provider has seen, in order.

A follow-up question on the same document is the next turn of its conversation: the
request carries every earlier turn as it went over the wire — the question or
instruction as sent (protected) and the provider's raw answer (placeholders, never the
values they stand for) — so restored values never go back to the provider. The turns
live in memory only (the window's document, or one command); the audit log records each
send's conversation id and turn number.

What a follow-up costs in privacy is the ledger's business (:mod:`preflight.core.
privacy.ledger`): without d_X it adds ε 0 and needs no resend acknowledgment; with d_X
it adds its ε like any other send of the document.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace

from preflight.core.tasks import Task, Turn


class Conversation:
    """The turns of one document's conversation (thread-safe: the window prepares on one
    lane and sends on another)."""

    def __init__(self, conversation_id: str | None = None,
                 turns: tuple[Turn, ...] = ()) -> None:
        self.id = conversation_id or uuid.uuid4().hex[:12]
        self._turns = list(turns)
        self._lock = threading.Lock()

    @property
    def turns(self) -> tuple[Turn, ...]:
        with self._lock:
            return tuple(self._turns)

    @property
    def next_turn(self) -> int:
        """The number the next send of this conversation gets (1: its first)."""
        with self._lock:
            return len(self._turns) + 1

    def follow(self, task: Task) -> Task:
        """``task`` as the next turn: it carries the conversation so far."""
        return replace(task, history=self.turns)

    def add(self, turn: int, task: Task, answer_raw: str) -> bool:
        """Record turn number ``turn`` (``task`` as sent, ``answer_raw`` as received);
        False when the conversation moved on meanwhile (the turn is not recorded)."""
        with self._lock:
            if turn != len(self._turns) + 1:
                return False
            self._turns.append(replace(task, history=()).turn(answer_raw))
            return True
