"""Realistic stand-ins for detected values (the pseudonym operator's surrogates).

Deterministic given a seeded ``Faker`` and ``random.Random``. Card numbers and IBANs get
valid check digits from python-stdnum (Luhn, IBAN mod-97); dates keep their layout using the
date patterns of :mod:`preflight.core.sanitize.generalize`.

Names keep what the text around them relies on: a first name known as female or male
(the census, :func:`~preflight.core.pii.person_evidence.given_name_gender`, then the
generator's own gendered lists for names the census lacks: :func:`name_gender`)
gets a stand-in of the same gender, a lone first name stays a first name, an honorific
stays, and a given name the NER model called a group is still replaced by a name, never
by a nationality. Amounts of money are all scaled by one factor per document
(``amount_scale``), so a raise stays a raise and a total stays the sum of its parts.
"""

from __future__ import annotations

import functools
import importlib
import random
import re
from datetime import date

from faker import Faker
from stdnum import iban, luhn

from preflight.core.pii.cleaning import NAME_AFFIXES
from preflight.core.pii.person_evidence import (
    given_name_gender, given_names, group_shaped, known_names,
)
from preflight.core.sanitize import generalize as gen


def placeholder_label(entity_type: str) -> str:
    """``entity_type`` as an upper-case label (placeholders, surrogate fallbacks)."""
    label = re.sub(r"[^A-Z0-9]+", "_", entity_type.upper()).strip("_")
    if not label or not label[0].isalpha():
        label = "PII" + ("_" + label if label else "")
    return label


_NATIONALITIES = ("Canadian", "Norwegian", "Chilean", "Portuguese", "Kenyan", "Austrian",
                  "Vietnamese", "Irish", "Uruguayan", "Finnish", "Ghanaian", "Dutch")


def _reshape(template: str, chars: str) -> str:
    """Lay ``chars`` over the alphanumeric positions of ``template`` (keeps separators)."""
    it = iter(chars)
    return "".join(next(it) if ch.isalnum() else ch for ch in template)


def _shape_random(value: str, rng: random.Random) -> str:
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(str(rng.randrange(10)))
        elif ch.isalpha() and ch.isupper():
            out.append(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ"))
        elif ch.isalpha():
            out.append(rng.choice("abcdefghijkmnopqrstuvwxyz"))
        else:
            out.append(ch)
    return "".join(out)


def _card(value: str, rng: random.Random) -> str:
    n = sum(ch.isdigit() for ch in value)
    if 12 <= n <= 19 and all(ch.isdigit() or ch in " -" for ch in value.strip()):
        template, first = value, next(ch for ch in value if ch.isdigit())
    else:
        template, first, n = "4### #### #### ####", "4", 16
        template = template.replace("#", "0")
    body = [int(first)] + [rng.randrange(10) for _ in range(n - 2)]
    payload = "".join(map(str, body))
    it = iter(payload + luhn.calc_check_digit(payload))
    return "".join(next(it) if ch.isdigit() else ch for ch in template)


def _iban(value: str, rng: random.Random) -> str:
    compact = "".join(value.split()).upper()
    if re.fullmatch(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{8,30}", compact) and value.strip() == value:
        country, bban_template, template = compact[:2], compact[4:], value.upper()
    else:
        country, bban_template = "DE", "0" * 18
        template = "DE00 0000 0000 0000 0000 00"
    bban = "".join(
        str(rng.randrange(10)) if ch.isdigit() else rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        for ch in bban_template
    )
    check = iban.calc_check_digits(f"{country}00{bban}")
    return _reshape(template, f"{country}{check}{bban}")


def _date(value: str, fake: Faker, rng: random.Random) -> str:
    year = gen.find_year(value)
    lo, hi = (year - 5, year + 5) if year else (1950, 2025)
    y, mo, d = rng.randint(lo, hi), rng.randint(1, 12), rng.randint(1, 28)

    def width(s: str, v: int) -> str:
        return f"{v:0{len(s)}d}" if len(s) > 1 else str(v)

    m = gen.ISO_DATE_RE.match(value)
    if m:
        sep = m.group(2)
        return value.replace(m.group(0).strip(),
                             f"{y}{sep}{width(m.group(3), mo)}{sep}{width(m.group(4), d)}")
    m = gen.DMY_DATE_RE.match(value)
    if m:
        sep = m.group(2)
        first, second = (d, mo) if int(m.group(1)) > 12 else (mo, d)
        yy = f"{y % 100:02d}" if len(m.group(4)) == 2 else str(y)
        return value.replace(m.group(0).strip(),
                             f"{width(m.group(1), first)}{sep}{width(m.group(3), second)}{sep}{yy}")
    if gen.month_name_match(value):
        def month(mm: re.Match[str]) -> str:
            name = gen.MONTHS[mo - 1].capitalize()
            word = mm.group(1)
            if len(word) <= 4 and word.lower() not in ("may", "june", "july"):
                name = name[:3]
            if word.isupper():
                name = name.upper()
            elif word.islower():
                name = name.lower()
            return name + mm.group(0)[len(word):]
        out = gen.MONTH_NAME_RE.sub(month, value, count=1)
        out = gen.YEAR_RE.sub(str(y), out)
        return re.sub(r"(?<!\d)\d{1,2}(?!\d)", lambda _: str(d), out)
    if any(ch.isdigit() for ch in value):
        return _shape_random(value, rng)
    return date(y, mo, d).strftime("%B %d, %Y").replace(" 0", " ")


def _match_case(template: str, value: str) -> str:
    letters = [ch for ch in template if ch.isalpha()]
    if letters and all(ch.isupper() for ch in letters) and len(letters) > 1:
        return value.upper()
    if letters and all(ch.islower() for ch in letters):
        return value.lower()
    return value


# Faker's locales whose gendered given names stand in for the census where it has none
_FAKER_LOCALES = ("en_US", "en_GB", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "pt_BR",
                  "nl_NL", "pl_PL", "sv_SE", "da_DK", "fi_FI", "cs_CZ", "hu_HU", "ro_RO",
                  "tr_TR", "el_GR", "ru_RU", "uk_UA", "vi_VN", "id_ID", "hi_IN")


@functools.lru_cache(maxsize=1)
def _generator_given() -> tuple[frozenset[str], frozenset[str]]:
    """Faker's female and male given names: the pseudonym generator's own lists (they
    decide no detection)."""
    female: set[str] = set()
    male: set[str] = set()
    for loc in _FAKER_LOCALES:
        try:
            provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        except (ImportError, AttributeError):
            continue
        female.update(n.casefold() for n in getattr(provider, "first_names_female", ()))
        male.update(n.casefold() for n in getattr(provider, "first_names_male", ()))
    return frozenset(female), frozenset(male)


def name_gender(name: str) -> str | None:
    """The gender of a given name: the census', else the generator's lists' when they
    list it for one gender only ("Priya", "Arjun"), else None."""
    gender = given_name_gender(name)
    if gender is not None or name.casefold() in given_names():
        return gender
    female, male = _generator_given()
    low = name.casefold()
    if (low in female) != (low in male):
        return "female" if low in female else "male"
    return None


def _is_given_name(word: str) -> bool:
    female, male = _generator_given()
    low = word.casefold()
    return low in given_names() or low in female or low in male


def _first_name(name: str, fake: Faker) -> str:
    """A first name of the gender of ``name`` when that is known. en_US lists some names
    under both genders elsewhere ("Taylor", "Ashley"): those are drawn again, so the
    reader cannot take the stand-in for the other gender."""
    gender = name_gender(name)
    if gender is None:
        return fake.first_name()
    draw = fake.first_name_female if gender == "female" else fake.first_name_male
    for _ in range(20):
        candidate = draw()
        if given_name_gender(candidate) == gender:
            return candidate
    return candidate


def _person(value: str, fake: Faker) -> str:
    """A name for a name: honorifics kept ("Mrs."), the first name's gender kept, a lone
    given name replaced by a given name and a lone surname by a surname."""
    words = value.split()
    if not words:
        return fake.last_name()
    lead = 0
    while lead < len(words) - 1 and words[lead].rstrip(".").casefold() in NAME_AFFIXES:
        lead += 1
    prefix, names = words[:lead], words[lead:]
    first = re.sub(r"['’]s$", "", names[0]).strip(".,")
    if len(names) == 1:
        titled = bool(prefix)       # "Mrs. Patel": the word after a title is a surname
        if not titled and _is_given_name(first):
            sur = _first_name(first, fake)
        else:
            sur = fake.last_name()
    else:
        sur = f"{_first_name(first, fake)} {fake.last_name()}"
    return " ".join([*prefix, _match_case(" ".join(names), sur)])


_NUMBER = re.compile(r"\d{1,3}(?:([,.' ])\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?")


def _amount(value: str, scale: float, rng: random.Random) -> str:
    """The amount in ``value`` times ``scale``, written with the same thousands and
    decimal separators and the same number of decimals (the currency and "million"
    around it stay)."""
    m = _NUMBER.search(value)
    if m is None:
        return _shape_random(value, rng)
    group = m.group(1)
    body = m.group(0).replace(group, "") if group else m.group(0)
    whole, dec_sep, frac = re.fullmatch(r"(\d+)(?:([.,])(\d+))?", body).groups("")
    scaled = f"{float(whole + '.' + (frac or '0')) * scale:.{len(frac)}f}"
    new_whole, _, new_frac = scaled.partition(".")
    if group:
        new_whole = f"{int(new_whole):,}".replace(",", group)
    out = new_whole + (dec_sep + new_frac if frac else "")
    return value[:m.start()] + out + value[m.end():]


def _reads_as_given_name(value: str) -> bool:
    """A given name (or given name and surname) the NER model may call a group."""
    words = value.split()
    return (1 <= len(words) <= 3 and _is_given_name(words[0])
            and all(_is_given_name(w) or w.casefold() in known_names() for w in words)
            and not group_shaped(words[-1]))


AMOUNT_TYPES = frozenset({"PAYMENT", "ASSET", "MONEY"})


def surrogate_for(value: str, entity_type: str, fake: Faker, rng: random.Random,
                  amount_scale: float | None = None) -> str:
    """A realistic stand-in for ``value`` of ``entity_type`` (deterministic given the
    seeded ``fake`` and ``rng``). ``amount_scale``: the document's one factor for amounts
    of money (None: amounts get random digits of the same shape)."""
    t = entity_type
    if t == "NRP" and _reads_as_given_name(value):
        t = "PERSON"
    if t == "PERSON":
        return _person(value, fake)
    if t in AMOUNT_TYPES and amount_scale is not None and any(c.isdigit() for c in value):
        return _amount(value, amount_scale, rng)
    if t == "EMAIL_ADDRESS":
        user = re.sub(r"[^a-z0-9._]", "", fake.user_name().lower()) or "user"
        return f"{user}@{rng.choice(('example.com', 'example.org', 'example.net'))}"
    if t == "USERNAME":
        return "@" + (re.sub(r"[^a-z0-9_]", "", fake.user_name().lower()) or "user")
    if t == "CREDIT_CARD":
        return _card(value, rng)
    if t == "IBAN_CODE":
        return _iban(value, rng)
    if t in ("PHONE_NUMBER", "US_SSN", "US_ITIN", "US_BANK_NUMBER", "BANK_ACCOUNT", "UK_NHS",
             "US_PASSPORT", "US_DRIVER_LICENSE"):
        if any(ch.isdigit() for ch in value):
            cc = gen.COUNTRY_CODE_RE.match(value) if t == "PHONE_NUMBER" else None
            keep = cc.end() if cc else 0  # the country code says little; keep it readable
            sur = value[:keep] + _shape_random(value[keep:], rng)
            if t == "US_SSN":  # area numbers 000, 666 and 9xx are never issued
                first = next(i for i, ch in enumerate(sur) if ch.isdigit())
                sur = sur[:first] + str(rng.randint(1, 5)) + sur[first + 1:]
            return sur
        return fake.phone_number() if t == "PHONE_NUMBER" else _shape_random("000-00-0000", rng)
    if t in ("DATE_TIME", "DATE", "DATE_OF_BIRTH"):
        return _date(value, fake, rng)
    if t == "AGE":
        m = re.search(r"\d+", value)
        age = str(rng.randint(18, 89))
        return value[:m.start()] + age + value[m.end():] if m else age
    if t == "LOCATION":
        if any(ch.isdigit() for ch in value) and "," in value:
            return f"{fake.street_address()}, {fake.city()}"
        return _match_case(value, fake.city())
    if t in ("STREET_ADDRESS", "ADDRESS"):
        if "," in value or "\n" in value:
            return f"{fake.street_address()}, {fake.city()}"
        return fake.street_address()
    if t == "ORGANIZATION":
        return _match_case(value, fake.company())
    if t == "NRP":
        # never one a reader could take for a given name ("Irish" is one in the census)
        groups = [g for g in _NATIONALITIES if g.casefold() not in given_names()]
        return _match_case(value, rng.choice(groups))
    if t == "IP_ADDRESS":
        return fake.ipv6() if ":" in value else fake.ipv4_private()
    if t == "URL":
        return f"https://www.{fake.domain_word()}.example/"
    if t == "MAC_ADDRESS":
        return fake.mac_address()
    if t == "UUID":
        return fake.uuid4()
    # Anything else (API keys, deny-list terms, custom types): same shape, new characters.
    sur = _shape_random(value, rng)
    if not any(ch.isalnum() for ch in sur):
        sur = _shape_random(f"{placeholder_label(t)}-XXXX0000", rng)
    return sur
