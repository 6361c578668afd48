"""What the user asks a model to do with the document.

One definition serves the local SLM and the cloud LLM, so the SLM's answer predicts the
cloud's answer on the same request. The user's own words — the question and the optional
``note`` (a custom instruction such as "summarize for the board in 5 bullets") — are
sanitized with the document's policy and vault before a send
(:mod:`preflight.core.send.question`), and the whole request is re-scanned.

A follow-up question on the same document carries the conversation so far
(``Task.history``): each earlier turn's question or instruction as it was sent and the
provider's answer as it came back (placeholders, never restored values). The messages
put the document once, in the first turn, as the provider saw it then.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# The cloud's answers in the utility data set (its target E) were capped here, as in the
# study the assessor's design follows. Answers shown to the user are not: they take the
# user's answer length (``Settings.answer_max_tokens``, see :meth:`Task.for_answer`).
SUMMARY_MAX_TOKENS = 142
# The local SLM's own answers, whose similarity to the document gives features C and D,
# are capped here: the answer is most of a refined prediction's time, and its first
# sentences carry what C and D measure. The regressor must learn from features computed
# with the same cap (the feature rows record it; ``train_utility`` checks).
ASSESSOR_ANSWER_TOKENS = 48
ANSWER_MAX_TOKENS = 800          # default answer length: long enough for a whole answer
ANSWER_TOKENS_RANGE = (32, 16384)  # what the setting accepts


@dataclass(frozen=True)
class Turn:
    """One earlier exchange of a conversation, as it went over the wire: the task as sent
    (its question and instruction already protected) and the provider's raw answer."""

    kind: str
    question: str
    note: str
    answer: str

    def task(self) -> "Task":
        return Task(self.kind, question=self.question, note=self.note)


@dataclass(frozen=True)
class Task:
    kind: str                  # "summarize" | "question" | "correct"
    question: str = ""
    max_tokens: int = SUMMARY_MAX_TOKENS
    note: str = ""             # the user's custom instruction (optional, any task)
    history: tuple[Turn, ...] = ()   # earlier turns of the conversation (see the module doc)

    def turn(self, answer: str) -> Turn:
        """This task, answered with ``answer`` (raw), as a turn of its conversation."""
        return Turn(self.kind, self.question, self.note, answer)

    def user_text(self) -> dict[str, str]:
        """The parts of the request the user typed (field name → text), non-empty only."""
        return {k: v for k, v in (("question", self.question), ("note", self.note))
                if v.strip()}

    def with_user_text(self, question: str, note: str) -> "Task":
        """The same task with other user-typed text (e.g. sanitized)."""
        return replace(self, question=question, note=note)

    def _note_line(self) -> str:
        return f"\nAdditional instruction: {self.note.strip()}" if self.note.strip() else ""

    def for_answer(self, max_tokens: int) -> "Task":
        """This task as a user-facing answer of at most ``max_tokens`` tokens."""
        return replace(self, max_tokens=int(max_tokens))

    def instruction(self) -> str:
        return self._base_instruction() + self._note_line()

    def _base_instruction(self) -> str:
        if self.kind == "summarize":
            return (
                "Write a short summary of the document below in plain prose, "
                "in at most three sentences. Keep names and placeholders such as "
                "<PERSON_1> exactly as written."
            )
        if self.kind == "question":
            return (
                "Answer the question using only the document below. Keep names and "
                "placeholders such as <PERSON_1> exactly as written.\n"
                f"Question: {self.question.strip()}"
            )
        if self.kind == "correct":
            return (
                "The document below was altered word by word and may read badly. Rewrite it "
                "as fluent, grammatical English, keeping its meaning and length. Output only "
                "the rewritten text."
            )
        raise ValueError(f"unknown task kind {self.kind!r}")

    def _follow_up(self) -> str:
        """This task as a later turn of a conversation (the document is already above)."""
        if self.kind == "question":
            return f"Question: {self.question.strip()}{self._note_line()}"
        return self.instruction()

    def messages(self, document: str) -> list[dict[str, str]]:
        """Chat messages for an OpenAI-compatible chat completions request: the document
        with the first turn's instruction, then each earlier answer and later question."""
        tasks = [t.task() for t in self.history] + [self]
        out = [{"role": "system", "content": "You are a careful assistant."},
               {"role": "user", "content": f"{tasks[0].instruction()}\n\nDocument:\n{document}"}]
        for turn, task in zip(self.history, tasks[1:]):
            out.append({"role": "assistant", "content": turn.answer})
            out.append({"role": "user", "content": task._follow_up()})
        return out

    def _cue(self) -> str:
        note = f"Instruction: {self.note.strip()}\n" if self.note.strip() else ""
        if self.kind == "summarize":
            return f"{note}TL;DR:"
        return f"{note}Question: {self.question.strip()}\nAnswer:"

    def completion_prompt(self, document: str) -> str:
        """A plain completion prompt, for base models without a chat template (a
        conversation: the document, then each earlier cue with its answer)."""
        if self.kind not in ("summarize", "question"):
            return f"{self.instruction()}\n\n{document.strip()}\n\nRewritten:"
        said = "".join(f"{t.task()._cue()} {t.answer.strip()}\n\n" for t in self.history)
        return f"{document.strip()}\n\n{said}{self._cue()}"


SUMMARIZE = Task("summarize")
CORRECT = Task("correct", max_tokens=512)
