"""The company policy's keys for pooled learning: sharing the learning pairs with the
central store, and the company-trained utility model the laptops load.

::

    share_learning_pairs = true          # default false: nothing is shared

    [utility_model]
    path_or_url = "https://models.example.com/preflight/openai--gpt-4o.joblib"
    sha256 = "9f2c…"                     # 64 hex digits; a mismatch is refused
    provider = "openai"                  # optional: only for this provider …
    model = "gpt-4o"                     # … and model (default: every provider)

A learning pair is numbers only — the feature vector, the realized utility, the provider
and model names — never document text (:mod:`preflight.core.send.audit_sync`); it goes to
the ``[audit.central]`` store. ``path_or_url`` is a file path, an https URL, or an http URL
on the loopback interface (tests, a local mirror); see docs/DEPLOYMENT.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

_MODEL_KEYS = ("path_or_url", "sha256", "provider", "model")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class CompanyModelSettings:
    """Where the company's utility model is and the sha256 it must have."""

    path_or_url: str
    sha256: str
    provider: str | None = None
    model: str | None = None

    @property
    def is_url(self) -> bool:
        return urlsplit(self.path_or_url).scheme in ("http", "https")

    def applies_to(self, provider: str | None, model: str | None) -> bool:
        """Whether the model serves this provider (and model)."""
        return ((self.provider is None or self.provider == provider)
                and (self.model is None or self.model == model))

    def describe(self) -> dict[str, Any]:
        return {"path_or_url": self.path_or_url, "sha256": self.sha256,
                "provider": self.provider, "model": self.model}


def parse_share(data: Mapping[str, Any],
                bad: Callable[[tuple[str, ...], str], Exception]) -> bool:
    value = data.get("share_learning_pairs", False)
    if not isinstance(value, bool):
        raise bad(("share_learning_pairs",), "'share_learning_pairs' must be true or false "
                  f"(found {value!r})")
    return value


def parse_model(table: Mapping[str, Any],
                bad: Callable[[tuple[str, ...], str], Exception]) -> CompanyModelSettings:
    """Validate ``[utility_model]``; ``bad(path, problem)`` builds the error to raise."""
    here = ("utility_model",)
    for key in table:
        if key not in _MODEL_KEYS:
            raise bad(here + (key,), f"'utility_model.{key}' is not a company policy key "
                      f"(known in utility_model: {', '.join(_MODEL_KEYS)})")
    where = table.get("path_or_url")
    if not isinstance(where, str) or not where.strip():
        raise bad(here + ("path_or_url",), "'utility_model.path_or_url' must be a file path "
                  "or an https URL")
    problem = location_problem(where.strip())
    if problem:
        raise bad(here + ("path_or_url",), f"'utility_model.path_or_url' {problem}")
    digest = table.get("sha256")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", digest.strip()):
        raise bad(here + ("sha256",), "'utility_model.sha256' must be the file's sha256 "
                  "(64 hex digits; `sha256sum FILE`)")
    names: dict[str, str | None] = {}
    for key in ("provider", "model"):
        value = table.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise bad(here + (key,), f"'utility_model.{key}' must be a name")
        names[key] = value.strip() if isinstance(value, str) else None
    return CompanyModelSettings(where.strip(), digest.strip().lower(), names["provider"],
                                names["model"])


def location_problem(where: str) -> str | None:
    """Why ``where`` cannot name the model file (None: it can)."""
    parts = urlsplit(where)
    if parts.scheme in ("", "file") or re.fullmatch(r"[A-Za-z]", parts.scheme):
        return None                          # a path (a drive letter is a Windows path)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname in _LOOPBACK:
        return None
    return "must be a file path, an https URL, or an http URL on this computer (loopback)"
