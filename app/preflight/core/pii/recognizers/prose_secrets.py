"""Credentials written in sentences: "the wifi password for the guest network is
Summer2024!", "admin password Falcon#2025!admin", "PIN 4821", and the password of a
connection string ("…;Password=Pa55w0rd;").

The value must look like a credential, not like prose: a password has a digit or a
symbol (or a case change inside the word) and is no placeholder, mask or bracketed
note; a PIN is 4 to 8 digits. "Password reset is handled by IT", "the PIN code feature"
or "reset your password on the portal" give no value and match nothing.
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule

_I = re.IGNORECASE
_KEYWORD = r"\b(?:pass(?:word|wd|phrase|code)|pwd)\b"
# "for the guest network", "of the admin account", "on the router" (at most 4 words)
_QUALIFIER = (r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:the[ \t]+|our[ \t]+|my[ \t]+|your[ \t]+|"
              r"this[ \t]+|that[ \t]+|an?[ \t]+)?[\w.@'’-]+(?:[ \t]+[\w.@'’-]+){0,3}?)?")
_LINKER = (r"[ \t]*(?:(?:is|was|will[ \t]+be|would[ \t]+be|remains|stays|"
           r"(?:is[ \t]+|was[ \t]+|has[ \t]+been[ \t]+|have[ \t]+been[ \t]+)?"
           r"(?:now|changed[ \t]+to|set[ \t]+to|reset[ \t]+to|updated[ \t]+to))"
           r"(?:[ \t]*:)?|[:=,])[ \t]*")
# the value ends before a space, a quote, a comma or semicolon, or a sentence-final '.'/'?'
_VALUE = r"[\"'“‘]?([^\s\"'“”‘’,;]{4,128}?)[\"'”’]?(?=[\s,;)]|[.?](?:\s|$)|$)"

_PLACEHOLDER = re.compile(r"[<\[{(].*[>\]})]|(.)\1*|[*•xX]+|\S*(?:REDACTED|redacted)\S*")


def not_masked(value: str) -> bool:
    """Not a placeholder, a mask or a note standing for the value ("<SECRET_1>", "****",
    "[REDACTED]")."""
    return not _PLACEHOLDER.fullmatch(value)


def _credential_like(value: str) -> bool:
    """A password, not a word: a digit, a symbol or a case change inside the word."""
    if not not_masked(value):
        return False
    inner_upper = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return any(c.isdigit() for c in value) or any(not c.isalnum() for c in value) \
        or inner_upper


def _strong_credential(value: str) -> bool:
    """Written right after the word with no "is"/":": letters and digits, 6+ characters
    ("admin password Falcon#2025!admin"), so "password policy v2" stays prose."""
    return (len(value) >= 6 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value) and _credential_like(value))


PROSE_SECRET_RULES: tuple[Rule, ...] = (
    Rule("SECRET", re.compile(_KEYWORD + _QUALIFIER + _LINKER + _VALUE, _I), 0.8,
         "A value given as a password in a sentence", group=1, validate=_credential_like),
    Rule("SECRET", re.compile(_KEYWORD + r"[ \t]+" + _VALUE, _I), 0.7,
         "A password-shaped value written right after the word password", group=1,
         validate=_strong_credential),
    # PIN: the upper-case word, or "pin code"/"pin number" in any case; 4-8 digits
    Rule("SECRET", re.compile(r"(?:\bPIN\b|\b[Pp][Ii][Nn][ -]?(?:code|number)\b)"
                              r"(?:[ \t]*(?:is|was|[:=#])[ \t]*|[ \t]+)"
                              r"(\d{4,8})(?![\d,.]?\d|-\d)"), 0.8,
         "A PIN code written next to the word PIN", group=1),
)
