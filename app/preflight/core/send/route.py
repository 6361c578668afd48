"""Where a provider's requests may go: its base URL read as the HTTP client reads it, no
cleartext to another machine, and no proxy but the one the provider names.

- **One reading of every address** (:mod:`.destination`): a base URL the HTTP client
  would read differently from what it shows is refused, on save and at send time.
- **No cleartext to other machines.** ``http://`` is accepted only for a loopback host
  (127.0.0.0/8, ::1, localhost) unless the provider setting ``allow_insecure_http`` says
  otherwise.
- **No proxy from the environment.** Sessions that carry a document or a key ignore
  ``HTTP(S)_PROXY``, ``ALL_PROXY``, ``.netrc`` and ``CURL_CA_BUNDLE`` (:func:`harden`); a
  proxy named in the provider's settings is used for https to another machine only,
  shown in the plan and recorded in the audit. ``REQUESTS_CA_BUNDLE`` alone is honoured,
  explicitly: it changes whom TLS trusts (a company that inspects HTTPS), never where the
  request goes.
"""

from __future__ import annotations

import os

import requests

from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError
from preflight.core.send import inflight
from preflight.core.send.destination import (
    Destination, UnclearURL, destination, is_loopback_host,
)


def provider_destination(settings: ProviderSettings) -> Destination:
    """Where the provider's base URL really goes; a ConfigError when that is not plain
    (a backslash, a user name or password, an odd port or host — see :mod:`.destination`)."""
    base = settings.base_url.strip()
    try:
        return destination(base)
    except UnclearURL as exc:
        raise ConfigError(
            f"Provider '{settings.name}' has an invalid base URL ({exc.reason}); "
            "Preflight sends nothing there.",
            "Give the plain address, e.g. https://api.openai.com/v1 or "
            "http://127.0.0.1:8080/v1 (keys go in the keyring, never in the URL).",
        ) from None


def cleartext_host(settings: ProviderSettings) -> str | None:
    """The host when ``settings`` sends over plain HTTP to another machine, else None."""
    try:
        dest = destination(settings.base_url.strip())
    except UnclearURL:
        return None                       # refused anyway, by provider_destination
    if dest.scheme == "http" and not is_loopback_host(dest.host):
        return dest.host
    return None


def check_cleartext(settings: ProviderSettings) -> None:
    """Refuse an unclear base URL, plain HTTP to a non-loopback host unless the provider
    allows it, and a proxy for plain HTTP (see :func:`proxy_for`)."""
    provider_destination(settings)
    host = cleartext_host(settings)
    if host and not settings.allow_insecure_http:
        raise ConfigError(
            f"Provider '{settings.name}' uses plain http:// to {host}, which is not this "
            "computer: the document and the API key would cross the network unencrypted.",
            "Use an https:// base URL, or allow cleartext for this provider explicitly: "
            f"preflight providers add {settings.name} ... --allow-insecure-http.",
            fix="https", subject=settings.name,
        )
    if host and _named_proxy(settings):
        raise ConfigError(
            f"Provider '{settings.name}' names a proxy but uses plain http:// to {host}: "
            "the proxy would read the document and the API key.",
            "Use an https:// base URL (the proxy then sees only the host name), or remove "
            "the proxy from the provider.",
        )
    proxy_for(settings, settings.base_url.strip())      # a malformed proxy: said now


def cleartext_warning(settings: ProviderSettings) -> str | None:
    """The sentence the send plan shows when cleartext to another machine is allowed."""
    host = cleartext_host(settings)
    if host is None:
        return None
    return (f"Plain HTTP to {host}: the request and the API key cross the network "
            "unencrypted (allowed for this provider by allow_insecure_http).")


# --- proxies -------------------------------------------------------------------------------


def new_session() -> requests.Session:
    """A session for requests that carry a document or a key: see :func:`harden`."""
    http = requests.Session()
    harden(http)
    return http


def harden(http: requests.Session) -> requests.Session:
    """Nothing from the environment decides where the request goes or what it carries:
    ``HTTP(S)_PROXY``/``ALL_PROXY`` would send it through a machine nobody confirmed
    (loopback included, in clear) and ``.netrc`` would replace the key header. A proxy is
    used only when the provider names one (:func:`proxy_for`). The company CA bundle of
    ``REQUESTS_CA_BUNDLE`` is kept (read here, by name). Stop lands before the provider
    answered too (:mod:`.inflight`)."""
    http.trust_env = False
    http.proxies = {}
    bundle = os.environ.get("REQUESTS_CA_BUNDLE", "").strip()
    if bundle and os.path.exists(bundle):
        http.verify = bundle
    inflight.mount(http)
    return http


def _named_proxy(settings: ProviderSettings) -> str | None:
    proxy = (getattr(settings, "proxy", None) or "").strip()
    return proxy or None


def proxy_for(settings: ProviderSettings, url: str) -> str | None:
    """The proxy a request of ``settings`` to ``url`` goes through: the one the provider
    names, for https to another machine only (loopback is this computer, never proxied;
    plain http with a proxy is refused by :func:`check_cleartext`). The proxy must itself
    be a plain http(s) address without credentials."""
    proxy = _named_proxy(settings)
    if proxy is None:
        return None
    try:
        dest, via = destination(url), destination(proxy)
    except UnclearURL as exc:
        raise ConfigError(
            f"The proxy of provider '{settings.name}' is not a plain address: {exc.reason}.",
            "Give it as http://HOST:PORT (a proxy that needs a password is not supported: "
            "Preflight keeps no passwords in its settings).",
        ) from None
    if dest.scheme != "https" or is_loopback_host(dest.host):
        return None
    return f"{via.scheme}://{via.netloc}"


def proxy_notice(settings: ProviderSettings) -> str | None:
    """The sentence the send plan shows when the request goes through a proxy."""
    try:
        url = provider_destination(settings).url
        via = proxy_for(settings, url)
    except ConfigError:
        return None
    if via is None:
        return None
    host = destination(url).host
    return (f"Through the proxy {via} (named in this provider's settings): it sees that "
            f"this computer connects to {host}, not the request or the key (HTTPS).")
