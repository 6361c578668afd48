"""Wiring of the company-hosted assessor (part of the composition root, see services.py).

The endpoint comes from the company policy's ``[assessor]`` table, else from the settings'
``assessor_endpoint`` (the policy wins). The assessor then asks the server for everything
it computes on the sanitized text (D, its perplexity, the grammar repair); the calls on
the *original* (C and its perplexity) go to the server only when the *company policy*
marks it ``internal`` (over https, or on this computer: checked when the policy is read)
— otherwise they stay on this computer, and the place says so. An endpoint from the
user's settings is never internal, is used only at an address the company policy allows
(:meth:`OrgPolicy.provider_allowed`), and is named as the user's, never the company's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from preflight.core.assessor_endpoint import AssessorEndpoint, AssessorPlace

ORIGINAL_STAYS = ("The original document stayed on this computer (only an assessor your "
                  "organization's policy marks internal may receive it): C and its "
                  "perplexity were computed here.")


@dataclass(frozen=True)
class AssessorModels:
    """The assessor's models: ``slm`` for the sanitized text, ``original`` for the
    original (None: ``slm``), the FallbackSLM in use (None: in-process only) and the
    endpoint it reaches."""

    slm: Any
    original: Any = None
    company: Any = None
    endpoint: AssessorEndpoint | None = None

    def place(self) -> AssessorPlace:
        if self.company is None:
            return AssessorPlace()
        place = self.company.place()
        if self.endpoint is None or self.endpoint.source == "company policy":
            return place
        # the user's own server: never reported as the company's
        return replace(place, owner=self.endpoint.owner,
                       where="server" if place.where == "company" else place.where)


def assessor_endpoint(org: Any, settings: Any) -> AssessorEndpoint | None:
    """The company policy's endpoint, else the settings' when the company allows its
    address (None: in-process only; :func:`settings_endpoint_problem` says why)."""
    if org.assessor_endpoint is not None:
        return org.assessor_endpoint
    own = settings.assessor_endpoint
    if own is None or settings_endpoint_problem(org, settings) is not None:
        return None
    return AssessorEndpoint(own.url.strip(), own.model.strip(), False, "settings")


def settings_endpoint_problem(org: Any, settings: Any) -> str | None:
    """Why the assessor server named in the user's settings is not used (None: it is, or
    there is none)."""
    own = settings.assessor_endpoint
    if own is None or org.assessor_endpoint is not None:
        return None
    if org.broken:
        return (f"The assessor server in your settings ({own.url}) is not used while your "
                "organization's policy file is invalid.")
    if not org.provider_allowed(own.url):
        return (f"The assessor server in your settings ({own.url}) is not used: your "
                "organization's policy does not allow that address.")
    return None


def build_assessor_models(services: Any) -> AssessorModels:
    """The models for :meth:`Services.assessor` (the local SLM is loaded only if used)."""
    from preflight.app.services import Deferred

    local = Deferred(services.slm, "local SLM")
    endpoint = assessor_endpoint(services.org_policy(), services.settings)
    if endpoint is None:
        return AssessorModels(local)
    from preflight.runtime.remote_fallback import FallbackSLM
    from preflight.runtime.remote_slm import RemoteSLM, bos_text

    role = services.assessor_slm_role()

    def prefix() -> str:
        return bos_text(services.models.path(role))

    remote = RemoteSLM(endpoint.url, endpoint.model, score_prefix=prefix,
                       system_prompt=services.models.spec(role).system_prompt or None)
    company = FallbackSLM(remote, local, endpoint.url,
                          note="" if endpoint.internal else ORIGINAL_STAYS)
    return AssessorModels(company, None if endpoint.internal else local, company, endpoint)
