"""An answer checked against the document: which of its facts the document does not hold.

Size (~440 lines): the fact kinds share one index of the document and its folding rules.

A cloud answer on a sanitized document can be fluent and wrong: a generalized date comes
back as an invented one, a d_X-perturbed word turns a raise into a pay cut, noise becomes
"five mythical medical leave". A cosine of document and answer scores such answers as
high as faithful ones. :func:`check_answer` lists the facts an answer states — names,
places, organizations, contact details and identifiers (from the product's own detector),
numbers and amounts, dates — and whether the document supports each, plus sentences that
contradict the document sentence they restate (a negation or an opposite word where the
document has none). :func:`faithful_utility` turns the check into the realized score:
the paper's similarity, discounted by the share of unsupported statements.

Support is checked on normalized forms: words case-folded (a name is supported when each
of its words is in the document), numbers by value ("44,409", "44409", "44.4 thousand"),
dates by their parts (a month, a day of that month, a year). A fact found in the payload
but not in the document came through the sanitization's noise (``from_noise``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from preflight.core.types import Span

#: Detector types whose values are facts an answer can invent, and the word users read.
FACT_TYPES = {
    "PERSON": "name", "LOCATION": "place", "ORGANIZATION": "organization", "NRP": "group",
    "EMAIL_ADDRESS": "e-mail", "PHONE_NUMBER": "phone number", "URL": "address",
    "IBAN_CODE": "account number", "CREDIT_CARD": "card number", "US_SSN": "identifier",
    "ID_NUMBER": "identifier", "STREET_ADDRESS": "address",
}
#: Weight of one unsupported statement against one supported one in the realized score
#: (the smallest weight whose mean AUC over the four alterations is within 0.01 of the best,
#: on the development half of the validation set: ``preflight_eval.answer_check``).
UNSUPPORTED_WEIGHT = 4.0

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH_RE = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|"
             r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_DAY_RE = r"(?:[0-3]?\d)(?:st|nd|rd|th)?"
_DATE = re.compile(
    rf"\b(?:(?P<d1>{_DAY_RE})(?:\s+of)?\s+(?P<m1>{_MONTH_RE})\.?"
    rf"|(?P<m2>{_MONTH_RE})\.?\s+(?P<d2>{_DAY_RE})(?![\d:])"
    rf"|(?P<m3>{_MONTH_RE})\.?)(?:,?\s+(?P<y>(?:19|20)\d\d))?\b", re.IGNORECASE)
_NUMERIC_DATE = re.compile(
    r"\b(?:(?P<Y>(?:19|20)\d\d)-(?P<M>[01]?\d)-(?P<D>[0-3]?\d)"
    r"|(?P<a>[0-3]?\d)[/.](?P<b>[01]?\d)[/.](?P<c>(?:19|20)?\d\d))\b")
_YEAR = re.compile(r"(?<!\d)(?<!\d[.,])(?:19|20)\d\d(?!\d|[.,]\d)")
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9,
          "bn": 1e9, "b": 1e9}
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<n>\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)"
    r"(?:\s*(?P<scale>thousand|million|billion|bn|mn|k|m|b)\b)?(?P<pct>\s*%|\s+per\s*cent)?",
    re.IGNORECASE)
_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
_SMALL.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
               "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12})
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# Clauses: a statement and its denial are compared clause by clause, so that "X; do not
# paste it" does not turn "X" around.
_CLAUSE = re.compile(r"(?:[^.!?;:\n,]|,(?!\s*(?:but|whereas|while|although|though|yet|"
                     r"however)\b))+", re.IGNORECASE)
_NEGATIONS = {"not", "no", "never", "none", "nor", "neither", "without", "cannot", "nothing",
              "nobody", "nowhere", "non"}
#: Opposites that turn a statement around (a raise is not a pay cut).
_OPPOSITES = [
    ("increase", "decrease"), ("increase", "reduction"), ("increase", "cut"),
    ("raise", "cut"), ("raise", "reduction"), ("rise", "fall"), ("rise", "drop"),
    ("rise", "cut"), ("grow", "shrink"), ("growth", "decline"),
    ("gain", "loss"), ("profit", "loss"), ("higher", "lower"), ("more", "less"),
    ("above", "below"), ("approve", "reject"), ("approved", "rejected"),
    ("accept", "decline"), ("accepted", "declined"), ("accepted", "refused"),
    ("granted", "denied"), ("grant", "deny"), ("hire", "fire"), ("hired", "dismissed"),
    ("hired", "fired"), ("promoted", "demoted"), ("promotion", "demotion"),
    ("positive", "negative"), ("win", "lose"), ("won", "lost"), ("open", "closed"),
    ("start", "end"), ("started", "ended"), ("before", "after"), ("early", "late"),
    ("earlier", "later"), ("allowed", "forbidden"), ("allow", "forbid"),
    ("include", "exclude"), ("included", "excluded"), ("success", "failure"),
    ("succeeded", "failed"), ("paid", "unpaid"), ("legal", "illegal"),
    ("guilty", "innocent"), ("upheld", "overturned"), ("dismissed", "upheld"),
]
_OPPOSITE: dict[str, set[str]] = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE.setdefault(_a, set()).add(_b)
    _OPPOSITE.setdefault(_b, set()).add(_a)
_FUNCTION_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been "
    "being has have had do does did will would shall should can could may might must this "
    "that these those it its he she they them his her their we our you your i me my "
    "which who whom whose what when where why how than then so such also there here "
    "about into over under after before up down out very just only all any each some".split())


@dataclass(frozen=True)
class Fact:
    """One statement of an answer that can be true or false of the document."""

    text: str            # as the answer writes it
    kind: str            # "name", "place", "number", "amount", "date", "contradiction", …
    start: int
    end: int
    supported: bool
    from_noise: bool = False   # unsupported, but present in the payload (d_X noise)
    detail: str = ""           # for a contradiction: the document sentence it turns around

    def to_json(self) -> dict:
        return {"text": self.text, "kind": self.kind, "start": self.start, "end": self.end,
                "supported": self.supported, "from_noise": self.from_noise,
                **({"detail": self.detail} if self.detail else {})}


@dataclass(frozen=True)
class AnswerCheck:
    """The facts an answer states, each checked against the document."""

    facts: tuple[Fact, ...] = field(default_factory=tuple)

    @property
    def unsupported(self) -> tuple[Fact, ...]:
        return tuple(f for f in self.facts if not f.supported)

    @property
    def supported_count(self) -> int:
        return sum(1 for f in self.facts if f.supported)

    @property
    def flagged(self) -> bool:
        return bool(self.unsupported)

    def summary(self, limit: int = 6) -> str:
        """"not in your document: January 2025, $400" (empty when nothing is flagged)."""
        bad = [f for f in self.unsupported if f.kind != "contradiction"]
        turned = [f for f in self.unsupported if f.kind == "contradiction"]
        parts = []
        if bad:
            shown = ", ".join(_unique(f.text for f in bad)[:limit])
            more = len(_unique(f.text for f in bad)) - limit
            parts.append("not in your document: " + shown + (f" and {more} more" if more > 0
                                                              else ""))
        if turned:
            parts.append(f"{len(turned)} sentence(s) say the opposite of your document")
        return "; ".join(parts)

    def to_json(self) -> dict:
        return {"facts": [f.to_json() for f in self.facts],
                "unsupported": len(self.unsupported), "supported": self.supported_count,
                "summary": self.summary()}


def check_answer(document: str, answer: str,
                 detect: Callable[[str], Sequence[Span]] | None = None,
                 payload: str | None = None) -> AnswerCheck:
    """Check every fact ``answer`` states against ``document``.

    ``detect`` is the product's detector (names, places, organizations, contact details);
    without it only numbers, dates and contradictions are checked. ``payload``: the text
    the provider received; an unsupported fact found there came through its noise.
    """
    doc = _Index(document)
    sent = _Index(payload) if payload else None
    facts: list[Fact] = []
    taken: list[tuple[int, int]] = []

    def add(text: str, kind: str, start: int, end: int, ok: bool) -> None:
        if any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        noise = (not ok) and sent is not None and _supported_in(sent, text, kind)
        facts.append(Fact(text, kind, start, end, ok, noise))

    for m in _DATE.finditer(answer):
        month = _month(m.group("m1") or m.group("m2") or m.group("m3"))
        day = _day(m.group("d1") or m.group("d2"))
        year = int(m.group("y")) if m.group("y") else None
        if m.group("m3") and day is None and year is None and m.group("m3").lower() == "may":
            continue        # "may" the verb
        add(m.group(0), "date", m.start(), m.end(), doc.has_date(month, day, year))
    for m in _NUMERIC_DATE.finditer(answer):
        if m.group("Y"):
            y, mo, d = int(m.group("Y")), int(m.group("M")), int(m.group("D"))
        else:
            y, mo, d = _year(m.group("c")), int(m.group("b")), int(m.group("a"))
        if 1 <= mo <= 12 and 1 <= d <= 31:
            add(m.group(0), "date", m.start(), m.end(),
                doc.has_date(mo, d, y) or doc.has_date(d, mo, y) if d <= 12 else
                doc.has_date(mo, d, y))
    if detect is not None:
        for span in detect(answer):
            kind = FACT_TYPES.get(span.type)
            if kind is None:
                continue
            value = answer[span.start:span.end]
            add(value, kind, span.start, span.end, doc.has_name(value)
                if kind in ("name", "place", "organization", "group") else doc.has_value(value))
    for m in _YEAR.finditer(answer):
        add(m.group(0), "date", m.start(), m.end(), int(m.group(0)) in doc.years
            or float(m.group(0)) in doc.numbers)
    for m in _NUMBER.finditer(answer):
        value = _number_value(m)
        if value is None or _list_marker(answer, m.start(), m.end()):
            continue
        kind = "amount" if _is_amount(answer, m.start(), m.end()) else "number"
        # an amount is named with its currency, as the user reads it ("$400")
        start = _currency_start(answer, m.start()) if kind == "amount" else m.start()
        add(answer[start:m.end()].strip(), kind, start, m.end(), doc.has_number(value))
    for m in _WORD.finditer(answer):
        word = m.group(0).lower()
        if word in _SMALL and word not in ("one", "zero") and _counts_something(answer, m.end()):
            add(m.group(0), "number", m.start(), m.end(), doc.has_number(float(_SMALL[word])))
    for start, end, detail in _contradictions(doc, answer):
        facts.append(Fact(answer[start:end].strip(), "contradiction", start, end, False,
                          False, detail))
    facts.sort(key=lambda f: (f.start, f.end))
    return AnswerCheck(tuple(facts))


def faithful_utility(similarity: float, check: AnswerCheck,
                     weight: float = UNSUPPORTED_WEIGHT) -> float:
    """The realized utility: ``similarity`` × (s + 1) / (s + 1 + weight·u) for ``s``
    supported and ``u`` unsupported statements. An answer with no checkable fact, or only
    supported ones, keeps its similarity; every invented or contradicted fact costs."""
    return discounted(similarity, check.supported_count, len(check.unsupported), weight)


def discounted(similarity: float, supported: int, unsupported: int,
               weight: float = UNSUPPORTED_WEIGHT) -> float:
    """:func:`faithful_utility` from the counts of a check already made."""
    return float(similarity) * (supported + 1) / (supported + 1 + weight * unsupported)


# --- the document's index ------------------------------------------------------------------


class _Index:
    """What a text holds, normalized once: words, numbers by value, date parts."""

    def __init__(self, text: str) -> None:
        folded = _fold(text)
        self.text = folded
        self.words = {w for w in (_stem(m.group(0)) for m in _WORD.finditer(folded))}
        self.compact = re.sub(r"[\W_]+", "", folded)
        self.digits = re.sub(r"\D+", " ", text)
        self.numbers: set[float] = set()
        for m in _NUMBER.finditer(text):
            v = _number_value(m)
            if v is not None:
                self.numbers.add(v)
        for w in self.words:
            if w in _SMALL:
                self.numbers.add(float(_SMALL[w]))
        self.months: set[int] = set()
        self.days: set[tuple[int, int]] = set()
        self.years = {int(y) for y in _YEAR.findall(text)}
        for m in _DATE.finditer(text):
            mo = _month(m.group("m1") or m.group("m2") or m.group("m3"))
            d = _day(m.group("d1") or m.group("d2"))
            if m.group("m3") and m.group("m3").lower() == "may" and d is None \
                    and not m.group("y"):
                continue
            self.months.add(mo)
            if d is not None:
                self.days.add((mo, d))
        for m in _NUMERIC_DATE.finditer(text):
            if m.group("Y"):
                pairs = [(int(m.group("M")), int(m.group("D")))]
                self.years.add(int(m.group("Y")))
            else:
                a, b = int(m.group("a")), int(m.group("b"))
                pairs = [(b, a), (a, b)]
                self.years.add(_year(m.group("c")))
            for mo, d in pairs:
                if 1 <= mo <= 12:
                    self.months.add(mo)
                    self.days.add((mo, d))
        self.sentences = [(m.group(0), words) for m in _CLAUSE.finditer(text)
                          if len(words := _content(m.group(0))) >= 2]

    def has_date(self, month: int | None, day: int | None, year: int | None) -> bool:
        if year is not None and year not in self.years:
            return False
        if month is not None and month not in self.months:
            return False
        if day is not None and month is not None and (month, day) not in self.days:
            return False
        return True

    def has_number(self, value: float) -> bool:
        return value in self.numbers

    def has_name(self, value: str) -> bool:
        words = [_stem(w) for w in _WORD.findall(_fold(value))]
        words = [w for w in words if len(w) > 1 and w not in _FUNCTION_WORDS]
        return all(w in self.words for w in words) if words else True

    def has_value(self, value: str) -> bool:
        folded = re.sub(r"[\W_]+", "", _fold(value))
        return not folded or folded in self.compact


def _supported_in(index: _Index, text: str, kind: str) -> bool:
    if kind in ("name", "place", "organization", "group"):
        return index.has_name(text)
    if kind in ("number", "amount"):
        m = _NUMBER.search(text)
        v = _number_value(m) if m else None
        if v is None and text.lower() in _SMALL:
            v = float(_SMALL[text.lower()])
        return v is not None and index.has_number(v)
    if kind == "date":
        return all(w in index.words for w in (_stem(w) for w in _WORD.findall(_fold(text))))
    return index.has_value(text)


# --- contradictions ------------------------------------------------------------------------


def _contradictions(doc: _Index, answer: str) -> Iterable[tuple[int, int, str]]:
    """Answer clauses that restate a document clause with the opposite polarity: a
    negation the document's clause lacks, or an opposite word in place of one the document
    uses."""
    for m in _CLAUSE.finditer(answer):
        words = _content(m.group(0))
        if len(words) < 2:
            continue
        best, best_overlap = None, 0
        for sentence, content in doc.sentences:
            overlap = len(words & content)
            if overlap > best_overlap:
                best, best_overlap = sentence, overlap
        # the same statement: an opposite word needs a third of the answer sentence's
        # content words in the document sentence that holds its opposite; a negation one
        # side has and the other lacks needs two thirds (an answer that adds a clause of
        # its own is no contradiction)
        if best is None or 3 * best_overlap < len(words):
            continue
        a_all = {w.lower() for w in _WORD.findall(m.group(0))}
        d_all = {w.lower() for w in _WORD.findall(best)}
        # a denial the document's clause does not make; the reverse (an answer that drops
        # a document's "not") is left out: documents deny things in side clauses an
        # answer rightly leaves out ("…, which never happened"), and a rule cannot tell
        flipped = (_negated(m.group(0)) and not _negated(best)
                   and 3 * best_overlap >= 2 * len(words) and best_overlap >= 2)
        opposite = any(o in d_all and o not in a_all
                       for w in a_all - d_all for o in _OPPOSITE.get(w, ()))
        if flipped or opposite:
            yield m.start(), m.end(), best.strip()


def _negated(sentence: str) -> bool:
    """Whether the sentence denies something at all ("not", "no", "never", "n't",
    "non-…"). Presence, not parity: "not … without" is still a denial."""
    words = [w.lower() for w in re.findall(r"[^\W_]+(?:['’][^\W_]+)*", sentence)]
    return any(w in _NEGATIONS or w.endswith("n't") or w.endswith("n’t") for w in words)


def _content(sentence: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(sentence.lower())
            if len(w) > 2 and w not in _FUNCTION_WORDS and w not in _NEGATIONS}


# --- small normalizers ---------------------------------------------------------------------


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c)).casefold()


def _stem(word: str) -> str:
    word = word.casefold()
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _month(text: str | None) -> int | None:
    if not text:
        return None
    t = text.lower().rstrip(".")[:3]
    for i, name in enumerate(MONTHS, 1):
        if name.startswith(t):
            return i
    return None


def _day(text: str | None) -> int | None:
    if not text:
        return None
    d = int(re.match(r"\d+", text).group(0))
    return d if 1 <= d <= 31 else None


def _year(text: str) -> int:
    y = int(text)
    return y + 2000 if y < 100 else y


def _number_value(m: re.Match | None) -> float | None:
    if m is None:
        return None
    raw = m.group("n")
    s = raw.replace("\u202f", "").replace("\u00a0", "").replace(" ", "")
    if "," in s and "." not in s and re.fullmatch(r"\d+,\d{1,2}", s):
        s = s.replace(",", ".")                       # a decimal comma: 3,5
    else:
        s = s.replace(",", "")
    try:
        value = float(s)
    except ValueError:
        return None
    scale = (m.group("scale") or "").lower()
    if scale:
        value *= _SCALE.get(scale, 1.0)
    return _round(value)


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def _list_marker(text: str, start: int, end: int) -> bool:
    """"1." or "2)" opening a line: a list's numbering, not a fact."""
    line_start = text.rfind("\n", 0, start) + 1
    return (text[line_start:start].strip() in ("", "-", "*")
            and text[end:end + 1] in (".", ")") and end - start <= 2)


def _is_amount(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 4):start]
    after = text[end:end + 10].lower()
    return bool(re.search(r"[$€£¥]|\b(?:usd|eur|gbp|chf)\s*$", before, re.IGNORECASE)
                or re.match(r"\s*(?:dollars?|euros?|pounds?|usd|eur|gbp|chf)\b", after))


def _currency_start(text: str, start: int) -> int:
    """Where an amount starting at ``start`` begins with its currency sign or code."""
    m = re.search(r"(?:[$€£¥]|\b(?:usd|eur|gbp|chf)\s?)$", text[max(0, start - 4):start],
                  re.IGNORECASE)
    return start - len(m.group(0)) if m else start


def _counts_something(text: str, end: int) -> bool:
    """A number word that counts a noun ("five medical leaves"), not "one of" or "no one"."""
    nxt = _WORD.match(text, len(text[:end]) + len(text[end:]) - len(text[end:].lstrip()))
    return nxt is not None and nxt.group(0).lower() not in ("of", "or", "and", "to", "another")


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)
