"""API keys: in the OS keyring, or held in memory for one session — never in a file.

A stored key is bound to the provider's *origin* (scheme, host, port), not only to its
name: the keyring entry's account is :func:`key_account` (``name @ https://host:443``).
A provider re-added, edited or moved to another address finds no key there and asks for
one again, so a key stored for one origin is never sent to another. A key stored under the
name alone (before keys were bound) is not used: the message asks to store it again.

Order in which a key is found at send time (:func:`resolve_key`):

1. the environment variable the provider names (``ProviderSettings.key_env``), read at
   send time and never stored;
2. a key the user agreed to keep in memory for this session (:class:`SessionKeyStore`);
3. the OS keyring (:class:`KeyStore`).

On a machine without a usable keyring backend (headless Linux gets keyring's ``fail``
or ``null`` backend) :meth:`KeyStore.set` raises :class:`KeyringUnavailableError`; the
faces then *ask* whether to hold the key in memory for the session instead. Nothing is
ever written to a file as a fallback.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError
from preflight.core.send import logfilter
from preflight.core.send.destination import is_loopback_host, origin

log = logging.getLogger(__name__)

SERVICE = "preflight"


class KeyringUnavailableError(ConfigError):
    """No OS keyring backend: the key cannot be remembered across sessions."""


@dataclass(frozen=True)
class KeyringStatus:
    available: bool
    backend: str          # class name of the keyring backend, for display
    reason: str = ""


def keyring_status() -> KeyringStatus:
    """Whether a real OS keyring backend is in use (fail/null backends are not)."""
    try:
        import keyring
        from keyring.backends import fail, null
    except Exception as exc:  # noqa: BLE001 - a broken install is "unavailable", not a crash
        return KeyringStatus(False, "none", f"keyring cannot be imported ({type(exc).__name__})")
    backend = keyring.get_keyring()
    name = f"{type(backend).__module__}.{type(backend).__name__}"
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return KeyringStatus(False, name, "no OS keyring service (e.g. headless Linux without "
                                          "Secret Service)")
    try:
        priority = float(getattr(backend, "priority", 1))
    except Exception:  # noqa: BLE001 - keyring raises RuntimeError for unusable backends
        priority = 0.0
    if priority <= 0 and not isinstance(backend, _chainer_types()):
        return KeyringStatus(False, name, "the keyring backend reports itself unusable")
    return KeyringStatus(True, name)


def _chainer_types() -> tuple[type, ...]:
    try:
        from keyring.backends.chainer import ChainerBackend

        return (ChainerBackend,)
    except Exception:  # noqa: BLE001
        return ()


def _unavailable(status: KeyringStatus) -> KeyringUnavailableError:
    return KeyringUnavailableError(
        f"No OS keyring is available on this machine ({status.reason}).",
        "Keep the key in memory for this session only, or name an environment variable "
        "that holds it (preflight providers add NAME ... --key-env VAR). Preflight never "
        "writes keys to a file.", fix="no-keyring",
    )


class KeyStore:
    """Secrets in the OS keyring, one entry per account: a provider's
    :func:`key_account`, or a name the company policy gives (the audit store's password)."""

    def __init__(self, service: str = SERVICE) -> None:
        self.service = service

    def status(self) -> KeyringStatus:
        return keyring_status()

    def set(self, provider: str, key: str, remember: bool = True) -> None:
        """Store ``key`` for ``provider``. ``remember=False`` is refused here: a key that
        must not outlive the session belongs in a :class:`SessionKeyStore`."""
        key = key.strip()
        if not key:
            raise ConfigError("The API key is empty.", "Paste the key again.")
        if not remember:
            raise ConfigError(
                "KeyStore only remembers keys.", "Use SessionKeyStore for a session-only key."
            )
        status = self.status()
        if not status.available:
            raise _unavailable(status)
        import keyring

        logfilter.register_secret(key)
        try:
            keyring.set_password(self.service, provider, key)
        except Exception as exc:  # noqa: BLE001 - backend errors vary by OS
            raise KeyringUnavailableError(
                f"The OS keyring refused to store the key ({type(exc).__name__}).",
                "Unlock the keyring (log in to the desktop session) and try again, or keep "
                "the key in memory for this session.",
            ) from None
        log.info("stored an API key for provider %s in the OS keyring", provider)

    def get(self, provider: str) -> str | None:
        if not self.status().available:
            return None
        import keyring

        try:
            key = keyring.get_password(self.service, provider)
        except Exception as exc:  # noqa: BLE001
            log.warning("the OS keyring could not be read (%s)", type(exc).__name__)
            return None
        logfilter.register_secret(key)
        return key

    def delete(self, provider: str) -> bool:
        if not self.status().available:
            return False
        import keyring
        from keyring.errors import PasswordDeleteError

        try:
            keyring.delete_password(self.service, provider)
        except PasswordDeleteError:
            return False
        except Exception as exc:  # noqa: BLE001
            log.warning("the OS keyring could not delete a key (%s)", type(exc).__name__)
            return False
        return True


class SessionKeyStore:
    """Keys held in memory for this process only (after the user agreed to it), by
    :func:`key_account`."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()

    def set(self, provider: str, key: str) -> None:
        key = key.strip()
        if not key:
            raise ConfigError("The API key is empty.", "Paste the key again.")
        logfilter.register_secret(key)
        with self._lock:
            self._keys[provider] = key

    def get(self, provider: str) -> str | None:
        with self._lock:
            return self._keys.get(provider)

    def delete(self, provider: str) -> bool:
        with self._lock:
            return self._keys.pop(provider, None) is not None


def key_account(provider: ProviderSettings) -> str:
    """The keyring account of ``provider``'s key: its name and origin (scheme, host,
    port, as the HTTP client reaches it), so the key never follows the name elsewhere."""
    scheme, host, port = origin(provider.base_url.strip())
    host = f"[{host}]" if ":" in host else host
    return f"{provider.name} @ {scheme}://{host}:{port}"


def show_origin(provider: ProviderSettings) -> str:
    """``scheme://host:port`` of ``provider``, for messages."""
    return key_account(provider).rsplit(" @ ", 1)[1]


def is_loopback(base_url: str) -> bool:
    """A server on this machine (local llama.cpp, Ollama, vLLM...) may need no key (read
    as the HTTP client reads the address: an unclear one is not loopback)."""
    return is_loopback_host(origin(base_url.strip())[1])


@dataclass(frozen=True)
class ResolvedKey:
    key: str | None
    source: str  # "env:VAR" | "session" | "keyring" | "none (local server)"

    def __repr__(self) -> str:  # never print the key, even in a debugger or traceback
        return f"ResolvedKey(key={'***' if self.key else None}, source={self.source!r})"


def resolve_key(
    provider: ProviderSettings,
    keystore: KeyStore | None = None,
    session: SessionKeyStore | None = None,
    environ: dict[str, str] | None = None,
) -> ResolvedKey:
    """Find the key for ``provider`` (env var, then session, then keyring) — a stored
    key only if it was stored for ``provider``'s origin (:func:`key_account`)."""
    env = os.environ if environ is None else environ
    if provider.key_env:
        value = env.get(provider.key_env, "").strip()
        if value:
            logfilter.register_secret(value)
            return ResolvedKey(value, f"env:{provider.key_env}")
    account = key_account(provider)
    if session is not None:
        value = session.get(account)
        if value:
            return ResolvedKey(value, "session")
    keystore = keystore if keystore is not None else KeyStore()
    value = keystore.get(account)
    if value:
        return ResolvedKey(value, "keyring")
    if is_loopback(provider.base_url):
        return ResolvedKey(None, "none (local server)")
    where = f"the environment variable {provider.key_env} is empty and " if provider.key_env else ""
    stored = (" (the key stored under its name alone was saved before keys were bound to "
              "an address, so it is not sent anywhere)" if keystore.get(provider.name)
              else "")
    raise ConfigError(
        f"No API key for provider '{provider.name}' at {show_origin(provider)}: {where}none "
        f"is stored for that address{stored}.",
        "Store the provider's API key" + (f" or set {provider.key_env}." if provider.key_env
                                          else "."),
        fix="set-key", subject=provider.name,
    )
