""""Test connection": one explicit, user-initiated GET of ``<base_url>/models``.

It checks what a send would meet — the address (scheme, host, no cleartext to another
machine), DNS, the TCP/TLS connection, the key — without any document text: the request
has no body, only the key header. Errors are classified by :mod:`.transport` (the same
messages a send gives); a 404 here means the base URL is wrong, not the model.

Azure deployment URLs (``…/openai/deployments/NAME?api-version=…``) are probed at the
resource's ``/openai/models`` with the same ``api-version``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from preflight import __version__
from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError, ProviderError
from preflight.core.send import transport
from preflight.core.send.answer_guard import neutralize
from preflight.core.send.presets import unfilled_placeholder
from preflight.core.send.providers import Timeouts, create_client
from preflight.core.send.transport import Retryable

#: A connection test is interactive: fail fast rather than wait out a send's read timeout.
PROBE_TIMEOUTS = Timeouts(connect=5.0, read=15.0)
MAX_LISTED = 2000


@dataclass(frozen=True)
class ConnectionReport:
    """A successful test: the models the endpoint lists."""

    url: str                      # what was asked (query left out)
    models: tuple[str, ...]
    configured_model: str

    @property
    def message(self) -> str:
        n = len(self.models)
        text = f"Connected — {n} model{'s' if n != 1 else ''}"
        if self.configured_model and self.models:
            found = self.configured_model in self.models
            text += (f"; {self.configured_model} is among them." if found else
                     f"; {self.configured_model} is not among them (check the model name).")
        else:
            text += "."
        return text


def validate_base_url(settings: ProviderSettings) -> None:
    """Refuse an address a send would refuse: not plain (:mod:`.destination`: not
    http(s), no host, a user name or password, a backslash, an odd port or host),
    cleartext to another machine (unless allowed), a malformed proxy, a preset's
    placeholder left in. Raises a ConfigError with what to type instead."""
    left = unfilled_placeholder(settings.base_url)
    if left:
        raise ConfigError(f"The base URL of '{settings.name}' still contains {left}.",
                          f"Replace {left} with your own value (see the provider's portal).")
    create_client(settings).url()


def models_url(settings: ProviderSettings) -> str:
    """``<base_url>/models`` (the same base the chat endpoint is built from)."""
    client = create_client(settings)
    parts = urlsplit(client.url())           # validates scheme, host and cleartext
    path = parts.path.rsplit("/", 1)[0]
    if client.endpoint == "chat/completions":
        path = path.rsplit("/", 1)[0]
    if "/openai/deployments/" in path:       # Azure deployment: the resource lists models
        path = path.split("/openai/deployments/", 1)[0] + "/openai"
    return transport.destination(
        urlunsplit((parts.scheme, parts.netloc, f"{path}/models", parts.query, ""))).url


def check_connection(settings: ProviderSettings, key: str | None,
                    http: requests.Session | None = None,
                    timeouts: Timeouts = PROBE_TIMEOUTS) -> ConnectionReport:
    """GET the model list with ``key``; a :class:`ConnectionReport`, or a ProviderError /
    ConfigError that says what failed (DNS, refused, TLS, 401, 404, …) and what to do."""
    validate_base_url(settings)
    url = models_url(settings)
    client = create_client(settings)
    headers = {"Accept": "application/json", "User-Agent": f"preflight/{__version__}"}
    if key:
        if client._is_azure():
            headers["api-key"] = key
        else:
            headers["Authorization"] = f"Bearer {key}"
    http = transport.harden(http or requests.Session())   # no proxy from the environment
    try:
        response = transport.post(http, url, None, headers, timeouts, settings.name,
                                  method="GET", proxy=transport.proxy_for(settings, url))
    except Retryable as exc:
        raise exc.error from None
    if response.status_code in transport.REDIRECT_STATUSES:
        transport.redirect_target(response, url, url)      # raises: never followed
    if response.status_code == 404:
        response.close()
        raise ProviderError(
            f"No OpenAI-compatible API at {transport.show_origin_url(url)} (HTTP 404).",
            "Check the base URL: it usually ends in /v1 (Gemini: /v1beta/openai).")
    try:
        transport.check_status(response, settings)
    except Retryable as exc:
        raise exc.error from None
    try:
        payload = response.json()
    except ValueError:
        raise ProviderError(
            f"{transport.show_origin_url(url)} answered, but not with a model list.",
            "Check the base URL: it should be the API's root, usually ending in /v1.",
        ) from None
    finally:
        response.close()
    return ConnectionReport(transport.show_origin_url(url), _model_ids(payload),
                            settings.model)


def _model_ids(payload: Any) -> tuple[str, ...]:
    """Model names from ``{"data": [{"id"}]}`` (OpenAI style) or ``{"models": [...]}``."""
    items = payload.get("data", payload.get("models")) if isinstance(payload, dict) else None
    if not isinstance(items, list):
        raise ProviderError("The server answered, but not with an OpenAI-style model list.",
                            "Check the base URL and the API style.")
    out = []
    for item in items[:MAX_LISTED]:
        name = (item.get("id") or item.get("name")) if isinstance(item, dict) else item
        if isinstance(name, str) and name:
            out.append(neutralize(name.removeprefix("models/")))   # shown on a terminal
    return tuple(out)

