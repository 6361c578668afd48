"""The privacy figures of one sanitized document, as both faces report them.

:func:`privacy_report` is the one place that gathers them (``preflight privacy`` prints
it, ``preflight assess --json`` puts it under ``"privacy"``):

- the quasi-identifiers left in the payload, with the plain warning when several remain
  together (:mod:`preflight.core.privacy.quasi`);
- the document's ε ledger: what its earlier sends spent and what this one would add
  (:mod:`preflight.core.privacy.ledger`);
- the contextual reconstruction attack with the local SLM (seconds: only when asked,
  :mod:`preflight.core.privacy.reconstruct`);
- ``dx_attack``: the optimal attack on d_X noise, when the services provide it.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from preflight.app.presentation import quasi_warning
from preflight.core.privacy.ledger import ledger_for, send_epsilon
from preflight.core.privacy.quasi import quasi_identifiers_left
from preflight.core.privacy.reconstruct import ReconstructionAttack
from preflight.core.send.fingerprint import Fingerprint
from preflight.core.types import SanitizedText, Span


def privacy_report(services: Any, original: str, sanitized: SanitizedText,
                   spans: Sequence[Span], *, attack: bool = False,
                   cancel: threading.Event | None = None) -> dict[str, Any]:
    """The privacy figures of sending ``sanitized`` (a JSON-ready dict)."""
    quasi = quasi_identifiers_left(original, sanitized, spans)
    priors = services.audit().prior_sends(Fingerprint.of(original))
    ledger = ledger_for(priors, send_epsilon(sanitized),
                        services.org_policy().max_document_epsilon)
    out: dict[str, Any] = {
        "quasi_identifiers": [q.to_json() for q in quasi],
        "quasi_warning": quasi_warning(quasi),
        "epsilon_ledger": {**ledger.to_json(), "text": ledger.describe()},
        "reconstruction": None,
    }
    if attack:
        out["reconstruction"] = ReconstructionAttack(services.slm()).run(
            original, sanitized, spans, cancel=cancel).to_json()
    else:
        out["notes"] = ["The reconstruction attack did not run (it takes the local model a "
                        "few seconds; `preflight privacy` runs it)."]
    out["dx_attack"] = _dx_attack(services, original, sanitized, spans, out)
    return out


def _dx_attack(services: Any, original: str, sanitized: SanitizedText,
               spans: Sequence[Span], out: dict[str, Any]) -> Any:
    if send_epsilon(sanitized) == 0:
        return None          # no d_X noise in this payload: nothing for that attack
    run = getattr(services, "dx_attack", None)
    if run is None:
        out.setdefault("notes", []).append(
            "The optimal attack on the d_X noise is not available in this build.")
        return None
    result = run(original, sanitized, spans)
    return result.to_json() if hasattr(result, "to_json") else result

