"""National identity, social-insurance and tax numbers, checked by python-stdnum.

After its label ("Steuer-IdNr.", "NIR", "National Insurance number", "BSN", "codice
fiscale", "DNI", "PESEL", "personnummer", "CPR", "numéro national", "SVNR", "AHV", "EIN",
"tax ID"…) a number that passes its kind's check is that identifier; one whose check digit
fails is still protected (people mistype), and so is a code after a generic label ("national
ID") in no format a checker knows. Without a label only a valid number in a written form
specific enough to be found by its shape counts: a French NIR, an Italian codice fiscale,
a Spanish DNI or NIE, a UK NINO, a Swiss AHV number, a Belgian national number, a Swedish
or Danish personal number with its dash, a German tax ID in its 2-3-3-3 grouping. Nine
digits that pass a mod-11 check (one number in eleven does) say nothing without a label,
so a BSN, a UTR, a PESEL, a NIP, a SIREN or an EIN needs one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from presidio_analyzer import EntityRecognizer
from stdnum.at import vnr as at_vnr
from stdnum.be import bis as be_bis, nn as be_nn
from stdnum.ch import ssn as ch_ssn
from stdnum.de import idnr as de_idnr, stnr as de_stnr
from stdnum.dk import cpr as dk_cpr
from stdnum.es import dni as es_dni, nie as es_nie, nif as es_nif
from stdnum.exceptions import InvalidChecksum, InvalidFormat, ValidationError
from stdnum.fr import nir as fr_nir, siren as fr_siren, siret as fr_siret
from stdnum.gb import utr as gb_utr
from stdnum.it import codicefiscale as it_cf
from stdnum.nl import bsn as nl_bsn
from stdnum.pl import nip as pl_nip, pesel as pl_pesel
from stdnum.se import personnummer as se_pnr
from stdnum.us import ein as us_ein, itin as us_itin, ssn as us_ssn

from preflight.core.pii.recognizers.base import make_result
from preflight.core.types import Evidence


class _Nino:
    """UK National Insurance number (stdnum has none): two prefix letters HMRC issues, six
    digits, a suffix A–D. It carries no check digit: the format is the whole check."""

    _FORM = re.compile(r"(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]?")

    @staticmethod
    def validate(value: str) -> str:
        compact = re.sub(r"[\s.-]", "", value).upper()
        if not _Nino._FORM.fullmatch(compact):
            raise InvalidFormat()
        return compact


@dataclass(frozen=True)
class NationalId:
    """One kind of number: its checker (``validate`` raising stdnum's errors), its labels
    (capitals: matched as written; others: any case) and the written form that counts
    without a label (None: label only)."""

    name: str
    checker: Any
    labels: tuple[str, ...]
    written: str | None = None
    entity: str = "NATIONAL_ID"
    checked: bool = True           # a check digit (not only a format) proves it


_TAX = ("tax ID", "tax id number", "tax identification number", "taxpayer ID", "TIN",
        "tax number", "tax no", "tax reference")
_SOCIAL = ("social security number", "social security no", "social security",
           "social insurance number", "SSN")
_NATIONAL = ("national ID", "national ID number", "national identity number",
             "national identification number", "identity number", "ID card number",
             "personal ID number", "personal number", "personal identity number")

KINDS: tuple[NationalId, ...] = (
    NationalId("German tax ID (Steuer-IdNr)", de_idnr,
               ("Steuer-IdNr", "Steuer-ID-Nr", "Steuer-ID", "Steueridentifikationsnummer",
                "steuerliche Identifikationsnummer", "Identifikationsnummer", "IdNr") + _TAX,
               r"[1-9]\d \d{3} \d{3} \d{3}"),
    NationalId("German tax number (Steuernummer)", de_stnr, ("Steuernummer", "St.-Nr", "StNr")
               + _TAX),
    NationalId("French social security number (NIR)", fr_nir,
               ("NIR", "INSEE", "numéro INSEE", "n° INSEE", "numéro de sécurité sociale",
                "n° de sécurité sociale", "n° sécu", "numéro de sécu", "sécurité sociale")
               + _SOCIAL + _NATIONAL,
               r"[12] ?\d\d ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d\d|2[AB]) ?\d{3} ?\d{3} ?\d\d"),
    NationalId("French company number (SIREN)", fr_siren, ("SIREN",) + _TAX),
    NationalId("French establishment number (SIRET)", fr_siret, ("SIRET",)),
    NationalId("UK National Insurance number", _Nino,
               ("NINO", "National Insurance number", "National Insurance no", "NI number",
                "NI no") + _NATIONAL,
               r"[A-Z]{2} ?\d\d ?\d\d ?\d\d ?[A-D]", checked=False),
    NationalId("UK taxpayer reference (UTR)", gb_utr,
               ("UTR", "unique taxpayer reference") + _TAX),
    NationalId("Dutch citizen service number (BSN)", nl_bsn,
               ("BSN", "burgerservicenummer", "sofinummer", "sofi-nummer",
                "citizen service number") + _NATIONAL + _TAX),
    NationalId("Italian tax code (codice fiscale)", it_cf,
               ("codice fiscale", "cod. fisc", "C.F", "CF", "fiscal code", "tax code") + _TAX,
               r"[A-Z]{6}[\dLMNP-V]{2}[A-EHLMPR-T][\dLMNP-V]{2}[A-Z][\dLMNP-V]{3}[A-Z]"),
    NationalId("Spanish identity number (DNI)", es_dni,
               ("DNI", "documento nacional de identidad") + _NATIONAL, r"\d{8}-?[A-Z]"),
    NationalId("Spanish foreigner number (NIE)", es_nie,
               ("NIE", "número de identidad de extranjero") + _NATIONAL, r"[XYZ]-?\d{7}-?[A-Z]"),
    NationalId("Spanish tax number (NIF)", es_nif, ("NIF",) + _TAX),
    NationalId("Polish national number (PESEL)", pl_pesel, ("PESEL",) + _NATIONAL),
    NationalId("Polish tax number (NIP)", pl_nip, ("NIP",) + _TAX),
    NationalId("Swedish personal number (personnummer)", se_pnr,
               ("personnummer", "person-nummer", "personnr") + _NATIONAL,
               r"(?:19|20)?\d{6}[-+]\d{4}"),
    NationalId("Danish personal number (CPR)", dk_cpr,
               ("CPR", "CPR-nummer", "CPR-nr", "personnummer") + _NATIONAL, r"\d{6}-\d{4}"),
    NationalId("Belgian national number", be_nn,
               ("rijksregisternummer", "numéro national", "numéro de registre national",
                "registre national", "national register number", "national number", "INSZ",
                "NISS", "RRN") + _SOCIAL + _NATIONAL,
               r"\d\d\.\d\d\.\d\d[- ]\d{3}\.\d\d"),
    NationalId("Belgian BIS number", be_bis, ("BIS", "numéro BIS", "BIS-nummer"),
               r"\d\d\.\d\d\.\d\d[- ]\d{3}\.\d\d"),
    NationalId("Austrian social security number (SVNR)", at_vnr,
               ("SVNR", "SV-Nr", "VSNR", "Versicherungsnummer", "Sozialversicherungsnummer")
               + _SOCIAL),
    NationalId("Swiss social security number (AHV)", ch_ssn,
               ("AHV", "AHV-Nr", "AHV-Nummer", "AHVN13", "AVS", "n° AVS",
                "Sozialversicherungsnummer") + _SOCIAL,
               r"756\.?\d{4}\.?\d{4}\.?\d\d"),
    NationalId("US Social Security number", us_ssn, _SOCIAL, entity="US_SSN"),
    NationalId("US taxpayer number (ITIN)", us_itin, ("ITIN",) + _TAX, entity="US_ITIN"),
    NationalId("US employer number (EIN)", us_ein,
               ("EIN", "FEIN", "employer identification number") + _TAX),
)


def _a(name: str) -> str:
    """The name with its article ("an Italian tax code", "a UK …")."""
    return ("an " if name[0] in "AEIO" else "a ") + name


def _key(label: str) -> str:
    return re.sub(r"[\s._-]+", " ", label.casefold()).strip()


def _label_regex(labels: set[str]) -> re.Pattern[str]:
    alts = []
    for label in sorted(labels, key=len, reverse=True):
        body = r"[\s._-]*".join(re.escape(w) for w in re.split(r"[\s._-]+", label) if w)
        alts.append(f"(?-i:{body})" if label.isupper() else body)
    return re.compile(
        r"(?<![\w-])(?P<label>" + "|".join(alts) + r")\.?"
        r"(?:[ \t]*(?:(?:no|nr|number)(?![\w-])\.?|n[°º]|#))?"
        r"(?:[ \t]*(?:(?:is|was|lautet|ist|est|es|è|er|är)(?![\w-])|[:=(]))?[ \t]*",
        re.IGNORECASE)


_BY_LABEL: dict[str, list[NationalId]] = {}
for _kind in KINDS:
    for _label in _kind.labels:
        _BY_LABEL.setdefault(_key(_label), []).append(_kind)
_LABEL = _label_regex({label for kind in KINDS for label in kind.labels})
# every written form starts with a digit or a capital: the look-ahead rules out the other
# positions in one test, before the look-behind and the form are tried there
_WRITTEN = [(kind, re.compile(r"(?=[\dA-Z])(?<![\w.+-])" + kind.written + r"(?![\w-]|[.,]\d)"))
            for kind in KINDS if kind.written]
# groups of a number written after a label: "36 574 261 809", "756.9217.0769.85"
_GROUP = re.compile(r"[A-Za-z0-9]+")
_MAX_GROUPS = 8


def check(kind: NationalId, value: str) -> str | None:
    """"valid", "mistyped" (right form, wrong check digit) or None (not this kind)."""
    try:
        kind.checker.validate(value)
    except InvalidChecksum:
        return "mistyped"
    except (ValidationError, ValueError):
        return None
    return "valid"


def _groups(text: str, pos: int) -> list[tuple[int, int]]:
    """The groups of the value at ``pos``: letters and digits, one separator apart; a
    group of letters only counts when written in capitals (a word ends the value)."""
    out: list[tuple[int, int]] = []
    while len(out) < _MAX_GROUPS:
        m = _GROUP.match(text, pos)
        if not m or not (any(c.isdigit() for c in m.group()) or m.group().isupper()):
            break
        out.append(m.span())
        if m.end() + 1 >= len(text) or text[m.end()] not in " .-/+":
            break
        pos = m.end() + 1
    while out and out[-1][1] - out[-1][0] > 1 and \
            not any(c.isdigit() for c in text[out[-1][0]:out[-1][1]]):
        out.pop()              # "… 809 DE": a country code after it; "… 56 C" is a suffix
    return out


class NationalIdRecognizer(EntityRecognizer):
    """National identifiers after their label, and in their own written form."""

    evidence = Evidence.RULE

    def __init__(self, name: str | None = None) -> None:
        entities = sorted({kind.entity for kind in KINDS})
        super().__init__(supported_entities=entities, name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        labelled = self._labelled(text)
        seen = {(r.start, r.end) for r in labelled}
        written = [r for r in self._written(text) if (r.start, r.end) not in seen]
        return [r for r in labelled + written if not entities or r.entity_type in entities]

    def _labelled(self, text: str) -> list:
        out = []
        for m in _LABEL.finditer(text):
            kinds = _BY_LABEL.get(_key(m.group("label")), [])
            groups = _groups(text, m.end())
            if not kinds or not groups:
                continue
            found = self._best(text, kinds, groups)
            if found is not None:
                out.append(found)
        return out

    def _best(self, text: str, kinds: list[NationalId], groups: list[tuple[int, int]]):
        start = groups[0][0]
        mistyped = None
        for n in range(len(groups), 0, -1):          # the longest value that checks wins
            end = groups[n - 1][1]
            for kind in kinds:
                verdict = check(kind, text[start:end])
                if verdict == "valid":
                    why = ("A" + _a(kind.name)[1:] + " after its label"
                           + ("; it passes its check digits" if kind.checked else ""))
                    return make_result(self, kind.entity, start, end, 0.95, why)
                if verdict == "mistyped" and mistyped is None:
                    mistyped = (kind, end)
        if mistyped is not None:
            kind, end = mistyped
            return make_result(self, kind.entity, start, end, 0.8,
                               f"A number after the label of {_a(kind.name)}; its check "
                               "digit does not match (mistyped?), so it is protected all "
                               "the same")
        end = groups[-1][1]
        value = text[start:end]
        if sum(c.isdigit() for c in value) >= 4 and value.strip("0- ./") != "":
            return make_result(self, "NATIONAL_ID", start, end, 0.65,
                               "A number after the label of a national identity or tax "
                               "number, in no format its checker knows")
        return None

    def _written(self, text: str) -> list:
        out = []
        for kind, pattern in _WRITTEN:
            for m in pattern.finditer(text):
                if check(kind, m.group()) == "valid":
                    why = (f"The written form of {_a(kind.name)}"
                           + (" with valid check digits" if kind.checked else ""))
                    out.append(make_result(self, kind.entity, m.start(), m.end(), 0.85, why))
        return out


__all__ = ["KINDS", "NationalId", "NationalIdRecognizer", "check"]
