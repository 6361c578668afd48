"""Credentials written in sentences: "the wifi password for the guest network is
Summer2024!", "admin password Falcon#2025!admin", "the old credential was Xy7#pQ2!",
"pw: hunter2", "creds are deploy:Qw3rty!9", "the API key is K3y-2024-Q", "PIN 4821",
"door code 7731", and the password of a connection string ("…;Password=Pa55w0rd;").

The value must look like a credential, not like prose: after a password word (password,
passphrase, passcode, pw, pass, credential, creds) it has a digit or a symbol (or a case
change inside the word) and is no placeholder, mask or bracketed note; after a weaker word
(key, token, secret, login, auth) it must look random (mixed character classes, no word);
a PIN or a door code is 4 to 8 digits. "Password reset is handled by IT", "the key is to
listen", "the PIN code feature" or "reset your password on the portal" give no value and
match nothing.
"""

from __future__ import annotations

import re

from preflight.core.pii.recognizers.base import Rule
from preflight.core.pii.recognizers.validators import char_classes, shannon_entropy

_I = re.IGNORECASE
_KEYWORD = r"\b(?:pass(?:word|wd|phrase|code)?|pwd|pw|credentials?|creds|log-?in[ \t]+details)\b"
# right before the value, with no "is" or ":" between ("admin password Falcon#2025!admin")
_BARE_KEYWORD = r"\b(?:pass(?:word|wd|phrase|code)|pwd|credentials?)\b"
# words that name a secret less surely: the value must look random
_WEAK_KEYWORD = (r"\b(?:(?:api|access|secret|private|license|licence|app)[ \t-]?key|key|"
                 r"(?:access|auth|bearer|api|refresh|session)?[ \t-]?token|"
                 r"(?:client[ \t-])?secret|log-?in|auth(?:entication)?[ \t-]?code|"
                 r"recovery[ \t-]code|master[ \t-]key)\b")
# "for the guest network", "of the admin account", "on the router" (at most 4 words)
_QUALIFIER = (r"(?:[ \t]+(?:for|of|on|to)[ \t]+(?:the[ \t]+|our[ \t]+|my[ \t]+|your[ \t]+|"
              r"this[ \t]+|that[ \t]+|an?[ \t]+)?[\w.@'’-]+(?:[ \t]+[\w.@'’-]+){0,3}?)?")
_LINKER = (r"[ \t]*(?:(?:is|was|are|were|will[ \t]+be|would[ \t]+be|remains|stays|"
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


def _quoted_credential(value: str) -> bool:
    """A quoted password or passphrase: several words, or one that looks like a password."""
    return not_masked(value) and (" " in value.strip() or _credential_like(value))


def secret_shaped(value: str) -> bool:
    """Random-looking, as a generated password, key or token is: 8+ characters of at least
    three classes (lower, upper, digit, symbol) with no word, date, path or address in it
    ("Xy7#pQ2!", "K3y-2024-Q", not "Windows10!", "2024-05-01T10:00", "v2.3.1-beta4")."""
    if not (8 <= len(value) <= 128) or not not_masked(value) or char_classes(value) < 3:
        return False
    if not any(c.isalpha() for c in value) or not any(c.isdigit() for c in value):
        return False
    if _NOT_RANDOM.search(value) or shannon_entropy(value) < 2.5:
        return False
    words = sum(len(w) for w in _WORD.findall(value))
    return words <= len(value) / 2


_NOT_RANDOM = re.compile(r"://|^[/~.]|@[\w-]+\.|^\d{4}-\d\d-\d\d|^v?\d+(?:\.\d+)+")
_WORD = re.compile(r"[a-z]{4,}|[A-Z][a-z]{3,}|[A-Z]{5,}")


def _strong_credential(value: str) -> bool:
    """Written right after the word with no "is"/":": letters and digits, 6+ characters
    ("admin password Falcon#2025!admin"), so "password policy v2" stays prose."""
    return (len(value) >= 6 and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value) and _credential_like(value))


PROSE_SECRET_RULES: tuple[Rule, ...] = (
    Rule("SECRET", re.compile(_KEYWORD + _QUALIFIER + _LINKER + _VALUE, _I), 0.8,
         "A value given as a password in a sentence", group=1, validate=_credential_like),
    Rule("SECRET", re.compile(_BARE_KEYWORD + r"[ \t]+" + _VALUE, _I), 0.7,
         "A password-shaped value written right after the word password", group=1,
         validate=_strong_credential),
    # a quoted passphrase may hold spaces ("passphrase 'correct horse battery staple'")
    Rule("SECRET", re.compile(_KEYWORD + _QUALIFIER + r"(?:" + _LINKER + r"|[ \t]+)"
                              r"[\"'“‘]([^\"'“”‘’\n]{4,128})[\"'”’]", _I), 0.8,
         "A quoted value given as a password or passphrase", group=1,
         validate=_quoted_credential),
    Rule("SECRET", re.compile(_WEAK_KEYWORD + _QUALIFIER + _LINKER + _VALUE, _I), 0.75,
         "A random-looking value given as a key, token or secret in a sentence", group=1,
         validate=secret_shaped),
    # PIN: the upper-case word, or "pin code"/"pin number" in any case, or a door, alarm,
    # access or security code; 4-8 digits
    Rule("SECRET", re.compile(r"(?:\bPIN\b|\b[Pp][Ii][Nn][ -]?(?:code|number)\b|"
                              r"\b(?i:door|alarm|access|security|gate|safe|lock)[ -]?"
                              r"(?i:code)\b)"
                              r"(?:[ \t]*(?:is|was|[:=#])[ \t]*|[ \t]+)"
                              r"(\d{4,8})(?![\d,.]?\d|-\d)"), 0.8,
         "A PIN code written next to the word PIN", group=1),
)


#: Any word that announces a credential (for a random-looking value near it).
CUE_WORDS = re.compile(_KEYWORD + "|" + _WEAK_KEYWORD, _I)
