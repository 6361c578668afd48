"""A provider's API key as the window handles it: where it is stored, where it comes
from in words, and "Test connection" (Qt-free; the window's doorway delegates here).

The key is bound to the provider's address (scheme, host, port): the keyring entry or
the session's memory (:mod:`preflight.core.send.keys`)."""

from __future__ import annotations

from typing import Any

from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError


def set_key(services: Any, provider: ProviderSettings, key: str, remember: bool) -> str:
    """Store ``provider``'s key: in the OS keyring (``remember``) or in this session's
    memory; returns where it went ("keyring" or "session")."""
    from preflight.core.send.keys import KeyStore, key_account

    if remember:
        KeyStore().set(key_account(provider), key, remember=True)
        return "keyring"
    services.session_keys().set(key_account(provider), key)
    return "session"


def keyring_status() -> Any:
    """Whether the OS keyring is usable, and which backend it is."""
    from preflight.core.send.keys import keyring_status as status

    return status()


def key_source(services: Any, provider: ProviderSettings) -> str:
    """Where the key of ``provider`` (saved or not yet) comes from, as a phrase."""
    from preflight.core.send.keys import KeyStore, resolve_key

    try:
        found = resolve_key(provider, KeyStore(), services.session_keys())
    except ConfigError:
        env = f" (the variable {provider.key_env} is empty)" if provider.key_env else ""
        return f"none set{env} — use “Set API key…”"
    return key_where(found.source)


def headers_as_sent(services: Any, provider: ProviderSettings, request: Any
                    ) -> list[tuple[str, str]]:
    """``request``'s headers as they will leave: the key header only when a key will be
    sent (a server on this computer, or no key found: none), its value never shown —
    where it comes from instead."""
    from preflight.core.send.keys import KeyStore, resolve_key

    headers = request.display_headers(with_auth=False)
    try:
        found = resolve_key(provider, KeyStore(), services.session_keys())
    except ConfigError:
        return headers                        # the send would stop: no key leaves
    if found.key is None or not request.auth_header:
        return headers
    return [*headers, (request.auth_header,
                       f"{request.auth_prefix}<API key {key_where(found.source)}>")]


def base_url_problem(provider: ProviderSettings) -> str | None:
    """Why ``provider``'s base URL would be refused at send time (no scheme, no host, a
    placeholder left in…), in one line, or None when it is usable."""
    from preflight.core.errors import PreflightError
    from preflight.core.send.probe import validate_base_url

    try:
        validate_base_url(provider)
    except PreflightError as err:
        return f"{err.message} {err.hint}".strip()
    return None


def check_connection(services: Any, provider: ProviderSettings) -> Any:
    """"Test connection": GET ``<base_url>/models`` with the key (never document text),
    once the address is valid and allowed by the company; a report with ``.message``, or
    a PreflightError."""
    from preflight.core.send.keys import KeyStore, resolve_key
    from preflight.core.send.probe import check_connection as probe, validate_base_url

    validate_base_url(provider)                     # before any key is looked up
    if not services.org_policy().provider_allowed(provider.base_url):
        raise ConfigError(f"The provider address {provider.base_url} is not allowed by "
                          "your organization's policy.",
                          "Ask your IT administrator to add it.")
    key = resolve_key(provider, KeyStore(), services.session_keys()).key
    return probe(provider, key)


def key_where(source: str) -> str:
    """A key source of :func:`preflight.core.send.keys.resolve_key` for people."""
    if source.startswith("env:"):
        return f"read from the environment variable {source[4:]}"
    return {"keyring": "stored in the OS keyring",
            "session": "kept in memory for this session (not saved)",
            "none (local server)": "none needed (a server on this computer)"}.get(source, source)
