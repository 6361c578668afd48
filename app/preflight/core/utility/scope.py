"""What the utility prediction was measured on, and whether a document lies inside it.

The regressor learned from one cloud stand-in's summaries of a few kinds of text, each
between a shortest and a longest training document. A document outside that length range
gets a number the model extrapolated: its length is the one property of the text that,
measured on real text of kinds never trained on, marks most of them (a distance between
sentence embeddings marked at most 12 %; ``preflight_eval.utility_scope`` prints every
method tried). A document of a trained length but of another kind is *not* detected: the
window always says what was measured, and marks only what it can tell. So is a task the
prediction was never measured on: every training answer was a summary, asked without an
instruction of the user's own.

What the prediction is worth outside that scope was read once, on documents of kinds it
never trained on (the frozen test set of issue 47): the share of sends whose shown value
missed the realized score by more than the paper's 0.1, overall and for questions
(:class:`UnseenReading`). The window says it beside the scope.

The measured scope lives in ``resources/utility/scope.json``, written by
``python -m preflight_eval.utility_scope --write`` from the training documents; its
``unseen`` entry by ``python -m preflight_eval.read_frozen --scope`` from that reading's
report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from preflight.core import paths
from preflight.core.tasks import Task
from preflight.core.utility.features import word_count

SCOPE_FILE = "scope.json"
FORMAT = 3


@dataclass(frozen=True)
class UnseenReading:
    """The one reading of the prediction on documents of kinds it never trained on: how
    often the value the faces show missed the realized score by more than 0.1."""

    kinds: str               # e.g. "court judgments, manual pages and READMEs"
    documents: int
    sends: int
    missed: float            # share of the sends, 0–1
    missed_questions: float | None = None   # the same for the question sends

    def to_json(self) -> dict[str, Any]:
        return {"kinds": self.kinds, "documents": self.documents, "sends": self.sends,
                "missed": self.missed, "missed_questions": self.missed_questions}

    @classmethod
    def from_json(cls, data: Any) -> UnseenReading | None:
        """None for anything but a well-formed entry (then nothing is said of it)."""
        if not isinstance(data, Mapping):
            return None
        try:
            q = data.get("missed_questions")
            reading = cls(str(data["kinds"]), int(data["documents"]), int(data["sends"]),
                          float(data["missed"]), None if q is None else float(q))
        except (KeyError, TypeError, ValueError):
            return None
        shares = (reading.missed, reading.missed_questions or 0.0)
        if not (reading.kinds and reading.documents > 0 and reading.sends > 0
                and all(0.0 <= x <= 1.0 for x in shares)):
            return None
        return reading


@dataclass(frozen=True)
class ScopeVerdict:
    """A document against the measured scope."""

    words: int
    shortest: int            # words of the shortest and longest training document
    longest: int
    measured_on: str         # the task, kinds and cloud model, in words
    task_measured: bool = True   # the task is one the training answers were asked
    task_kind: str = "summarize"
    unseen: UnseenReading | None = None

    @property
    def length_inside(self) -> bool:
        return self.shortest <= self.words <= self.longest

    @property
    def inside(self) -> bool:
        return self.length_inside and self.task_measured

    def to_json(self) -> dict[str, Any]:
        return {"inside": self.inside, "words": self.words,
                "measured_words": [self.shortest, self.longest],
                "task_measured": self.task_measured, "measured_on": self.measured_on,
                "unseen": None if self.unseen is None else self.unseen.to_json()}


@dataclass(frozen=True)
class MeasuredScope:
    shortest: int
    longest: int
    measured_on: str
    tasks: tuple[str, ...] = ("summarize",)   # the task kinds the training answers were
    meta: Mapping[str, Any] = field(default_factory=dict)

    def verdict(self, text: str, task: Task | None = None) -> ScopeVerdict | None:
        """``text`` for ``task`` (None: a summary) against the scope; None for an empty
        text: nothing can be said. A task with the user's own instruction or an earlier
        turn is not one that was measured."""
        words = word_count(text)
        if not words:
            return None
        measured = task is None or (task.kind in self.tasks and not task.note.strip()
                                    and not task.history)
        return ScopeVerdict(words, self.shortest, self.longest, self.measured_on, measured,
                            "summarize" if task is None else task.kind,
                            UnseenReading.from_json(self.meta.get("unseen")))

    def save(self, path: Path) -> None:
        data = {"format": FORMAT, "shortest": self.shortest, "longest": self.longest,
                "measured_on": self.measured_on, "tasks": list(self.tasks),
                **dict(self.meta)}
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")

    @classmethod
    def load(cls, path: Path | None = None) -> "MeasuredScope | None":
        """The shipped scope; None when the file is missing or of another format (an older
        install): the window then says nothing about scope rather than something untrue."""
        path = path or paths.resource_path("utility", SCOPE_FILE)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        try:
            shortest, longest = int(data["shortest"]), int(data["longest"])
            measured_on = str(data["measured_on"])
            tasks = tuple(str(t) for t in data.get("tasks", ("summarize",)))
        except (KeyError, TypeError, ValueError):
            return None
        rest = {k: v for k, v in data.items()
                if k not in ("format", "shortest", "longest", "measured_on", "tasks")}
        if not 0 < shortest <= longest:
            return None
        return cls(shortest, longest, measured_on, tasks, rest)
