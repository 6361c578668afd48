"""A company-hosted assessor: the OpenAI-compatible server the assessor's local-model role
may run on instead of the in-process model, and where an assessment ran.

The company policy's ``[assessor]`` table (or, without one, the settings'
``assessor_endpoint``) names it::

    [assessor]
    url = "http://gpu-box.corp.example:8000/v1"   # llama.cpp's server or vLLM
    model = "SmolLM2-135M-Instruct"                # the id the server knows the model by
    internal = true                                # may receive the original document

Features C and D, the perplexities and the grammar repair then come from that server.
The original document goes only to an endpoint the *company policy* marks ``internal``,
and only over https (or to this computer): the user's settings cannot mark one, so with
the user's endpoint the calls on the original stay on this computer (see
docs/DEPLOYMENT.md "Company-hosted assessor").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ENDPOINT_KEYS = ("url", "model", "internal")
URL_RULE = "must be an http(s) URL with a host, e.g. http://gpu-box:8000/v1"


@dataclass(frozen=True)
class AssessorEndpoint:
    """Where the company assessor runs; ``source`` says who named it (for messages)."""

    url: str
    model: str = ""
    internal: bool = False
    source: str = "settings"

    @property
    def owner(self) -> str:
        """Who runs it, for the place's label."""
        return "company assessor" if self.source == "company policy" else \
            "assessor server in your settings"

    @property
    def base_url(self) -> str:
        """The URL without a trailing "/v1" (the client adds the API paths)."""
        url = self.url.strip().rstrip("/")
        return url.removesuffix("/v1")

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "model": self.model, "internal": self.internal,
                "source": self.source}


def parse_endpoint(table: Mapping[str, Any], bad: Callable[[tuple[str, ...], str], Exception],
                   url_problem: Callable[[str], str | None],
                   here: tuple[str, ...] = ("assessor",)) -> AssessorEndpoint:
    """Validate an ``[assessor]`` table; ``bad(path, problem)`` builds the error to raise."""
    name = ".".join(here)
    for key in table:
        if key not in ENDPOINT_KEYS:
            raise bad(here + (key,), f"'{name}.{key}' is not a company policy key (known in "
                      f"{name}: {', '.join(ENDPOINT_KEYS)})")
    url = table.get("url")
    problem = url_problem(url) if isinstance(url, str) else "must be an http(s) URL"
    if problem:
        raise bad(here + ("url",), f"'{name}.url' {problem}")
    model = table.get("model", "")
    if not isinstance(model, str) or len(model) > 200:
        raise bad(here + ("model",), f"'{name}.model' must be the model's id on the server")
    internal = table.get("internal", False)
    if not isinstance(internal, bool):
        raise bad(here + ("internal",), f"'{name}.internal' must be true or false")
    if internal and cleartext(url):
        raise bad(here + ("internal",), f"'{name}.internal' needs an https URL (or one on "
                  "this computer): the original document would cross the network "
                  "unencrypted")
    return AssessorEndpoint(url.strip(), model.strip(), internal, "company policy")


def cleartext(url: str) -> bool:
    """Whether ``url`` is plain http to another machine."""
    from urllib.parse import urlsplit

    from preflight.core.send.transport import is_loopback_host   # it imports the config

    parts = urlsplit(url.strip())
    return parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname or "")


@dataclass(frozen=True)
class AssessorPlace:
    """Where an assessment ran: ``where`` is "company" (the company policy's assessor),
    "server" (one named in the user's settings) or "local"; ``fallback_reason`` says why
    the server named in ``endpoint`` was not used; ``note`` what stayed on this computer
    on purpose (the original, for an endpoint not marked internal); ``owner`` names whose
    server it is in the label."""

    where: str = "local"
    endpoint: str | None = None
    fallback_reason: str | None = None
    note: str = ""
    owner: str = "company assessor"     # or "assessor server in your settings"

    @property
    def label(self) -> str:
        """One line for the window and the CLI."""
        if self.endpoint is None:
            return "Assessment ran on this computer."
        if self.where == "local":
            why = self.fallback_reason or "unreachable"
            return f"Assessment ran on this computer ({self.owner} at {self.endpoint} " \
                   f"{why})."
        return f"Assessment ran on the {self.owner} at {self.endpoint}." + \
            (f" {self.note}" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "endpoint": self.endpoint, "owner": self.owner,
                "fallback_reason": self.fallback_reason, "note": self.note or None}
