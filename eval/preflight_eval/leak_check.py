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

A value counts once per send however many forms matched.

Partial leaks are counted apart, for a value that is not on the wire whole (``Wire.parts``):

- a person's given name or surname written alone (each word of the name and each half of
  a hyphenated one; titles, suffixes such as MD or Jr, initials and words of 1-2 letters
  are not parts), matched as a word, case-folded;
- a run of 4 or more consecutive digits of a card, phone (without its extension), SSN or
  IBAN, separators on the wire ignored — so the last four digits a masking method keeps
  on purpose count here;
- 8 or more consecutive characters of an API key or secret after its vendor prefix
  (``sk_live_``), e.g. half a key split across two lines;
- the local part of an e-mail address (3 characters or more) as a word.

A part the rest of the document also contains (a surname that is also a word of the
letter, a year among the card's digits) counts only when the wire holds it more often
than the document does outside its inserted values (``background``).

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


#: Words before or after a name that are not part of it (Faker's prefixes and suffixes too).
_NAME_AFFIXES = frozenset({
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "dame", "jr", "sr", "md", "dds",
    "phd", "dvm", "esq", "ii", "iii", "iv", "v",
})
_NUMBER_KINDS = frozenset({"CARD", "PHONE", "SSN", "IBAN"})
_SECRET_KINDS = frozenset({"API_KEY", "SECRET"})
MIN_DIGITS = 4      # a run of this many digits of a number is a partial leak
MIN_SECRET = 8      # ...and this many characters of a key or secret
_VENDOR_PREFIX = re.compile(r"^(?:[A-Za-z]{2,5}[-_])+")


def value_parts(item: Inserted) -> list[str]:
    """The parts of an inserted value whose presence alone is a partial leak."""
    value = item.value
    if item.kind == "PERSON":
        words: list[str] = []
        for token in value.split():
            token = token.strip(".,;:()'\"")
            pieces = [token] + (token.split("-") if "-" in token else [])
            words += [w for w in pieces if len(w) > 2 and w.casefold() not in _NAME_AFFIXES]
        return list(dict.fromkeys(words))
    if item.kind in _NUMBER_KINDS:
        digits = re.sub(r"\D", "", _PHONE_EXTENSION.sub("", value))
        return list(dict.fromkeys(digits[i:i + MIN_DIGITS]
                                  for i in range(len(digits) - MIN_DIGITS + 1)))
    if item.kind in _SECRET_KINDS:
        secret = _VENDOR_PREFIX.sub("", value)     # "sk_live_" names the vendor, no secret
        return [secret[i:i + MIN_SECRET] for i in range(len(secret) - MIN_SECRET + 1)]
    if item.kind == "EMAIL":
        local = value.split("@", 1)[0]
        return [local] if len(local) > 2 else []
    return []


def _occurrences(part: str, text: str, kind: str) -> int:
    if kind in _NUMBER_KINDS:     # digits with separators dropped, inside digit runs
        return sum(run.count(part) for run in re.findall(r"\d+",
                                                         _SEP_BETWEEN_DIGITS.sub("", text)))
    if kind in _SECRET_KINDS:
        return text.count(part)
    return len(re.findall(rf"(?<!\w){re.escape(part.casefold())}(?!\w)", text.casefold()))


def background(text: str, inserted: tuple[Inserted, ...]) -> str:
    """``text`` with its inserted values blanked: what the document says besides them."""
    for item in sorted(inserted, key=lambda i: -len(i.value)):
        text = text.replace(item.value, " ")
    return text


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
        # one reading of what carries the payload (the request line, URL-decoded, and the
        # body as its JSON strings when it is JSON): what partial parts are counted in.
        # Header values (Host's port, Content-Length) are left out: their digits would
        # match four digits of a number by chance.
        self.content = "\n".join([unquote(raw_head.split("\r\n", 1)[0])]
                                 + (texts[4:] or texts[3:4]))

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

    def parts(self, item: Inserted, background: str = "") -> list[str]:
        """The parts of ``item`` on the wire (see the module docstring), each counted only
        when the wire holds it more often than ``background`` (the document's own text
        outside the inserted values) does. Empty when none, or when the value is whole on
        the wire (that is a whole leak, not a partial one)."""
        if self.holds(item):
            return []
        return [p for p in value_parts(item)
                if _occurrences(p, self.content, item.kind)
                > _occurrences(p, background, item.kind)]


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
    leaked: Counter = field(default_factory=Counter)    # kind -> of those, whole on the wire
    leaks: list[tuple[str, str]] = field(default_factory=list)     # every (kind, value) found
    partial: Counter = field(default_factory=Counter)   # kind -> values with a part on the wire
    partials: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)

    def line(self) -> str:
        per_kind = ", ".join(f"{k} {self.leaked[k]}/{self.checked[k]}" for k in KINDS
                             if self.checked[k])
        per_kind_partial = ", ".join(f"{k} {self.partial[k]}" for k in KINDS
                                     if self.partial[k]) or "none"
        return (f"{self.method:11} sent {self.sent:3}  blocked {self.blocked:3}  "
                f"leaked whole {sum(self.leaked.values()):3} of "
                f"{sum(self.checked.values()):4} inserted values ({per_kind}); in part "
                f"{sum(self.partial.values()):3} ({per_kind_partial})  unconfirmed/blocked "
                f"sends that reached the server {self.unconfirmed_reached}/"
                f"{self.blocked_reached}")

    def record(self, item: Inserted, wires: list["Wire"], rest: str) -> None:
        """Count ``item`` of one sent letter: whole on any wire, else any part of it."""
        self.checked[item.kind] += 1
        if any(wire.holds(item) for wire in wires):
            self.leaked[item.kind] += 1
            self.leaks.append((item.kind, item.value))
            return
        parts = tuple(dict.fromkeys(p for wire in wires for p in wire.parts(item, rest)))
        if parts:
            self.partial[item.kind] += 1
            self.partials.append((item.kind, item.value, parts))


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
        rest = background(letter.text, letter.inserted)
        for item in letter.inserted:
            report.record(item, wires, rest)
    return report
