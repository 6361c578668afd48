"""Credentials written in configuration files, code and shell commands.

A value is a secret when the name it is given to says so, whatever the syntax: ``.env``
(``DB_PASSWORD=…``, ``PGPASSWORD=… psql``), YAML (``password: …``), JSON (``"clientSecret":
"…"``), INI and Java properties (``db.password=…``), XML (``<password>…</password>``,
``<add key="DbPassword" value="…"/>``), code (``$pass = "…"``, ``define('DB_PASSWORD',
'…')``, ``connect(password="…")``, ``"Password" => "…"``), HTTP headers (``X-Api-Key: …``,
``Authorization: Basic …``) and shell commands (``mysql -pS3cret``, ``curl -u user:pass``,
``sshpass -p …``, ``docker login -p …``, ``--password …``, ``redis-cli -a …``, ``openssl
-passin pass:…``). A name counts when one of its parts (split at ``_ . -`` and at case
changes) is a secret word: ``dbPassword``, ``AWS_SECRET_ACCESS_KEY``, ``client-secret``,
``PGPASSWORD``; ``bypass``, ``compass``, ``tokenizer`` or ``author`` are not.

What a name points at instead of holding is no secret: a variable or an expression
(``${DB_PASS}``, ``$PW``, ``%PW%``, ``os.environ["X"]``, ``settings.DB_PASSWORD``), a type
(``password: str``), an empty or masked value, a template placeholder.
"""

from __future__ import annotations

import base64
import binascii
import re

from presidio_analyzer import EntityRecognizer

from preflight.core.pii.recognizers.base import make_result
from preflight.core.pii.recognizers.prose_secrets import not_masked
from preflight.core.types import Evidence

_I = re.IGNORECASE
#: Parts of a name that make its value a secret.
SECRET_PARTS = frozenset({
    "password", "passwd", "pass", "pwd", "pw", "passphrase", "passcode", "secret",
    "secrets", "token", "apikey", "credential", "credentials", "creds", "auth",
    "authtoken", "privatekey", "secretkey", "accesskey", "clientsecret", "storepass",
    "keypass", "sas", "connectionstring",
})
#: Two parts in a row that do ("api key", "access key", "private key", "secret key").
SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"),
                          ("secret", "key"), ("signing", "key"), ("encryption", "key"),
                          ("master", "key"), ("account", "key"), ("shared", "key"),
                          ("auth", "key"), ("app", "key"), ("license", "key"),
                          ("connection", "string")})
#: A part glued to a prefix still counts when it ends the part: "PGPASSWORD".
_GLUED_ENDINGS = ("password", "passwd", "secret", "token", "apikey")
#: Parts that count only as the last part of a name: "db_pass", "SMTP_PW", "auth", but
#: not "pass_rate" or "auth_enabled".
_LAST_ONLY = frozenset({"pass", "pw", "pwd", "auth", "sas"})
#: Names that hold no secret although a secret word is in them (a flag, a setting about
#: the secret: "--password-stdin", "password_policy", "token_url", "auth_timeout").
_NOT_A_VALUE_NAME = re.compile(
    r"(?:stdin|file|env|prompt|path|policy|length|reset|change|expiry|expires|hash|type|"
    r"count|rate|url|uri|endpoint|ttl|timeout|enabled|required|min|max|size|id|field|"
    r"label|hint|mode|method|provider|header|name|format)$", _I)


def name_parts(name: str) -> list[str]:
    """``dbPassword`` → db, password; ``AWS_SECRET_ACCESS_KEY`` → aws, secret, access, key."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p.casefold() for p in re.split(r"[\s_.\-$@:\[\]\"']+", spaced) if p]


def secret_name(name: str) -> bool:
    """Whether a value given to ``name`` is a credential."""
    parts = name_parts(name)
    if not parts or _NOT_A_VALUE_NAME.search(name):
        return False
    last = len(parts) - 1
    if any((p in SECRET_PARTS and (p not in _LAST_ONLY or i == last))
           or p.endswith(_GLUED_ENDINGS) for i, p in enumerate(parts)):
        return True
    return any(pair in SECRET_PAIRS for pair in zip(parts, parts[1:]))


_REFERENCE = re.compile(r".*[\[\](){}].*|[A-Za-z_]+(?:\.[A-Za-z_]+)+|@[\w.]+", re.S)
_NOT_VALUES = frozenset({"none", "null", "nil", "true", "false", "undefined", "str",
                         "string", "int", "bool", "bytes", "text", "secret", "password",
                         "optional", "required", "empty", "yes", "no", "on", "off"})


def _literal(value: str, quoted: bool) -> bool:
    """A value written out, not a reference, a type or a mask."""
    if len(value) < 3 or not not_masked(value) or value.casefold() in _NOT_VALUES:
        return False
    # a variable, a template, a comment, a path
    if value[0] in "{[<$%#/~" or value.startswith(("./", "../")) \
            or re.match(r"[A-Za-z]:\\", value):
        return False
    if quoted:              # a literal, unless it reads as code ("settings.password")
        return not _REFERENCE.fullmatch(value) or any(c.isdigit() for c in value)
    if _REFERENCE.fullmatch(value):
        return False
    # unquoted: a password, not a word (a digit, a symbol or a case change)
    return any(c.isdigit() or not c.isalnum() for c in value) or (
        any(c.isupper() for c in value[1:]) and any(c.islower() for c in value))


# NAME then an assignment: NAME=…, NAME: …, "NAME": "…", NAME => …, NAME := …
_ASSIGN = re.compile(
    r"(?<![\w$@.-])(?P<name>[$@:]?[A-Za-z_][\w.$@-]{0,80})[\"'\]]{0,2}[ \t]*"
    r"(?P<op>=>|:=|=|:(?!//|:))[ \t]*(?=\S)")
# a value: quoted (spaces allowed) or unquoted (ends at space, quote, ',', ';' or '&'
# before the next key of a connection string or a query)
_VALUE = re.compile(
    r"\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|`(?P<bq>[^`\n]{1,256})`|"
    r"(?P<bare>[^\s\"'`,;&<>]+(?:[;&](?![\w .-]{1,30}=)[^\s\"'`,;&<>]+)*)")
_XML_ELEMENT = re.compile(r"<(?P<tag>[\w:.-]{2,60})(?:\s[^>]*)?>(?P<value>[^<\n]{1,256})"
                          r"</(?P=tag)>")
_XML_KEY_VALUE = re.compile(r"\b(?:key|name)\s*=\s*[\"'](?P<name>[^\"'\n]{2,80})[\"']\s+"
                            r"value\s*=\s*[\"'](?P<value>[^\"'\n]{1,256})[\"']", _I)
_CALL_PAIR = re.compile(r"[(,]\s*[\"'](?P<name>[\w.-]{2,80})[\"']\s*,\s*"
                        r"[\"'](?P<value>[^\"'\n]{1,256})[\"']")
_BASIC_AUTH = re.compile(r"\bBasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])")
# shell: the flag and its value (glued, after '=', or the next word)
_SHELL_FLAGS = [
    (re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;]*?[ \t]-p"
                r"(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)"), "a MySQL -p option"),
    (re.compile(r"(?<![\w-])--(?P<name>[\w-]{2,40})(?:=|[ \t]+)(?P<q>[\"']?)"
                r"(?P<value>[^\s\"'-][^\s\"']*)(?P=q)"), "a command-line option"),
    (re.compile(r"\b(?:sshpass|docker[ \t]+login|podman[ \t]+login|helm[ \t]+registry"
                r"[ \t]+login|redis-cli)\b[^\n|;]*?[ \t]-[pa][ \t]+(?P<q>[\"']?)"
                r"(?P<value>[^\s\"']+)(?P=q)"), "the password option of a login command"),
    (re.compile(r"\b(?:curl|wget|http)\b[^\n|;]*?[ \t](?:-u|--user)[ \t]*(?P<q>[\"']?)"
                r"[^\s:\"']+:(?P<value>[^\s\"']+)(?P=q)"), "the user:password of curl -u"),
    (re.compile(r"\bsmbclient\b[^\n|;]*?[ \t]-U[ \t]*(?P<q>[\"']?)[^\s%\"']+%"
                r"(?P<value>[^\s\"']+)(?P=q)"), "the user%password of smbclient -U"),
    (re.compile(r"[ \t]-(?:passin|passout|password)[ \t]+pass:(?P<value>\S+)"),
     "an OpenSSL pass: argument"),
    (re.compile(r"[ \t]-(?:storepass|keypass|srcstorepass|deststorepass)[ \t]+"
                r"(?P<q>[\"']?)(?P<value>[^\s\"']+)(?P=q)"), "a keytool password option"),
    (re.compile(r"\bjdbc:oracle:\w+:[^\s/@:]+/(?P<value>[^\s/@]+)@"),
     "the password of an Oracle JDBC URL"),
]


def _basic_credentials(value: str) -> bool:
    """A Basic authorization value that decodes to "user:password"."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


class ConfigSecretRecognizer(EntityRecognizer):
    """Values given to secret names in configuration, code and commands."""

    evidence = Evidence.RULE

    WHY = "A value assigned to a name that says it is a password, key, token or secret"
    XML_WHY = "The value of a password, key or token element in XML"
    BASIC_WHY = "The user:password of an HTTP Basic authorization header"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["SECRET"], name=name, supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "SECRET" not in entities:
            return []
        out = []

        def add(start: int, end: int, why: str, score: float = 0.85) -> None:
            out.append(make_result(self, "SECRET", start, end, score, why))

        for m in _ASSIGN.finditer(text):
            if not secret_name(m.group("name")):
                continue
            v = _VALUE.match(text, m.end())
            if v is None:
                continue
            group = next(g for g in ("dq", "sq", "bq", "bare") if v.group(g) is not None)
            if _literal(v.group(group), quoted=group != "bare"):
                add(*v.span(group), self.WHY)
        for m in _XML_ELEMENT.finditer(text):
            if secret_name(m.group("tag")) and _literal(m.group("value").strip(), True):
                add(*m.span("value"), self.XML_WHY)
        for pattern in (_XML_KEY_VALUE, _CALL_PAIR):
            for m in pattern.finditer(text):
                if secret_name(m.group("name")) and _literal(m.group("value"), True):
                    add(*m.span("value"), self.WHY)
        for m in _BASIC_AUTH.finditer(text):
            if _basic_credentials(m.group(1)):
                add(*m.span(1), self.BASIC_WHY, 0.9)
        for pattern, what in _SHELL_FLAGS:
            for m in pattern.finditer(text):
                if "name" in pattern.groupindex and not secret_name(m.group("name")):
                    continue
                if _literal(m.group("value"), quoted=True):
                    add(*m.span("value"), f"The password in {what}")
        return out


__all__ = ["ConfigSecretRecognizer", "SECRET_PARTS", "name_parts", "secret_name"]
