"""Entity types Preflight reports, their category, and the one-line "why" shown to users.

One table maps every entity type to a :class:`~preflight.core.types.Category`; types not
listed (a future Presidio recognizer, say) default to quasi-identifier so they are shown
but not forced into the strictest policy. "Why" lines describe what matched and never
contain the value itself.
"""

from __future__ import annotations

from preflight.core.types import Category

D = Category.DIRECT_IDENTIFIER
Q = Category.QUASI_IDENTIFIER
C = Category.CONFIDENTIAL_ATTRIBUTE
S = Category.SECRET

CATEGORY_BY_TYPE: dict[str, Category] = {
    # direct identifiers: one value points at one person or account
    "PERSON": D,
    "EMAIL_ADDRESS": D,
    "PHONE_NUMBER": D,
    "US_SSN": D,
    "US_ITIN": D,
    "US_PASSPORT": D,
    "US_DRIVER_LICENSE": D,
    "US_BANK_NUMBER": D,
    "BANK_ACCOUNT": D,
    "CREDIT_CARD": D,
    "IBAN_CODE": D,
    "UK_NHS": D,
    "MEDICAL_LICENSE": D,
    "CRYPTO": D,
    "STREET_ADDRESS": D,
    "DENY_LIST": D,
    "ID_NUMBER": D,          # an employee, customer, contract... number after its label
    "USERNAME": D,           # a user handle ("@jdoe"): one account on a chat or forge
    "NATIONAL_ID": D,        # a national identity, social-insurance or tax number
    "INTERNAL_HOST": D,      # a host of the company's own network (build-07.corp.local)
    # quasi identifiers: narrow a person down when combined
    "DATE_OF_BIRTH": Q,
    "DATE_TIME": Q,
    "LOCATION": Q,
    "ORGANIZATION": Q,
    "NRP": Q,
    "AGE": Q,
    "IP_ADDRESS": Q,
    "URL": Q,
    "MAC_ADDRESS": Q,
    "UUID": Q,
    # confidential attributes (the DePrompt taxonomy: health, medical, payment, asset)
    "HEALTH": C,
    "MEDICAL": C,
    "PAYMENT": C,
    "ASSET": C,
    # secrets: credentials that grant access
    "API_KEY": S,
    "SECRET": S,
}

#: Key of the one-line explanation in a Presidio result's ``recognition_metadata``.
WHY_KEY = "preflight_why"
#: Key of the :class:`~preflight.core.types.Evidence` its recognizer declares, in a
#: Presidio result's ``recognition_metadata`` (set by the analyzer, read by cleaning).
EVIDENCE_KEY = "preflight_evidence"

#: Higher wins when detections overlap (see :mod:`preflight.core.pii.overlaps`).
CATEGORY_PRIORITY: dict[Category, int] = {S: 3, D: 2, C: 1, Q: 0}


def category_of(entity_type: str) -> Category:
    """The category of an entity type (quasi-identifier when unknown)."""
    return CATEGORY_BY_TYPE.get(entity_type, Q)


# Why lines for Presidio's own recognizers, keyed by (recognizer name, entity type);
# a None type is the recognizer's fallback.
_PRESIDIO_WHY: dict[tuple[str, str | None], str] = {
    ("CreditCardRecognizer", None): "Matches a card number pattern and passes the Luhn checksum",
    ("IbanRecognizer", None): "Matches an IBAN pattern and passes the mod-97 checksum",
    ("UsSsnRecognizer", None): "Matches the US Social Security number format",
    ("UsItinRecognizer", None): "Matches the US taxpayer identification number format",
    ("UsPassportRecognizer", None): "Looks like a US passport number",
    ("UsLicenseRecognizer", None): "Looks like a US driver's licence number",
    ("UsBankRecognizer", None): "Looks like a US bank account number",
    ("NhsRecognizer", None): "Matches a UK NHS number and passes its checksum",
    ("CryptoRecognizer", None): "Matches a crypto wallet address and passes its checksum",
    ("DateRecognizer", None): "Matches a date format",
    ("IpRecognizer", None): "Matches an IPv4 or IPv6 address",
    ("MedicalLicenseRecognizer", None): "Matches a medical licence number and its checksum",
    ("MacAddressRecognizer", None): "Matches a network MAC address",
    ("UuidRecognizer", None): "Matches a UUID identifier",
    ("PhoneRecognizer", None): "Parses as a valid phone number",
    ("UrlRecognizer", None): "Matches a web address",
    ("OfflineEmailRecognizer", None): "Matches an email address with a known top-level domain",
    ("EmailRecognizer", None): "Matches an email address with a known top-level domain",
    ("SpacyRecognizer", "PERSON"): "The NER model tagged it as a person's name",
    ("SpacyRecognizer", "ORGANIZATION"): "The NER model tagged it as an organization",
    ("SpacyRecognizer", "LOCATION"): "The NER model tagged it as a place",
    ("SpacyRecognizer", "DATE_TIME"): "The NER model tagged it as a date or time",
    ("SpacyRecognizer", "NRP"): "The NER model tagged it as a nationality, religious or "
                                "political group",
    ("SpacyRecognizer", None): "The NER model tagged it as a named entity",
}


def why_for(recognizer: str, entity_type: str, boosted_by_context: bool = False) -> str:
    """A human explanation for a Presidio recognizer's result (never the value)."""
    why = _PRESIDIO_WHY.get((recognizer, entity_type)) or _PRESIDIO_WHY.get((recognizer, None))
    if why is None:
        why = f"Detected as {entity_type.replace('_', ' ').lower()} by {recognizer}"
    if boosted_by_context:
        why += "; a related word nearby raised the confidence"
    return why
