"""Identifiers named by their label, whatever their format: the code written after
"invoice no.", "ticket", "case", "claim ref", "application no.", "MRN", "licence plate",
"our ref", "Aktenzeichen", "n° de dossier" (…) points at one invoice, ticket, file, claim
or person ("application no. 40593/04", "ticket #INC0012345", "our ref 2024/117/AB",
"plate AB12 CDE"), and so does every code of a list after one label ("applications (nos.
31706/10 and 33088/10)"). The label stays readable; the code is the identifier.

What is not a code stays prose: plain numbers without a label, years, dates, decimals
and versions, amounts and counts ("claim 500 euros"), section and article numbers
("Article 6 § 1", "paragraph 12": no label of ours), and a citation's bare "no.".
Service-desk ticket numbers (``INC0012345``) are found by their shape alone.
"""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.recognizers.base import make_result
from preflight.core.types import Evidence

_ENGLISH = (
    r"invoices?|inv|bills?|receipts?|(?:purchase[ \t]+)?orders?|(?-i:PO)|tickets?|incidents?|"
    r"cases?|files?|matters?|claims?|polic(?:y|ies)|policyholders?|accounts?|acct|"
    r"customers?|clients?|members?|membership|subscri(?:bers?|ptions?)|employees?|staff|"
    r"personnel|payroll|badge|patients?|(?:medical|health|hospital)[ \t]+records?|"
    r"applications?|contracts?|agreements?|(?:driv(?:er'?s|ing)[ \t]+)?licen[cs]es?|"
    r"registrations?|passports?|vehicles?|bookings?|reservations?|confirmations?|"
    r"tracking|shipments?|consignments?|parcels?|deliver(?:y|ies)|students?|tenants?|"
    r"suppliers?|vendors?|loyalty|insurance|complaints?|requests?|quot(?:e|ation)s?|"
    r"dockets?|dossiers?|transactions?|payments?|refunds?|serial|"
    # labels of other languages that take a marker ("Rechnung Nr.", "facture n°")
    r"rechnung|akte|facture|dossier|commande|contrat|sinistre|factura|expediente|pedido|"
    r"p[óo]liza|fattura|pratica|polizza|ordine"
)
#: Plates: a short code with spaces ("AB12 CDE") is still the code.
_PLATE = r"(?:(?:licen[cs]e|number|registration|vehicle)[ \t]+)?plates?|kenteken|targa|" \
         r"matr[íi]cula|immatriculation|Kennzeichen|reg(?:istration)?[ \t]+(?:no|number)"
#: Labels that carry their own marker ("MRN", "our ref", "Kundennummer", "n° client").
_SELF_MARKED = (
    r"(?:our|your|my)[ \t]+ref(?:erence)?|ref(?:erence)?|(?-i:MRN|VIN|Az)|Aktenzeichen|"
    r"Gesch(?:ä|ae)ftszeichen|"
    r"(?:Rechnungs|Kunden|Vertrags|Bestell|Auftrags|Versicherungs|Policen|Personal|"
    r"Mitglieds|Fall|Vorgangs|Ticket|Patienten|Akten|Buchungs|Sendungs|Schaden|Antrags)"
    r"-?(?:nummer|nr\.?)|"
    r"(?:klant|factuur|dossier|order|polis|contract|lid|personeels|zaak|klacht)nummer|"
    r"(?:n[°º]|num[ée]ro|n[úu]mero|numero)[ \t]+(?:de[ \t]+|di[ \t]+|del[ \t]+)?"
    r"(?:dossier|client|cliente|facture|factura|fattura|contrat|contrato|contratto|"
    r"commande|pedido|ordine|sinistre|siniestro|police|p[óo]liza|polizza|pratica|"
    r"expediente|adh[ée]rent|socio|r[ée]f[ée]rence)|r[ée]f|r[ée]f[ée]rence"
)
_MARKER = r"(?:(?:id|identifier|nos?|nrs?|nums?|numbers?|ref|reference|code)(?![\w-])|#|n[°º])"

_LABELLED = re.compile(
    r"(?<![\w-])(?:(?P<plate>" + _PLATE + r")|(?P<marked>" + _SELF_MARKED + r")|"
    r"(?P<label>" + _ENGLISH + r"))(?![^\W_])(?:'s|’s)?"
    r"(?:[ \t]*[(\[]?[ \t]*(?P<marker>" + _MARKER + r"))?\.?"
    r"(?:[ \t]*(?:(?:is|was)(?![\w-])|[:=(#]))?[ \t]*[(\[#]?[ \t]*",
    re.IGNORECASE)

# one group of a code: letters and digits, inner / _ . : - between them
_GROUP = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|[/_.:\-](?=[A-Za-z0-9]))*")
_LIST_SEP = re.compile(r"[ \t]*[,;][ \t]*(?:and[ \t]+|&[ \t]+)?|[ \t]+(?:and|&|or|und|et|y|e|en)"
                       r"[ \t]+", re.IGNORECASE)
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|"
                   r"\d{1,2}:\d\d(?::\d\d)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
_YEARS = re.compile(r"(?:19|20)\d\d[-/–](?:19|20)?\d\d")     # "2019/20", "2019-2020"
_DECIMAL = re.compile(r"v?\d+(?:[.,]\d+)+", re.IGNORECASE)
# a count or an amount after a bare number ("claim 500 euros", "case 1200 times")
_UNIT_AFTER = re.compile(
    r"[ \t]*(?:%|percent|per[ \t]?cent|euros?|EUR|USD|GBP|CHF|dollars?|pounds?|francs?|"
    r"kg|km|m|days?|weeks?|months?|years?|hours?|minutes?|times|people|persons|users|"
    r"employees|items|pages|words|units)(?![\w-])", re.IGNORECASE)
_SHORT_CAPS = re.compile(r"[A-Z]{1,3}")


def code_shaped(value: str, marked: bool, plate: bool = False) -> bool:
    """A code, not a year, a date, a decimal, a version or a short count."""
    n_digits = sum(c.isdigit() for c in value)
    n_alnum = sum(c.isalnum() for c in value)
    if n_digits == 0 or _DATE.fullmatch(value) or _YEAR.fullmatch(value) \
            or _DECIMAL.fullmatch(value):
        return False
    if not marked and _YEARS.fullmatch(value):     # "no. 1942/08" is an application
        return False
    if plate:
        return n_alnum >= 4
    if n_digits == n_alnum:                         # digits only
        return n_digits >= (3 if marked else 4)
    return n_digits >= 3 or (marked and n_alnum >= 4)


def _signature(value: str) -> str:
    """The shape of a code ("58372/00" and "682/02" are both "9/9")."""
    return re.sub(r"9+", "9", re.sub(r"A+", "A", re.sub(r"\d", "9", re.sub(r"[A-Za-z]", "A",
                                                                           value))))


def _next_group(text: str, end: int) -> re.Match[str] | None:
    """The group one space or tab after ``end``, if any."""
    if end < len(text) and text[end] in " \t":
        return _GROUP.match(text, end + 1)
    return None


def read_code(text: str, pos: int, plate: bool) -> tuple[int, int] | None:
    """The code starting at ``pos``: one group, or short groups a single space apart
    after a plate label ("AB12 CDE") or around a capital letter ("3 O 123/19", a German
    court file)."""
    m = _GROUP.match(text, pos)
    if not m:
        return None
    end, last, n = m.end(), m.group(), 1
    while n < 4 and len(last) <= 4:
        nxt = _next_group(text, end)
        if nxt is None:
            break
        g = nxt.group()
        if plate and (any(c.isdigit() for c in g) or _SHORT_CAPS.fullmatch(g)):
            end, last, n = nxt.end(), g, n + 1
            continue
        after = _next_group(text, nxt.end())
        if (_SHORT_CAPS.fullmatch(g) or (len(g) == 1 and len(last) <= 2)) \
                and after is not None and any(c.isdigit() for c in after.group()):
            # "3 O 123/19" (the canonical view reads the O as a zero: "3 0 123/19")
            end, last, n = after.end(), after.group(), n + 2
            continue
        break
    return pos, end


class ReferenceNumberRecognizer(EntityRecognizer):
    """Codes after an identifying label (see the module docstring)."""

    evidence = Evidence.RULE

    WHY = "A code written after an identifying label (invoice, ticket, case, claim, file…)"
    LIST_WHY = "One of several codes listed after an identifying label"
    TICKET_WHY = "The shape of an IT service-desk ticket number (INC0012345)"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["ID_NUMBER"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "ID_NUMBER" not in entities:
            return []
        out = []
        for m in _LABELLED.finditer(text):
            plate = m.group("plate") is not None
            marked = bool(m.group("marker") or m.group("marked") or plate
                          or text[m.start():m.end()].rstrip().endswith("#"))
            found = read_code(text, m.end(), plate)
            if found is None:
                continue
            start, end = found
            value = text[start:end]
            if not code_shaped(value, marked, plate):
                continue
            if not marked and value.isdigit() and (
                    _UNIT_AFTER.match(text, end) or m.group("label").lower().endswith("s")):
                continue                        # a count: "claim 5000 euros", "orders 1200"
            score = 0.8 if marked else 0.7
            out.append(make_result(self, "ID_NUMBER", start, end, score, self.WHY))
            out.extend(self._listed(text, end, value, marked, score))
        taken = {(r.start, r.end) for r in out}
        for m in _TICKET.finditer(text):
            if m.span() not in taken:
                out.append(make_result(self, "ID_NUMBER", m.start(), m.end(), 0.75,
                                       self.TICKET_WHY))
        return out

    def _listed(self, text: str, end: int, first: str, marked: bool, score: float):
        """The further codes of a list after one label, while they keep its shape."""
        shape = _signature(first)
        while True:
            sep = _LIST_SEP.match(text, end)
            if not sep:
                return
            nxt = _GROUP.match(text, sep.end())
            if not nxt or _signature(nxt.group()) != shape \
                    or not code_shaped(nxt.group(), marked):
                return
            yield make_result(self, "ID_NUMBER", nxt.start(), nxt.end(), score, self.LIST_WHY)
            end = nxt.end()


_TICKET = re.compile(r"(?<![\w-])(?:INC|RITM|REQ|CHG|PRB|PRBTASK|SCTASK|TASK)\d{7}(?![\w-])")
