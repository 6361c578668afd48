"""Wiring of the company-hosted assessor (part of the composition root, see services.py).

The endpoint comes from the company policy's ``[assessor]`` table, else from the settings'
``assessor_endpoint`` (the policy wins). The assessor then asks the server for everything
it computes on the sanitized text (D, its perplexity, the grammar repair); the calls on
the *original* (C and its perplexity) go to the server only when the endpoint is marked
``internal`` — otherwise they stay on this computer, and the place says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preflight.core.assessor_endpoint import AssessorEndpoint, AssessorPlace

ORIGINAL_STAYS = ("The original document stayed on this computer (the company assessor is "
                  "not marked internal): C and its perplexity were computed here.")


@dataclass(frozen=True)
class AssessorModels:
    """The assessor's models: ``slm`` for the sanitized text, ``original`` for the
    original (None: ``slm``), and the FallbackSLM in use (None: in-process only)."""

    slm: Any
    original: Any = None
    company: Any = None

    def place(self) -> AssessorPlace:
        return self.company.place() if self.company is not None else AssessorPlace()


def assessor_endpoint(org: Any, settings: Any) -> AssessorEndpoint | None:
    """The company policy's endpoint, else the settings' (None: in-process only)."""
    if org.assessor_endpoint is not None:
        return org.assessor_endpoint
    own = settings.assessor_endpoint
    if own is None:
        return None
    return AssessorEndpoint(own.url.strip(), own.model.strip(), own.internal, "settings")


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
    return AssessorModels(company, None if endpoint.internal else local, company)
