"""An answer checked against the document it answers, after every answer (a cloud send
and a local answer alike): :func:`review_answer` runs the core's answer check
(:func:`~preflight.core.utility.answer_check.check_answer`) with the session's own
detector, so the names, places and identifiers an answer states are found as the
document's are. The result travels with the answer (``SendResult.answer_check``,
``LocalResult.answer_check``); both faces show its summary under the answer, and the
realized utility that is shown and learned from is discounted by it
(:func:`~preflight.core.utility.answer_check.faithful_utility`, in :mod:`.learning`).

A check never costs the user the answer: a detector that fails leaves the names unchecked
(numbers, amounts, dates and contradictions still are) and says so in a note. Its cost is
bounded: an answer longer than :data:`CHECKED_CHARS` (a provider that sends pages, up to
the stream's 1 MiB limit) is checked on its beginning, and a note says how much."""

from __future__ import annotations

import logging
from typing import Iterable

from preflight.core.ports import Detector
from preflight.core.utility.answer_check import AnswerCheck, check_answer

log = logging.getLogger(__name__)

NAMES_UNCHECKED = ("Names and places in the answer were not checked against your document "
                   "(the PII detector did not answer); numbers and dates were.")


#: The answer's characters the check reads (a summary or an answer is far shorter; a
#: 1 MiB answer checked whole took 160 MiB and seconds).
CHECKED_CHARS = 20_000


def review_answer(document: str, answer: str, detector: Detector | None,
                  payload: str | None = None) -> tuple[AnswerCheck, str | None]:
    """(the check of ``answer`` against ``document``, a note or None).

    ``payload``: the sanitized text the provider received (None for a local answer, which
    read the original): a flagged fact found there came through the sanitization's noise.
    """
    detect = detector.detect if detector is not None else None
    cut = None
    if len(answer) > CHECKED_CHARS:
        answer = answer[:CHECKED_CHARS]
        cut = (f"The answer was checked against your document on its first "
               f"{CHECKED_CHARS:,} characters only.")
    try:
        return check_answer(document, answer, detect=detect, payload=payload), cut
    except Exception as exc:  # noqa: BLE001 - the detector's failure, not the answer's
        if detect is None:
            raise
        log.warning("answer check without the detector (%s)", type(exc).__name__)
        note = NAMES_UNCHECKED if cut is None else f"{cut} {NAMES_UNCHECKED}"
        return check_answer(document, answer, payload=payload), note


def noise_line(check: AnswerCheck, dx: bool) -> str:
    """Which flagged facts came through the payload's changes rather than from the model:
    ``dx`` — the payload carried d_X noise — names the noise; otherwise the stand-ins or
    generalized values the policy put in. Empty when none did."""
    came = _unique(f.text for f in check.unsupported if f.from_noise)
    if not came:
        return ""
    where = ("came through d_X noise (the words the noise put into the text sent)" if dx
             else "came from the changed text that was sent, not from your document")
    return f"{', '.join(came)} {where}"


def check_line(check: AnswerCheck | None, dx: bool) -> str:
    """The check in one line, as both faces print it: what is not in the document and
    which of it came through noise (empty when nothing is flagged)."""
    if check is None or not check.flagged:
        return ""
    said = check.summary()
    noise = noise_line(check, dx)
    return f"{said}; {noise}" if noise else said


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def realized_phrase(utility: float | None, similarity: float | None,
                    check: AnswerCheck | None) -> str:
    """"realized utility 0.31 (similarity 0.79, lowered for 3 statements your document
    does not support)" — both faces' words; empty when nothing was computed."""
    if utility is None:
        return ""
    said = f"realized utility {utility:.2f}"
    flagged = len(check.unsupported) if check is not None else 0
    if flagged and similarity is not None:
        said += (f" (similarity {similarity:.2f}, lowered for {flagged} statement"
                 f"{'s' if flagged != 1 else ''} your document does not support)")
    return said
