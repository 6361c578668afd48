"""Synthetic business documents with realistic, fictional PII (Faker), for the utility
data set: memos, HR notes, customer complaints and meeting minutes.

Each document is assembled from an opening, a random number of body paragraphs drawn in
random order from a per-kind pool (shared paragraphs mixed in), and a closing; every
paragraph has several wordings, and every personal value comes from Faker. Every value
inserted is recorded (type, value) as ground truth, so privacy measurements can later ask
which of them survived sanitization. Documents are deterministic given (seed, index):
each one seeds its own Faker and ``random.Random`` instance, so document 17 is the same
whether or not documents 0–16 were built first (for a fixed Faker version; the corpus
file committed beside the data set is the reference copy).
"""

from __future__ import annotations

import hashlib
import random
import string
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Callable

from faker import Faker
from faker.providers.date_time import Provider as _DateProvider, change_year

#: The day dates are drawn around (the corpus was built on it): Faker counts from today,
#: which made the committed corpus differ from the generator on any later day.
ANCHOR = date(2026, 11, 22)


def _from_anchor(offset: str) -> date:
    """``offset`` ("-2y", "+1y") as Faker reads it, from :data:`ANCHOR`."""
    return ANCHOR + timedelta(**_DateProvider._parse_date_string(offset))

BUSINESS_KINDS = ("memo", "hr_note", "complaint", "minutes")
MIN_WORDS, MAX_WORDS = 150, 400


@dataclass(frozen=True)
class Truth:
    type: str
    value: str


class _Doc:
    """One document under construction: its random sources and the values it inserted."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.fake_gb = Faker("en_GB")
        self.fake_gb.seed_instance(seed + 1)
        self.truth: list[Truth] = []
        self.company = self.fake.company()
        self.people = [self.fake.name() for _ in range(4)]

    def v(self, type_: str, value: str) -> str:
        """Insert ``value`` and record it as ground truth."""
        if Truth(type_, value) not in self.truth:
            self.truth.append(Truth(type_, value))
        return value

    def person(self, i: int) -> str:
        return self.v("PERSON", self.people[i])

    def email(self, i: int) -> str:
        first, *rest = self.people[i].lower().replace(".", "").split()
        domain = self.rng.choice([self.fake.free_email_domain(),
                                  self.company.split()[0].strip(",").lower() + ".com"])
        return self.v("EMAIL", f"{first}.{rest[-1] if rest else 'x'}@{domain}")

    def phone(self) -> str:
        src = self.rng.choice([self.fake, self.fake_gb])
        return self.v("PHONE", src.phone_number())

    def amount(self) -> str:
        cur = self.rng.choice(["$", "EUR ", "£"])
        return self.v("AMOUNT", f"{cur}{self.rng.randint(120, 98000):,}")

    def date(self) -> str:
        d = self.fake.date_between(start_date=_from_anchor("-2y"), end_date=_from_anchor("+1y"))
        return self.v("DATE", d.strftime(self.rng.choice(["%d %B %Y", "%B %d, %Y", "%Y-%m-%d"])))

    def dob(self) -> str:
        # Faker's date_of_birth, counted from the anchor instead of today
        start, end = change_year(ANCHOR, -65), change_year(ANCHOR, -21)
        d = self.fake.date_time_ad(start_datetime=start, end_datetime=end).date()
        d = d if d != start else d + timedelta(days=1)
        return self.v("DOB", d.strftime(self.rng.choice(["%d/%m/%Y", "%B %d, %Y", "%Y-%m-%d"])))

    def address(self) -> str:
        return self.v("ADDRESS", self.fake.address().replace("\n", ", "))

    def iban(self) -> str:
        return self.v("IBAN", self.fake_gb.iban())

    def employee_id(self) -> str:
        return self.v("EMPLOYEE_ID", f"{self.rng.choice(['E', 'EMP-', 'HR'])}"
                                     f"{self.rng.randint(10000, 999999)}")

    def order_id(self) -> str:
        return self.v("ORDER_ID", f"{self.rng.choice(['ORD', 'INV', 'CASE'])}-"
                                  f"{self.rng.randint(100000, 9999999)}")

    def secret(self) -> str:
        if self.rng.random() < 0.5:
            alphabet = string.ascii_letters + string.digits
            key = "sk_live_" + "".join(self.rng.choice(alphabet) for _ in range(32))
            return self.v("API_KEY", key)
        pw = self.fake.password(length=self.rng.randint(10, 16), special_chars=True)
        return self.v("PASSWORD", pw)


Para = Callable[[_Doc], str]


def _pick(d: _Doc, *options: str) -> str:
    return d.rng.choice(options)


# ----------------------------------------------------------------- shared paragraphs
SHARED: list[Para] = [
    lambda d: _pick(
        d,
        f"For questions, contact {d.person(1)} at {d.email(1)} or on {d.phone()}.",
        f"{d.person(1)} ({d.email(1)}, {d.phone()}) is the point of contact until further notice.",
        f"Please reach out to {d.person(1)} by phone on {d.phone()} if anything is unclear.",
    ),
    lambda d: _pick(
        d,
        f"The next review is planned for {d.date()}. Until then the current arrangement stays in place and nobody should commit to new spending.",
        f"A follow-up is scheduled for {d.date()}, when the numbers for the quarter will be final.",
        f"We will revisit this on {d.date()}; in the meantime, keep a record of every exception you grant.",
    ),
    lambda d: _pick(
        d,
        f"Invoices for this matter are paid to {d.company}'s account {d.iban()}. The total so far is {d.amount()}.",
        f"The refund of {d.amount()} will be transferred to the account {d.iban()} within ten working days.",
        f"Budget impact: {d.amount()} this quarter, charged to the shared operations cost centre.",
    ),
    lambda d: _pick(
        d,
        f"Temporary access for the new system: user {d.people[2].split()[0].lower()}, credential {d.secret()}. Change it after the first login.",
        f"The integration uses the key {d.secret()}; do not paste it into tickets or chat.",
        "Access to the shared drive will be reviewed at the end of the month, and unused accounts will be closed.",
    ),
    lambda d: _pick(
        d,
        "Several colleagues raised the workload in the last weeks, and the team agreed to postpone two lower-priority projects rather than extend working hours again.",
        "The feedback from the regional offices was mostly positive, although the reporting template is still considered too long and will be shortened.",
        "Travel remains limited to customer visits that cannot be held remotely; internal workshops move online for the rest of the year.",
        "The supplier confirmed the new delivery schedule, which removes the bottleneck we saw in the spring but raises the unit price slightly.",
    ),
]

# ----------------------------------------------------------------- memos
MEMO_OPEN: list[Para] = [
    lambda d: f"MEMORANDUM\nTo: All staff, {d.company}\nFrom: {d.person(0)}\nDate: {d.date()}\nSubject: " + _pick(d, "Changes to the expense policy", "Office relocation", "Year-end planning", "New security rules") + "\n",
    lambda d: f"Internal memo from {d.person(0)} ({d.email(0)}) to the management team of {d.company}, dated {d.date()}.\n",
]
MEMO_BODY: list[Para] = [
    lambda d: _pick(
        d,
        f"From {d.date()}, expense claims above {d.amount()} need written approval from a department head before they are submitted.",
        f"The office at {d.address()} closes at the end of the month; teams move to the new floor in stages, starting with finance.",
        "All laptops must run the latest security update by Friday. Devices that are not updated will lose access to the network automatically.",
    ),
    lambda d: _pick(
        d,
        f"{d.person(2)} will coordinate the move and can be reached at {d.email(2)}.",
        f"Requests for exceptions go to {d.person(2)}, who keeps the register of approvals.",
    ),
    lambda d: "The aim is not to add paperwork but to see earlier where money goes, so that the savings target for the year can still be met without cutting training.",
    lambda d: f"Parking permits for the new site are issued by {d.person(3)} on request; there are fewer spaces than before, so car sharing gets priority.",
]
MEMO_CLOSE: list[Para] = [
    lambda d: f"Thank you for your cooperation.\n{d.person(0)}",
    lambda d: f"Regards,\n{d.person(0)}\n{d.company}, {d.phone()}",
]

# ----------------------------------------------------------------- HR notes
HR_OPEN: list[Para] = [
    lambda d: f"CONFIDENTIAL - HR NOTE\nEmployee: {d.person(2)} (ID {d.employee_id()})\nDate of birth: {d.dob()}\nPrepared by: {d.person(0)}, {d.date()}\n",
    lambda d: f"Personnel file note on {d.person(2)}, employee number {d.employee_id()}, born {d.dob()}, written by {d.person(0)} after a meeting on {d.date()}.\n",
]
HR_BODY: list[Para] = [
    lambda d: _pick(
        d,
        f"{d.people[2].split()[0]} asked to reduce working hours to four days a week for family reasons. The manager, {d.person(3)}, supports the request for a trial period of six months.",
        f"The annual review rated the performance as strong; a salary increase to {d.amount()} per year was proposed and is awaiting approval.",
        f"After two absences without notice, a formal conversation took place. {d.people[2].split()[0]} explained a medical situation and agreed to provide a doctor's note.",
    ),
    lambda d: f"Home address on file: {d.address()}. Private phone: {d.phone()}. Salary is paid to {d.iban()}.",
    lambda d: _pick(
        d,
        "The employee was reminded that sick leave must be reported before nine in the morning, and that the team lead should be informed directly.",
        "A training budget was agreed for a project management course, on the condition that the employee stays at least one year after completing it.",
        "No further action is needed at this stage; the note is kept for the record and reviewed at the next appraisal.",
    ),
    lambda d: f"The emergency contact is {d.person(1)} ({d.phone()}).",
]
HR_CLOSE: list[Para] = [
    lambda d: f"Filed by {d.person(0)}, Human Resources, {d.company}.",
    lambda d: f"This note is confidential and may only be shared with {d.person(3)} and HR.",
]

# ----------------------------------------------------------------- complaints
COMPLAINT_OPEN: list[Para] = [
    lambda d: f"From: {d.person(2)} <{d.email(2)}>\nTo: customer service, {d.company}\nSubject: Complaint about order {d.order_id()}\n",
    lambda d: f"Dear {d.company} support team,\n\nmy name is {d.person(2)} and I am writing about order {d.order_id()}, placed on {d.date()}.",
]
COMPLAINT_BODY: list[Para] = [
    lambda d: _pick(
        d,
        "The parcel arrived two weeks late and the box was damaged. Half of the items were missing, and the tracking page still says it is in transit.",
        "The device stopped working after three days. I followed the instructions in the manual and reset it twice, without any change.",
        "I was charged twice for the same subscription and, despite three calls to your hotline, nobody has corrected it.",
    ),
    lambda d: _pick(
        d,
        f"I paid {d.amount()} and expect a full refund to my account {d.iban()}.",
        f"Please refund the {d.amount()} you took twice; my bank account is {d.iban()}.",
    ),
    lambda d: f"You can reach me at {d.phone()} during the day, or send a replacement to {d.address()}.",
    lambda d: _pick(
        d,
        f"Your agent, {d.person(3)}, promised a call back within 48 hours, which never happened.",
        "I have been a loyal customer for years, and this is the first time I feel I was not taken seriously.",
        "If this is not resolved within fourteen days, I will take the matter to the consumer protection office.",
    ),
]
COMPLAINT_CLOSE: list[Para] = [
    lambda d: f"Sincerely,\n{d.person(2)}\n{d.address()}",
    lambda d: f"Kind regards,\n{d.person(2)} (born {d.dob()}, customer since {d.rng.randint(2008, 2022)})",
]

# ----------------------------------------------------------------- minutes
MINUTES_OPEN: list[Para] = [
    lambda d: f"MINUTES - {_pick(d, 'Project steering committee', 'Quarterly sales review', 'IT change board', 'Works council')}\nDate: {d.date()}\nPresent: {d.person(0)} (chair), {d.person(1)}, {d.person(2)}, {d.person(3)}\n",
    lambda d: f"Meeting notes of {d.date()}, taken by {d.person(1)}. Attendees: {d.person(0)}, {d.person(2)} and {d.person(3)} of {d.company}.\n",
]
MINUTES_BODY: list[Para] = [
    lambda d: _pick(
        d,
        f"1. Budget. {d.people[0].split()[0]} reported spending of {d.amount()} against a plan of {d.amount()}. The overrun comes from contractor fees and will be absorbed next quarter.",
        f"1. Status. The migration is two weeks behind; {d.people[2].split()[0]} will present a recovery plan on {d.date()}.",
    ),
    lambda d: _pick(
        d,
        f"2. Staffing. Two vacancies remain open. {d.person(3)} (ID {d.employee_id()}) will act as team lead until a permanent hire is found.",
        "2. Risks. The dependency on a single supplier was discussed at length; the committee asked for a second quote before renewing the contract.",
    ),
    lambda d: _pick(
        d,
        f"3. Customer escalation. The complaint from {d.person(2)} about a late delivery was settled with a credit of {d.amount()}.",
        "3. Any other business. The summer event is cancelled this year; the budget goes to the training programme instead.",
    ),
    lambda d: f"Action: {d.people[1].split()[0]} circulates the revised plan to {d.email(1)} list members by {d.date()}.",
]
MINUTES_CLOSE: list[Para] = [
    lambda d: f"Next meeting: {d.date()}. Minutes approved by {d.person(0)}.",
    lambda d: "The meeting closed at 16:40.",
]

KINDS: dict[str, tuple[list[Para], list[Para], list[Para]]] = {
    "memo": (MEMO_OPEN, MEMO_BODY, MEMO_CLOSE),
    "hr_note": (HR_OPEN, HR_BODY, HR_CLOSE),
    "complaint": (COMPLAINT_OPEN, COMPLAINT_BODY, COMPLAINT_CLOSE),
    "minutes": (MINUTES_OPEN, MINUTES_BODY, MINUTES_CLOSE),
}


def _seed(seed: int, kind: str, index: int) -> int:
    return int(hashlib.sha256(f"{seed}|{kind}|{index}".encode()).hexdigest()[:12], 16)


def business_document(kind: str, index: int, seed: int) -> tuple[str, tuple[Truth, ...]]:
    """Document ``index`` of ``kind``: its text and the PII values inserted in it."""
    opening, body, closing = KINDS[kind]
    d = _Doc(_seed(seed, kind, index))
    target = d.rng.randint(MIN_WORDS + 20, MAX_WORDS - 80)
    pool = list(body) + list(SHARED)
    d.rng.shuffle(pool)
    parts: list[str] = [d.rng.choice(opening)(d)]
    words = len(parts[0].split())
    # Cycle through the shuffled pool (a second round may draw another wording of a
    # paragraph whose first wording was not used) until long enough.
    for para in (pool + pool)[: len(pool) * 2]:
        if words >= target:
            break
        text = para(d)
        if any(p[:24] == text[:24] for p in parts) or words + len(text.split()) > MAX_WORDS - 30:
            continue
        parts.append(text)
        words += len(text.split())
    parts.append(d.rng.choice(closing)(d))
    text = "\n\n".join(p.strip() for p in parts)
    present = tuple(t for t in d.truth if t.value in text)
    return text, present
