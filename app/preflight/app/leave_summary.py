"""What will leave the computer, in words: the banner above Send and `preflight assess`.

:func:`summarize_leaving` sorts the detected values still written in the payload into
three groups, one item per distinct value (``Alice``, ``ALICE`` and a second ``Alice``
are one name):

- ``leaving``: values the policy protects that are still in the payload as written (d_X
  may draw a name's own token back; a name the operators missed at one mention);
- ``kept``: values the policy keeps as written on purpose (places and organizations
  under "Protect identifiers"; with d_X on the rest such values are noised, so one that
  comes through as written counts as ``leaving``);
- ``allowed``: values the user let through for this document ("Allow this time").

:attr:`LeaveSummary.sentence` says it in plain English with correct plurals — "1 password,
2 names and 1 e-mail address will leave your computer." — most severe kind first (secrets,
then direct identifiers, confidential attributes, quasi-identifiers; then the larger
count). Qt-free, so the window and the CLI print the same words.

One source for "left": ``leaving`` also holds every blocking leak the send's re-scan
(:func:`~preflight.core.send.rescan.rescan`) finds without a fresh detection pass — a
protected value written again elsewhere in the payload, a protected person's surname
written alone — through :func:`left_findings`, the very function the confirmation's list
comes from. The window's count (the banner and "PII left in payload") is this summary's.
What only a fresh detection of the payload finds (the plan's own re-scan, run when Send is
pressed) joins it through ``findings``: once a plan is built the window shows the summary
with the plan's blocking findings, so the window and the confirmation show one list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Sequence

from preflight.app.presentation import payload_status, span_key
from preflight.core.send.plan import Finding
from preflight.core.send.rescan import rescan
from preflight.core.sanitize.operators import value_key
from preflight.core.sanitize.policy import PARTIAL_DATE, RELATIVE_DATE, effective_type
from preflight.core.types import Category, SanitizedText, Span

NOTHING = "Nothing identifying will leave your computer."

#: singular, plural — by the type the policy sees (:func:`effective_type`)
KIND_NOUNS: dict[str, tuple[str, str]] = {
    "PERSON": ("name", "names"),
    "EMAIL_ADDRESS": ("e-mail address", "e-mail addresses"),
    "PHONE_NUMBER": ("phone number", "phone numbers"),
    "STREET_ADDRESS": ("street address", "street addresses"),
    "LOCATION": ("place", "places"),
    "ORGANIZATION": ("organization", "organizations"),
    "DATE_TIME": ("date", "dates"),
    "DATE_OF_BIRTH": ("birth date", "birth dates"),
    PARTIAL_DATE: ("year or month", "years or months"),
    RELATIVE_DATE: ("day reference", "day references"),
    "AGE": ("age", "ages"),
    "NRP": ("nationality or group", "nationalities or groups"),
    "SECRET": ("password or key", "passwords or keys"),
    "API_KEY": ("API key", "API keys"),
    "CREDIT_CARD": ("card number", "card numbers"),
    "IBAN_CODE": ("IBAN", "IBANs"),
    "BANK_ACCOUNT": ("bank account number", "bank account numbers"),
    "US_BANK_NUMBER": ("bank account number", "bank account numbers"),
    "PAYMENT": ("payment detail", "payment details"),
    "CRYPTO": ("crypto wallet", "crypto wallets"),
    "US_SSN": ("social security number", "social security numbers"),
    "US_ITIN": ("tax number", "tax numbers"),
    "US_PASSPORT": ("passport number", "passport numbers"),
    "US_DRIVER_LICENSE": ("driver's licence number", "driver's licence numbers"),
    "UK_NHS": ("NHS number", "NHS numbers"),
    "ID_NUMBER": ("ID number", "ID numbers"),
    "USERNAME": ("user handle", "user handles"),
    "NATIONAL_ID": ("national ID or tax number", "national ID or tax numbers"),
    "INTERNAL_HOST": ("internal host name", "internal host names"),
    "MEDICAL_LICENSE": ("medical licence number", "medical licence numbers"),
    "HEALTH": ("health detail", "health details"),
    "MEDICAL": ("medical detail", "medical details"),
    "IP_ADDRESS": ("IP address", "IP addresses"),
    "MAC_ADDRESS": ("device address", "device addresses"),
    "URL": ("web address", "web addresses"),
    "UUID": ("unique ID", "unique IDs"),
    "ASSET": ("asset", "assets"),
    "DENY_LIST": ("value from your deny-list", "values from your deny-list"),
}

#: most severe first
SEVERITY = (Category.SECRET, Category.DIRECT_IDENTIFIER, Category.CONFIDENTIAL_ATTRIBUTE,
            Category.QUASI_IDENTIFIER)


def kind_words(etype: str, n: int) -> str:
    """``"1 name"``, ``"2 e-mail addresses"``; an unknown type reads as its name."""
    one, many = _nouns(etype)
    return f"{n} {one if n == 1 else many}"


def _nouns(etype: str) -> tuple[str, str]:
    label = etype.replace("_", " ").lower()
    return KIND_NOUNS.get(etype, (f"{label} value", f"{label} values"))


def join_words(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass(frozen=True)
class LeavingItem:
    """One distinct value written in the payload (every detection of it in ``spans``)."""

    type: str                 # as the policy sees it (``effective_type``)
    category: Category
    value: str
    spans: tuple[Span, ...]

    @property
    def words(self) -> str:
        return _nouns(self.type)[0]


@dataclass(frozen=True)
class LeaveSummary:
    leaving: tuple[LeavingItem, ...] = ()
    kept: tuple[LeavingItem, ...] = ()
    allowed: tuple[LeavingItem, ...] = ()

    @property
    def severity(self) -> str:
        """``"high"`` (a secret or direct identifier leaves), ``"low"`` (only other kinds
        leave, or only values the user allowed) or ``"none"``."""
        risky = (Category.SECRET, Category.DIRECT_IDENTIFIER)
        if any(i.category in risky for i in self.leaving):
            return "high"
        return "low" if self.leaving or self.allowed else "none"

    @property
    def leaking_types(self) -> tuple[str, ...]:
        """The types "Protect these" switches to placeholders (most severe first)."""
        return tuple(dict.fromkeys(i.type for i in self.leaving))

    @property
    def sentence(self) -> str:
        if self.leaving:
            out = f"{by_kind(self.leaving)} will leave your computer."
        elif self.kept:
            out = "Nothing your policy protects will leave your computer."
        else:
            out = NOTHING if not self.allowed else ""
        if self.allowed:
            out += f" You let {by_kind(self.allowed)} through this time."
        if self.kept:
            out += f" Your policy keeps {by_kind(self.kept)} as written."
        return out.strip()


def by_kind(items: Sequence[LeavingItem]) -> str:
    """``"1 password or key, 2 names and 1 e-mail address"``: most severe kind first, then
    the larger count, then the words."""
    counts: dict[str, int] = {}
    rank: dict[str, int] = {}
    for i in items:
        counts[i.type] = counts.get(i.type, 0) + 1
        rank[i.type] = min(rank.get(i.type, len(SEVERITY)), SEVERITY.index(i.category)
                           if i.category in SEVERITY else len(SEVERITY))
    order = sorted(counts, key=lambda t: (rank[t], -counts[t], kind_words(t, 1)))
    return join_words([kind_words(t, counts[t]) for t in order])


class _NoFreshDetection:
    """The re-scan's detector for the live count: it finds nothing new (detecting the
    whole payload again is the plan's work), so only the leak finders run."""

    warnings: list[str] = []

    def detect(self, text: str) -> list[Span]:
        return []


@dataclass(frozen=True)
class _PayloadOnly:
    """The request as the re-scan reads it: the strings a model reads."""

    content_texts: tuple[str, ...]


def left_findings(original: str, sanitized: SanitizedText, spans: Sequence[Span],
                  excluded: Collection[tuple[str, str]] = (), *, request: Any = None,
                  detector: Any = None, values: Sequence[Any] = ()) -> tuple[Finding, ...]:
    """The blocking findings of the payload's re-scan (``request``: the plan's, default
    the sanitized text alone; ``detector``: None runs no fresh detection)."""
    used = [s for s in spans if span_key(s, original) not in excluded]
    found = rescan(detector or _NoFreshDetection(), original, sanitized,
                   request or _PayloadOnly((sanitized.text,)), used, values)
    return tuple(f for f in found if f.blocking)


def summarize_leaving(original: str, sanitized: SanitizedText, spans: Sequence[Span],
                      excluded: Collection[tuple[str, str]] = (),
                      findings: Sequence[Finding] = ()) -> LeaveSummary:
    """What of ``spans`` (every detection; ``excluded``: the span keys the user let
    through) is still written in ``sanitized``, grouped as the module says, with the
    re-scan's leaks (:func:`left_findings`) among ``leaving``. ``findings``: a send plan's
    blocking findings (its fresh detection of the payload), added to ``leaving``."""
    used = [s for s in spans if span_key(s, original) not in excluded]
    # With d_X on the rest (the hybrid), a value the policy "keeps" is noised like any
    # other word: when it comes through as written, the noise let it leave.
    policy = sanitized.report.policy
    noised = policy is not None and policy.dx == "rest"
    status = dict(((s.start, s.end), st) for s, st in payload_status(original, sanitized,
                                                                        used))
    groups: dict[str, list[Span]] = {"leaving": [], "kept": [], "allowed": []}
    for s in spans:
        value = original[s.start:s.end]
        if span_key(s, original) in excluded:
            if value.strip() and value in sanitized.text:
                groups["allowed"].append(s)
        elif status.get((s.start, s.end)) == "left":
            groups["leaving"].append(s)
        elif status.get((s.start, s.end)) == "kept" and value in sanitized.text:
            groups["leaving" if noised else "kept"].append(s)
    items = {k: _items(original, v) for k, v in groups.items()}
    known = {value_key(i.value, i.type) for i in items["leaving"]}
    known |= {value_key(original[s.start:s.end], s.type) for s in groups["leaving"]}
    extra = []
    plan_found = [f for f in findings if f.blocking and f.kind != "degraded"]
    for f in (*left_findings(original, sanitized, spans, excluded), *plan_found):
        key = value_key(f.value, f.type)
        if key not in known:
            known.add(key)
            extra.append(LeavingItem(f.type, f.category, f.value, ()))
    items["leaving"] = items["leaving"] + tuple(extra)
    return LeaveSummary(**items)


def _items(original: str, spans: list[Span]) -> tuple[LeavingItem, ...]:
    """One item per (type, value) — most severe first, then in text order."""
    grouped: dict[tuple[str, str], list[Span]] = {}
    for s in spans:
        value = original[s.start:s.end]
        etype = effective_type(s, value)
        grouped.setdefault((etype, value_key(value, s.type)), []).append(s)
    items = [LeavingItem(etype, ss[0].category, original[ss[0].start:ss[0].end], tuple(ss))
             for (etype, _k), ss in grouped.items()]
    return tuple(sorted(items, key=lambda i: (
        SEVERITY.index(i.category) if i.category in SEVERITY else len(SEVERITY),
        i.spans[0].start)))
