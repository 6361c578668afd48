"""The leak check of the send path, against ground truth: what the generator inserted.

A corpus of Faker letters is generated with the direct identifiers and secrets each letter
carries *kept* (not re-detected): the detector under test never decides what counts as a
leak. Each letter is prepared with a method and sent to a loopback capture server; every
byte that server received (request line and URL, headers, body) is searched for every
inserted value:

- the value as inserted, in the bytes decoded as UTF-8, in the URL percent-decoded, and in
  every string of the JSON body (so JSON escapes such as ``\\n`` or ``\\u00e9`` cannot hide
  it);
- case-folded with whitespace collapsed (names, e-mails, addresses: ``JOHN SMITH``);
- digits only for cards, phones and SSNs (``4111-1111 1111.1111`` on the wire matches
  ``4111111111111111``; separators between digits are ignored on the wire side); an
  IBAN with its spaces removed and upper-cased.

A value counts once per send however many forms matched. Partial leaks (a surname alone,
the last four card digits a masking method keeps on purpose) are not counted: only a whole
inserted value is a leak here.

Used by ``preflight_eval.bench_send`` (prints the numbers) and by
``tests/integration/test_send_loopback.py`` (asserts them).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

from preflight_eval.pii_corpus import _IBAN_LOCALES, api_key, iban

#: Kinds the letters carry, all direct identifiers or secrets (preflight.core.pii.entities).
KINDS = ("PERSON", "EMAIL", "PHONE", "CARD", "SSN", "IBAN", "API_KEY", "ADDRESS")
_DIGIT_KINDS = frozenset({"CARD", "PHONE", "SSN"})
_FOLDED_KINDS = frozenset({"PERSON", "EMAIL", "ADDRESS"})


@dataclass(frozen=True)
class Inserted:
    kind: str
    value: str


@dataclass(frozen=True)
class Letter:
    text: str
    inserted: tuple[Inserted, ...]


def letters(n: int, seed: int = 1234) -> list[Letter]:
    """``n`` seeded Faker letters and the direct identifiers and secrets put into each."""
    from faker import Faker

    Faker.seed(seed)                  # the shared random of every Faker instance below
    fake = Faker("en_US")
    banks = {loc: Faker(loc) for loc in _IBAN_LOCALES}
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        v = {"a": fake.name(), "b": fake.name(), "email": fake.free_email(),
             "phone": fake.phone_number(), "card": fake.credit_card_number("visa16"),
             "ssn": fake.ssn(), "iban": iban(banks, rng), "key": api_key(rng),
             "street": fake.street_address()}
        text = (
            f"Dear {v['a']},\n\nthank you for your call on {fake.date_this_year()}. As agreed, "
            f"{v['b']} from {fake.company()} will contact you at {v['email']} or on "
            f"{v['phone']}. Your card {v['card']} was refunded and your SSN {v['ssn']} is on "
            f"file. The deposit goes to IBAN {v['iban']}; the portal key is {v['key']}. "
            f"The contract is attached.\n\nRegards,\n{v['b']}\n{v['street']}, {fake.city()}"
        )
        kinds = {"a": "PERSON", "b": "PERSON", "email": "EMAIL", "phone": "PHONE",
                 "card": "CARD", "ssn": "SSN", "iban": "IBAN", "key": "API_KEY",
                 "street": "ADDRESS"}
        inserted = tuple(Inserted(kinds[k], value) for k, value in v.items())
        out.append(Letter(text, inserted))
    return out


# -- searching the wire ------------------------------------------------------------------

_SEP_BETWEEN_DIGITS = re.compile(r"(?<=\d)[\s\-.()/+]+(?=\d)")
_PHONE_EXTENSION = re.compile(r"\s*(x|ext\.?)\s*\d+$", re.I)


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text).upper()


def _json_strings(obj: object) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield key
            yield from _json_strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _json_strings(value)


class Wire:
    """Everything one server received, in every form a value is searched in."""

    def __init__(self, head: bytes, body: bytes) -> None:
        raw_head = head.decode("latin-1")
        texts = [head.decode("utf-8", "replace"), raw_head, unquote(raw_head),
                 body.decode("utf-8", "replace")]
        try:
            texts += list(_json_strings(json.loads(body)))
        except ValueError:
            pass                      # not JSON: the decoded bytes are still searched
        self.text = "\n".join(texts)
        self.folded = _folded(self.text)
        self.digits = _SEP_BETWEEN_DIGITS.sub("", self.text)
        self.compact = _compact(self.text)

    def holds(self, item: Inserted) -> bool:
        """Is the whole inserted value (or a normalized variant of it) on the wire?"""
        value = item.value
        if value in self.text:
            return True
        if item.kind in _FOLDED_KINDS and _folded(value) in self.folded:
            return True
        if item.kind in _DIGIT_KINDS:
            digits = re.sub(r"\D", "", _PHONE_EXTENSION.sub("", value))
            return digits in self.digits
        if item.kind == "IBAN":
            return _compact(value) in self.compact
        return False


# -- one method over the corpus ----------------------------------------------------------


@dataclass
class LeakReport:
    method: str
    documents: int = 0
    sent: int = 0
    blocked: int = 0                 # refused by the re-scan: nothing may leave
    blocked_reached: int = 0         # requests seen for blocked sends (must be 0)
    unconfirmed_reached: int = 0     # requests seen for unconfirmed sends (must be 0)
    checked: Counter = field(default_factory=Counter)   # kind -> inserted values in sent sends
    leaked: Counter = field(default_factory=Counter)    # kind -> of those, found on the wire
    leaks: list[tuple[str, str]] = field(default_factory=list)     # every (kind, value) found

    def line(self) -> str:
        per_kind = ", ".join(f"{k} {self.leaked[k]}/{self.checked[k]}" for k in KINDS
                             if self.checked[k])
        return (f"{self.method:11} sent {self.sent:3}  blocked {self.blocked:3}  "
                f"leaked {sum(self.leaked.values()):3} of {sum(self.checked.values()):4} "
                f"inserted values ({per_kind})  unconfirmed/blocked sends that reached the "
                f"server {self.unconfirmed_reached}/{self.blocked_reached}")


def check_method(session, provider: str, method: str, corpus: list[Letter],  # noqa: ANN001
                 received: Callable[[], list[tuple[bytes, bytes]]], *,
                 task=None) -> LeakReport:  # noqa: ANN001
    """Send every letter with ``method`` through ``session`` (a SendSession whose provider
    ``provider`` points at a capture server); ``received()`` lists that server's requests
    as (request line + headers, body)."""
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.session import Confirmation, SendBlocked
    from preflight.core.tasks import SUMMARIZE

    report = LeakReport(method)
    for i, letter in enumerate(corpus):
        report.documents += 1
        plan = session.prepare_send(letter.text, provider, method, SanitizeParams(seed=i),
                                    task or SUMMARIZE)
        before = len(received())
        try:
            session.execute(plan, Confirmation(confirmed=False))
        except SendBlocked:
            pass
        report.unconfirmed_reached += len(received()) - before
        before = len(received())
        try:
            session.execute(plan, Confirmation(True, resend_acknowledged=True), learn=False)
        except SendBlocked:
            report.blocked += 1
            report.blocked_reached += len(received()) - before
            continue
        report.sent += 1
        wires = [Wire(head, body) for head, body in received()[before:]]  # retries too
        if not wires:
            raise RuntimeError(f"a confirmed {method} send reached no server")
        for item in letter.inserted:
            report.checked[item.kind] += 1
            if any(wire.holds(item) for wire in wires):
                report.leaked[item.kind] += 1
                report.leaks.append((item.kind, item.value))
    return report
