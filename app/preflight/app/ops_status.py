"""What a company deployment is running on, for the faces to show (part of the composition
root, see services.py): the utility model in use, the central audit store's sync state, and
the "Test" of a company-hosted assessor.

A degraded state is never silent: a company utility model that was refused (wrong sha256,
unreachable) and a central store that cannot be reached are each one line the CLI prints
and the window shows, with the reason and what to do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from preflight.core.assessor_endpoint import parse_endpoint
from preflight.core.config import ProviderSettings
from preflight.core.errors import ConfigError
from preflight.core.org_policy_file import url_problem

ASSESSOR_PROBE_NAME = "the company assessor"


@dataclass(frozen=True)
class UtilityModelStatus:
    """The utility model the predictions use: ``source`` is "shipped", "own" (the refit on
    the user's sends), "company", or "refused" (the company's was refused: ``problem``)."""

    source: str
    where: str = ""                  # the model file (the company's path or URL)
    problem: str = ""                # why the company model was refused
    fallback: str = "the shipped model"

    @property
    def line(self) -> str:
        if self.source == "company":
            return f"Utility model: company model {self.where}"
        if self.source == "own":
            return f"Utility model: fitted to your own sends ({self.where})"
        if self.source == "refused":
            return (f"Utility model: company model refused — {self.problem} Using "
                    f"{self.fallback}; tell IT.")
        return "Utility model: shipped with Preflight"

    @property
    def warning(self) -> str | None:
        """The line when the state is degraded (the company's model was refused)."""
        return self.line if self.source == "refused" else None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "where": self.where or None,
                "problem": self.problem or None, "line": self.line}


def utility_model_status(services: Any, provider: str | None = None) -> UtilityModelStatus:
    """The status of ``provider``'s utility model (loads the company's model if the policy
    names one: it may be fetched, so call it off the GUI thread)."""
    from preflight.core.utility.predictor import shipped_bundle_path

    used = services.predictor(provider)
    spec = services.org_policy().utility_model
    company = services.company_predictor(services.provider_key(provider))
    path = str(getattr(used, "path", "") or "")
    own = bool(path) and path != str(shipped_bundle_path(services.assessor_slm_role()))
    if company is not None and used is company:
        return UtilityModelStatus("company", spec.path_or_url)
    problem = services.company_model_problem
    if spec is not None and problem:
        return UtilityModelStatus("refused", spec.path_or_url, problem,
                                  "your own refit" if own else "the shipped model")
    return UtilityModelStatus("own", path) if own else UtilityModelStatus("shipped")


@dataclass(frozen=True)
class CentralAuditStatus:
    """The central audit store's sync as it stands: ``waiting`` records changed locally
    and not yet confirmed by the store; ``error`` the last failure, since
    ``failing_since`` (epoch seconds); ``checked`` False before the first attempt ends."""

    where: str
    waiting: int
    checked: bool
    error: str | None = None
    failing_since: float | None = None

    @property
    def ok(self) -> bool:
        return self.checked and self.error is None

    @property
    def line(self) -> str:
        head = f"Central audit store ({self.where}): "
        waiting = f"{self.waiting} record(s) waiting"
        if self.error is not None:
            since = (time.strftime(" since %H:%M", time.localtime(self.failing_since))
                     if self.failing_since is not None else "")
            return (f"{head}{waiting} — store unreachable{since}. They are sent when it "
                    "answers again; tell IT if this lasts.")
        if not self.checked:
            return f"{head}checking… ({waiting})"
        return head + (f"{waiting} to be sent." if self.waiting else "in sync.")

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "waiting": self.waiting, "checked": self.checked,
                "error": self.error, "failing_since": self.failing_since,
                "line": self.line}


def central_audit_status(services: Any) -> CentralAuditStatus | None:
    """Start the background sync job if the company policy names a central store (it
    sends what earlier sessions left queued), and say how it stands; None: no store."""
    central = services.org_policy().central_audit
    job = services.audit_sync() if central is not None else None
    if job is None:
        return None
    audit = services.audit()
    waiting = len({e.record_id for e in audit.events(audit.synced_seq())})
    return CentralAuditStatus(central.where, waiting,
                              job.last is not None or job.last_error is not None,
                              job.last_error, job.failing_since)


def validate_endpoint(url: str, model: str, internal: bool) -> None:
    """Refuse an assessor endpoint the settings file would refuse (the config's URL rule
    and the policy's ``[assessor]`` checks); a ConfigError saying what to type."""
    def bad(path: tuple[str, ...], problem: str) -> ConfigError:
        return ConfigError(f"The company assessor: {problem.replace('assessor_endpoint.', '')}.",
                           "Fix it in Settings → Local models, or clear the URL to assess "
                           "on this computer only.")

    parse_endpoint({"url": url, "model": model, "internal": internal}, bad, url_problem,
                   here=("assessor_endpoint",))


def check_assessor(url: str, model: str) -> Any:
    """"Test": GET ``<url>/v1/models`` of the company assessor (no key, never any
    document text); a report with ``.message``, or a PreflightError saying what failed."""
    from preflight.core.send.probe import check_connection

    validate_endpoint(url, model, False)
    api = url.strip().rstrip("/")
    api = api if api.endswith("/v1") else api + "/v1"
    # The assessor is reached as RemoteSLM reaches it: plain http is allowed (an internal
    # GPU box); the probe only lists the server's models.
    probe = ProviderSettings(name=ASSESSOR_PROBE_NAME, base_url=api, model=model.strip(),
                             allow_insecure_http=True)
    return check_connection(probe, None)
