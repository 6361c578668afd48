"""The privacy figures of one sanitized document, as both faces report them.

:func:`privacy_report` is the one place that gathers them (``preflight privacy`` prints
it, ``preflight assess --json`` puts it under ``"privacy"``):

- the quasi-identifiers left in the payload, with the plain warning when several remain
  together (:mod:`preflight.core.privacy.quasi`);
- the document's ε ledger: what its earlier sends spent and what this one would add
  (:mod:`preflight.core.privacy.ledger`);
- the contextual reconstruction attack with the local SLM (seconds: only when asked,
  :mod:`preflight.core.privacy.reconstruct`);
- ``dx_attack``: the optimal (Bayesian) attack on the d_X noise of this payload
  (:mod:`preflight.core.privacy.dx_attack`), with its curve over ε; ``attack_success``
  repeats its success share (0–1) at the top level (None without d_X).

The window asks for the parts separately, each on its own lane (see
:class:`preflight.app.window_doorway.WindowDoorway`): :func:`privacy_facts` for every new payload,
:func:`dx_attack` when the slider settles, :func:`reconstruction` on demand.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Sequence

from preflight.app.presentation import quasi_warning
from preflight.core.errors import Cancelled, PreflightError
from preflight.core.paths import resource_path
from preflight.core.ports import Progress
from preflight.core.privacy.ledger import ledger_for, send_epsilon
from preflight.core.privacy.quasi import quasi_identifiers_left
from preflight.core.privacy.reconstruct import ReconstructionAttack
from preflight.core.send.fingerprint import Fingerprint
from preflight.core.types import SanitizedText, Span

#: Where the benchmark writes the attack's measured time (under the shipped resources/).
TIMING_RESOURCE = ("bench", "reconstruct.json")


def privacy_report(services: Any, original: str, sanitized: SanitizedText,
                   spans: Sequence[Span], *, attack: bool = False,
                   cancel: threading.Event | None = None,
                   prepared: Any = None) -> dict[str, Any]:
    """The privacy figures of sending ``sanitized`` (a JSON-ready dict).

    ``prepared``: the preparation ``sanitized`` came from (``mechanism.prepare(...)``;
    needed for the attack on d_X noise, which reads its token facts and noise draw)."""
    out: dict[str, Any] = {**privacy_facts(services, original, sanitized, spans),
                           "reconstruction": None}
    if attack:
        out["reconstruction"] = reconstruction(services, original, sanitized, spans, cancel)
    else:
        out["notes"] = ["The reconstruction attack did not run (it takes the local model a "
                        "few seconds; `preflight privacy` runs it)."]
    out["dx_attack"] = _dx_attack(services, sanitized, spans, prepared, cancel, out)
    out["attack_success"] = None if out["dx_attack"] is None else out["dx_attack"]["success"]
    return out


def privacy_facts(services: Any, original: str, sanitized: SanitizedText,
                  spans: Sequence[Span]) -> dict[str, Any]:
    """The cheap part (milliseconds): the quasi-identifiers left and the document's ε
    ledger. The window recomputes it for every new payload."""
    quasi = quasi_identifiers_left(original, sanitized, spans)
    priors = services.audit().prior_sends(Fingerprint.of(original))
    ledger = ledger_for(priors, send_epsilon(sanitized),
                        services.org_policy().max_document_epsilon)
    return {"quasi_identifiers": [q.to_json() for q in quasi],
            "quasi_warning": quasi_warning(quasi),
            "epsilon_ledger": {**ledger.to_json(), "text": ledger.describe()}}


def reconstruction(services: Any, original: str, sanitized: SanitizedText,
                   spans: Sequence[Span], cancel: threading.Event | None,
                   progress: Progress | None = None) -> dict[str, Any]:
    """The contextual reconstruction attack with the local SLM (its typical time:
    :func:`preflight.app.presentation.reconstruct_time`). ``progress`` hears each step
    ("loading", "waiting", "writing"); ``cancel`` stops it (raises Cancelled)."""
    if progress is not None:
        progress(0.0, "loading")
    slm = services.slm()
    if cancel is not None and cancel.is_set():
        raise Cancelled()
    return ReconstructionAttack(slm).run(original, sanitized, spans, cancel=cancel,
                                         progress=progress).to_json()


def reconstruct_timing() -> dict[str, Any] | None:
    """The reconstruction attack's typical time as ``preflight_eval.bench_privacy
    --reconstruct`` measured it (``resources/bench/reconstruct.json``: median_seconds,
    machine, words), or None when it was not measured (the window then names no time)."""
    try:
        data = json.loads(resource_path(*TIMING_RESOURCE).read_text(encoding="utf-8"))
        float(data["median_seconds"]), str(data["machine"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data


def dx_attack(services: Any, prepared: Any, epsilon: float, spans: Sequence[Span], *,
              curve: bool = True, cancel: threading.Event | None = None) -> dict[str, Any]:
    """The optimal attack on the d_X noise of ``prepared`` at ``epsilon``: with ``curve``
    over the default ε grid (the current ε included), else at ``epsilon`` alone (the
    window's slider steps; the attack memoizes its Monte Carlo paths)."""
    grid = None if curve else (float(epsilon),)
    return services.dx_attack().run(prepared.dx_part, epsilon=float(epsilon), grid=grid,
                                    spans=spans, cancel=cancel).to_json()


def _dx_attack(services: Any, sanitized: SanitizedText, spans: Sequence[Span],
               prepared: Any, cancel: threading.Event | None,
               out: dict[str, Any]) -> dict[str, Any] | None:
    eps = send_epsilon(sanitized)
    if eps == 0:
        return None          # no d_X noise in this payload: nothing for that attack
    if prepared is None:
        out.setdefault("notes", []).append(
            "The attack on the d_X noise needs the document's preparation; it did not run.")
        return None
    try:
        return dx_attack(services, prepared, eps, spans, cancel=cancel)
    except PreflightError as err:    # e.g. the public-corpus prior is missing
        out.setdefault("notes", []).append(
            f"The attack on the d_X noise did not run: {err.message} {err.hint}".strip())
        return None
