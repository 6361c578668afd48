"""What the user asks a model to do with the document.

One definition serves the local SLM and the cloud LLM, so the SLM's answer predicts the
cloud's answer on the same request. The user's own words — the question and the optional
``note`` (a custom instruction such as "summarize for the board in 5 bullets") — are
sanitized with the document's policy and vault before a send
(:mod:`preflight.core.send.question`), and the whole request is re-scanned.
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
class Task:
    kind: str                  # "summarize" | "question" | "correct"
    question: str = ""
    max_tokens: int = SUMMARY_MAX_TOKENS
    note: str = ""             # the user's custom instruction (optional, any task)

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

    def messages(self, document: str) -> list[dict[str, str]]:
        """Chat messages for an OpenAI-compatible chat completions request."""
        return [
            {"role": "system", "content": "You are a careful assistant."},
            {"role": "user", "content": f"{self.instruction()}\n\nDocument:\n{document}"},
        ]

    def completion_prompt(self, document: str) -> str:
        """A plain completion prompt, for base models without a chat template."""
        note = f"Instruction: {self.note.strip()}\n" if self.note.strip() else ""
        if self.kind == "summarize":
            return f"{document.strip()}\n\n{note}TL;DR:"
        if self.kind == "question":
            return f"{document.strip()}\n\n{note}Question: {self.question.strip()}\nAnswer:"
        return f"{self.instruction()}\n\n{document.strip()}\n\nRewritten:"


SUMMARIZE = Task("summarize")
CORRECT = Task("correct", max_tokens=512)
