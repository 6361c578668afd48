"""The resend check sees through look-alike letters and invisible characters: a copy of
an already sent document with a few letters swapped is flagged as the same document."""

from __future__ import annotations

import random

from preflight.core.pii.canonical import CONFUSABLES
from preflight.core.send.audit import AuditLog, Fingerprint

DOC = ("We present a method for summarizing scientific papers along three aspects: "
       "the challenge, the approach and the outcome. Our annotators wrote short summaries "
       "for each aspect and we evaluate extractive and abstractive models on them. The "
       "results show that aspect-based summaries are harder for the abstractive models.")

_REVERSE = {}
for latin_from, latin in CONFUSABLES.items():
    _REVERSE.setdefault(latin, latin_from)


def _swap(text: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    positions = [i for i, c in enumerate(text) if c in _REVERSE]
    chosen = set(rng.sample(positions, n))
    return "".join(_REVERSE[c] if i in chosen else c for i, c in enumerate(text))


def _record(log: AuditLog, text: str) -> int:
    return log.begin(kind="send", status="sending", fingerprint=Fingerprint.of(text),
                     provider="p", model="m", method="placeholder", payload=b"{}")


def test_homoglyph_swapped_copy_matches_the_earlier_send(tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    _record(log, DOC)
    for seed in range(5):
        copy = _swap(DOC, 12, seed)
        assert copy != DOC
        priors = log.prior_sends(Fingerprint.of(copy))
        assert priors, "homoglyph copy not recognised"
        assert priors[0].match in ("normalized", "exact")


def test_zero_width_copy_matches(tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    _record(log, DOC)
    copy = "\u200b".join(DOC[i:i + 7] for i in range(0, len(DOC), 7))
    priors = log.prior_sends(Fingerprint.of(copy))
    assert priors and priors[0].match == "normalized"


def test_homoglyph_swap_plus_edit_is_a_near_duplicate(tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    _record(log, DOC)
    copy = _swap(DOC.replace("harder", "much harder"), 15, 7)
    priors = log.prior_sends(Fingerprint.of(copy))
    assert priors and priors[0].match == "near"


def test_a_different_document_does_not_match(tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    _record(log, DOC)
    other = ("Quarterly revenue grew in every region while costs stayed flat, and the board "
             "approved the new budget for hiring two engineers next spring.")
    assert log.prior_sends(Fingerprint.of(other)) == []
