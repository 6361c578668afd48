"""A PII evaluation set: real English text (aclsum paper abstracts and introductions)
with fictional PII (Faker, seeded) inserted in template sentences at recorded offsets.

No PII here was annotated by people: the gold spans are exactly the inserted values.
Precision is therefore an estimate — a detection outside the inserted values may still
be real PII of the host text (authors' names, places), and it counts against us.

Two splits guard against tuning to the generator:
- ``dev``: aclsum train/val documents, Faker seed 1, every template but the last of each
  type;
- ``heldout``: aclsum test documents, Faker seed 2, all templates (so the last template of
  each type is only ever seen here).
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from faker import Faker

GOLD_TYPES = ("PERSON", "EMAIL", "PHONE", "SSN", "CARD", "IBAN", "IP", "API_KEY",
              "ADDRESS", "DOB", "ORG")


@dataclass(frozen=True)
class GoldSpan:
    start: int
    end: int
    type: str


@dataclass(frozen=True)
class EvalDoc:
    doc_id: str
    text: str
    gold: tuple[GoldSpan, ...] = field(default_factory=tuple)


# -- host text ---------------------------------------------------------------------------

_DETOK = [
    (re.compile(r" ([,.;:!?%)\]])"), r"\1"),
    (re.compile(r"([(\[]) "), r"\1"),
    (re.compile(r" n't\b"), "n't"),
    (re.compile(r" '(s|re|ve|ll|d|m)\b"), r"'\1"),
    (re.compile(r"`` | ''"), '"'),
]


def detokenize(sentence: str) -> str:
    for pattern, repl in _DETOK:
        sentence = pattern.sub(repl, sentence)
    return sentence.strip()


def aclsum_documents(splits: tuple[str, ...]) -> Iterator[tuple[str, list[str]]]:
    """(paper id, detokenized sentences of abstract + introduction) from the aclsum wheel."""
    root = resources.files("aclsum") / "dataset"
    for split in splits:
        with (root / f"{split}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                sents = row["sentences"].get("abstract", []) + row["sentences"].get(
                    "introduction", [])
                sents = [detokenize(s) for s in sents if len(s.split()) >= 4]
                if sents:
                    yield row["id"], sents


# -- fictional values --------------------------------------------------------------------

def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


_B62 = string.ascii_letters + string.digits


def api_key(rng: random.Random) -> str:
    """A fictional credential in one of the common vendor formats (or a generic token)."""
    kind = rng.randrange(9)
    up = string.ascii_uppercase
    if kind == 0:
        return "sk-proj-" + _rand(rng, _B62 + "_-", 48)
    if kind == 1:
        return "sk-" + _rand(rng, _B62, 48)
    if kind == 2:
        return "AKIA" + _rand(rng, up + string.digits, 16)
    if kind == 3:
        return "ghp_" + _rand(rng, _B62, 36)
    if kind == 4:
        return "github_pat_" + _rand(rng, _B62, 22) + "_" + _rand(rng, _B62, 59)
    if kind == 5:
        return "xoxb-" + _rand(rng, string.digits, 12) + "-" + _rand(rng, string.digits, 13) \
            + "-" + _rand(rng, _B62, 24)
    if kind == 6:
        return "sk_live_" + _rand(rng, _B62, 24)
    if kind == 7:
        return "AIza" + _rand(rng, _B62 + "_-", 35)
    return _rand(rng, _B62, rng.choice((32, 40, 48)))


def card_number(fake: Faker, rng: random.Random) -> str:
    number = fake.credit_card_number()
    style = rng.randrange(3)
    if style == 0:
        return number
    sep = " " if style == 1 else "-"
    if len(number) == 15:  # Amex grouping 4-6-5
        return sep.join((number[:4], number[4:10], number[10:]))
    return sep.join(number[i:i + 4] for i in range(0, len(number), 4))


_IBAN_LOCALES = ("en_GB", "de_DE", "fr_FR", "nl_NL", "es_ES", "it_IT", "pl_PL", "pt_PT")


def iban(fakes: dict[str, Faker], rng: random.Random) -> str:
    value = fakes[rng.choice(_IBAN_LOCALES)].iban()
    if rng.random() < 0.5:
        return " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    return value


def ip_address(fake: Faker, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return fake.ipv4_public()
    if r < 0.75:
        return fake.ipv4_private()
    return fake.ipv6()


def address(fakes: dict[str, Faker], rng: random.Random) -> str:
    r = rng.random()
    fake = fakes["en_GB"] if r < 0.25 else fakes["en_US"]
    value = fake.address()
    if rng.random() < 0.5:
        value = value.replace("\n", ", ")
    return value


_DATE_FORMATS = ("%B %d, %Y", "%m/%d/%Y", "%Y-%m-%d", "%d %B %Y", "%b %d, %Y", "%d.%m.%Y")


def dob(fake: Faker, rng: random.Random) -> str:
    return fake.date_of_birth(minimum_age=18, maximum_age=90).strftime(rng.choice(_DATE_FORMATS))


def person(fake: Faker, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        name = f"{fake.first_name()} {fake.last_name()}"
    elif r < 0.8:
        name = fake.name()  # may carry a prefix/suffix (Dr., Jr.)
    else:
        name = f"{fake.first_name()} {fake.first_name()[0]}. {fake.last_name()}"
    return name.upper() if rng.random() < 0.07 else name


# -- templates ---------------------------------------------------------------------------
# Each template holds one {v} slot (the gold value) and may hold {name} (a person that is
# also gold). The last template of each list is held out of the dev split.

TEMPLATES: dict[str, list[str]] = {
    "PERSON": [
        "{v} reviewed an early draft of this paper.",
        "The annotation was carried out by {v} over two weeks.",
        "We thank {v} for helpful comments on the experiments.",
        "According to {v}, the baseline had not been tuned.",
        "Correspondence should be addressed to {v}.",
        "The second round of labels came from {v}, a linguist.",
        "Funding for the annotators was approved by {v} in March.",
    ],
    "EMAIL": [
        "Questions about the data can be sent to {v}.",
        "Contact: {v}",
        "The authors can be reached at {v} for the code.",
        "Requests for the corpus go to {v} and are answered within a week.",
        "A copy was forwarded to {v} before the deadline.",
    ],
    "PHONE": [
        "For access, call {v} during office hours.",
        "The lab phone number is {v}.",
        "Participants could reach the study team at {v}.",
        "Tel: {v}",
        "Leave a message at {v} if nobody answers.",
    ],
    "SSN": [
        "Her SSN is {v}.",
        "The consent form listed social security number {v}.",
        "Payroll records show SSN {v} for the annotator.",
        "The applicant's Social Security No. {v} was redacted in the release.",
    ],
    "CARD": [
        "The conference fee was charged to card {v}.",
        "Payment was made with the credit card {v}.",
        "Card number: {v}",
        "We reimbursed the expenses paid with {v} last month.",
        "The visa ending the series, {v}, was declined twice.",
    ],
    "IBAN": [
        "Please wire the honorarium to IBAN {v}.",
        "Bank details: {v}",
        "The grant was paid into account {v}.",
        "Transfers should use {v} as the beneficiary account.",
    ],
    "IP": [
        "The demo server runs at {v}.",
        "Most requests came from {v} during the crawl.",
        "Host: {v}",
        "We blocked {v} after repeated scraping attempts.",
    ],
    "API_KEY": [
        "The experiments used the API key {v}.",
        "export OPENAI_API_KEY={v}",
        "A token ({v}) was accidentally committed to the repository.",
        "Authentication used the credential {v} for every request.",
        "api_key: {v}",
    ],
    "ADDRESS": [
        "The workshop will take place at {v}.",
        "Send the signed forms to {v}.",
        "{name} lives at {v}.",
        "Shipping address: {v}",
        "Our office moved to {v} in January.",
    ],
    "DOB": [
        "{name} was born on {v}.",
        "DOB: {v}",
        "Date of birth: {v}",
        "The youngest participant, born {v}, was excluded.",
    ],
    "ORG": [
        "The data was provided by {v}.",
        "This work was funded by {v}.",
        "We partnered with {v} to collect the transcripts.",
        "Annotators were hired through {v}.",
        "A license agreement with {v} covers the release.",
    ],
}


@dataclass
class _Generators:
    fakes: dict[str, Faker]
    rng: random.Random

    def value(self, typ: str) -> str:
        f, rng = self.fakes["en_US"], self.rng
        makers: dict[str, Callable[[], str]] = {
            "PERSON": lambda: person(f, rng),
            "EMAIL": f.email,
            "PHONE": lambda: (self.fakes["en_GB"] if rng.random() < 0.2 else f).phone_number(),
            "SSN": f.ssn,
            "CARD": lambda: card_number(f, rng),
            "IBAN": lambda: iban(self.fakes, rng),
            "IP": lambda: ip_address(f, rng),
            "API_KEY": lambda: api_key(rng),
            "ADDRESS": lambda: address(self.fakes, rng),
            "DOB": lambda: dob(f, rng),
            "ORG": f.company,
        }
        return makers[typ]()


def _fill(template: str, gen: _Generators, typ: str) -> tuple[str, list[GoldSpan]]:
    """Template → sentence with gold spans relative to the sentence start."""
    out, gold, pos = [], [], 0
    for m in re.finditer(r"\{(v|name)\}", template):
        out.append(template[pos:m.start()])
        offset = sum(len(p) for p in out)
        slot_type = typ if m.group(1) == "v" else "PERSON"
        value = gen.value(slot_type)
        if m.start() == 0 and slot_type == "ORG":
            value = value[0].upper() + value[1:]
        out.append(value)
        gold.append(GoldSpan(offset, offset + len(value), slot_type))
        pos = m.end()
    out.append(template[pos:])
    return "".join(out), gold


def build_split(split: str = "dev", n_docs: int | None = None,
                per_doc: int = 8, sentences_per_doc: int = 12) -> list[EvalDoc]:
    """Documents of the split with ``per_doc`` PII sentences each (types cycle evenly)."""
    if split == "dev":
        seed, sources, held_out = 1, ("train", "val"), True
    elif split == "heldout":
        seed, sources, held_out = 2, ("test",), False
    else:
        raise ValueError(f"unknown split {split!r} (dev or heldout)")
    rng = random.Random(seed)
    fakes = {}
    for loc in ("en_US",) + _IBAN_LOCALES:
        fakes[loc] = Faker(loc)
        fakes[loc].seed_instance(seed)
    gen = _Generators(fakes, rng)
    docs: list[EvalDoc] = []
    type_cycle = 0
    for doc_id, sents in aclsum_documents(sources):
        if n_docs is not None and len(docs) >= n_docs:
            break
        body = sents[:sentences_per_doc]
        inserts: dict[int, list[tuple[str, list[GoldSpan]]]] = {}
        for _ in range(per_doc):
            typ = GOLD_TYPES[type_cycle % len(GOLD_TYPES)]
            type_cycle += 1
            templates = TEMPLATES[typ][:-1] if held_out else TEMPLATES[typ]
            sentence, gold = _fill(rng.choice(templates), gen, typ)
            inserts.setdefault(rng.randrange(len(body) + 1), []).append((sentence, gold))
        parts: list[str] = []
        spans: list[GoldSpan] = []
        length = 0

        def add(piece: str, gold: list[GoldSpan] = ()) -> None:
            nonlocal length
            if parts:
                sep = "\n" if piece.startswith(("Contact:", "Tel:", "Host:", "DOB:", "Date of",
                                                "Bank", "Card", "Shipping", "api_key", "export")) \
                    else " "
                parts.append(sep)
                length += len(sep)
            for g in gold:
                spans.append(GoldSpan(length + g.start, length + g.end, g.type))
            parts.append(piece)
            length += len(piece)

        for i in range(len(body) + 1):
            for sentence, gold in inserts.get(i, []):
                add(sentence, gold)
            if i < len(body):
                add(body[i])
        text = "".join(parts)
        if any(text[g.start:g.end] == "" for g in spans):
            raise AssertionError("empty gold span")
        docs.append(EvalDoc(doc_id, text, tuple(spans)))
    return docs


def write_jsonl(docs: list[EvalDoc], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"id": d.doc_id, "text": d.text,
                                 "gold": [[g.start, g.end, g.type] for g in d.gold]}) + "\n")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Build the PII evaluation set (JSONL).")
    ap.add_argument("--split", default="dev", choices=("dev", "heldout"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    built = build_split(args.split)
    write_jsonl(built, args.out)
    print(f"{len(built)} documents, {sum(len(d.gold) for d in built)} gold spans → {args.out}")
