"""The company policy's ``[audit.central]`` table: the central audit store (PostgreSQL).

::

    [audit.central]
    url = "postgresql://preflight_audit@audit.example.com:5432/preflight"
    password_env = "PREFLIGHT_AUDIT_PASSWORD"   # read at sync time, never stored
    password_keyring = "audit-store"            # else this OS keyring entry
    sslmode = "verify-full"                      # the default
    sslrootcert = "/etc/preflight/company-ca.pem"

The URL never holds a password (a file is not a place for one) nor TLS options (they have
their own keys, so they are checked); see docs/DEPLOYMENT.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import SplitResult, urlsplit

SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_KEYS = ("url", "password_env", "password_keyring", "sslmode", "sslrootcert")


@dataclass(frozen=True)
class CentralAuditSettings:
    """Where audit records are also written, and how to log in."""

    url: str
    password_env: str | None = None
    password_keyring: str | None = None
    sslmode: str = "verify-full"
    sslrootcert: str | None = None

    @property
    def where(self) -> str:
        """host:port/db, for messages (the URL holds no secret, but keep it short)."""
        p = urlsplit(self.url)
        return f"{p.hostname}:{p.port or 5432}{p.path or ''}"

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "password_env": self.password_env,
                "password_keyring": self.password_keyring, "sslmode": self.sslmode,
                "sslrootcert": self.sslrootcert}


def parse_central(table: Mapping[str, Any],
                  bad: Callable[[tuple[str, ...], str], Exception]) -> CentralAuditSettings:
    """Validate ``[audit.central]``; ``bad(path, problem)`` builds the error to raise."""
    here = ("audit", "central")
    for key in table:
        if key not in _KEYS:
            raise bad(here + (key,), f"'audit.central.{key}' is not a company policy key "
                      f"(known in audit.central: {', '.join(_KEYS)})")
    url = table.get("url")
    if not isinstance(url, str):
        raise bad(here + ("url",), "'audit.central.url' must be a postgresql:// URL")
    problem = _url_problem(url)
    if problem:
        raise bad(here + ("url",), f"'audit.central.url' {problem}")
    names = {}
    for key, pattern, what in (("password_env", r"[A-Za-z_][A-Za-z0-9_]{0,127}",
                                "an environment variable name"),
                               ("password_keyring", r"[\w.@-]{1,128}",
                                "a keyring entry name")):
        value = table.get(key)
        if value is not None and (not isinstance(value, str)
                                  or not re.fullmatch(pattern, value)):
            raise bad(here + (key,), f"'audit.central.{key}' must be {what}")
        names[key] = value
    sslmode = table.get("sslmode", "verify-full")
    if sslmode not in SSLMODES:
        raise bad(here + ("sslmode",), f"'audit.central.sslmode' must be one of "
                  f"{', '.join(SSLMODES)} (found {sslmode!r})")
    root = table.get("sslrootcert")
    if root is not None and (not isinstance(root, str) or not root.strip()):
        raise bad(here + ("sslrootcert",), "'audit.central.sslrootcert' must be the path "
                  "of a CA certificate file")
    return CentralAuditSettings(url.strip(), names["password_env"],
                                names["password_keyring"], sslmode, root)


def split_url(url: str) -> SplitResult | None:
    """``url`` split into its parts (None: not a URL, e.g. a bad port)."""
    try:
        parts = urlsplit(url.strip())
        parts.port                      # noqa: B018 - raises on a bad port
    except ValueError:
        return None
    return parts


def _url_problem(url: str) -> str | None:
    p = split_url(url)
    if p is None:
        return "is not a URL"
    if p.scheme not in ("postgresql", "postgres") or not p.hostname:
        return "must be a postgresql:// URL with a host"
    if p.password is not None:
        return ("must not contain a password: name an environment variable "
                "(password_env) or a keyring entry (password_keyring)")
    if p.query or p.fragment:
        return "must not contain options: use sslmode and sslrootcert"
    if not p.username:
        return "must name the database user (postgresql://USER@host/db)"
    return None
