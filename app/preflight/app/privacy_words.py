"""The privacy figures in words, as both faces say them: the quasi-identifier warning, the
attack on the d_X noise, the document's ε ledger, the reconstruction attempt, and the
summary the send confirmation repeats (Qt-free)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from preflight.core.privacy.quasi import QuasiIdentifier, together


# --- quasi-identifiers --------------------------------------------------------------------
def quasi_warning(items: Sequence[QuasiIdentifier], show: int = 5) -> str | None:
    """The plain warning when several kinds of quasi-identifier remain in the payload
    (None when they do not: see :func:`preflight.core.privacy.quasi.together`)."""
    if not together(items):
        return None
    shown = ", ".join(q.value for q in items[:show])
    more = f" and {len(items) - show} more" if len(items) > show else ""
    return (f"{len(items)} quasi-identifiers remain: {shown}{more} — together they may "
            "point to one person.")


# --- privacy figures (the window's Privacy group and its send confirmation) ---------------
NO_DX_SENTENCE = ("No d_X noise: protected values are replaced on this machine; the rest "
                  "of the text is sent as written.")


def attack_sentence(dx: Mapping[str, Any] | None) -> str:
    """“An attacker who knows the method recovers about 44% of the noised words …” from a
    ``dx_attack`` result (:func:`preflight.app.privacy_report.dx_attack`)."""
    if dx is None:
        return NO_DX_SENTENCE
    pii = dx.get("success_pii")
    return (f"An attacker who knows the method recovers about {dx['success']:.0%} of the "
            f"noised words ({dx['identity']:.0%} came through unchanged"
            + (f"; {pii:.0%} of personal-data words" if pii is not None else "") + ").")


def ledger_sentence(ledger: Mapping[str, Any]) -> str:
    """The document's ε ledger in one short line (the window's Privacy group)."""
    n, this = int(ledger["prior_sends"]), float(ledger["this_send"])
    cap = f" (limit {ledger['limit']:.3g})" if ledger.get("limit") is not None else ""
    if not n:
        return f"ε spent on this document: {this:.3g} with this send, the first{cap}."
    return (f"ε spent on this document: {float(ledger['spent']):.3g} over {n} earlier "
            f"send(s) + {this:.3g} now = {float(ledger['total']):.3g}{cap}.")


def quasi_sentence(facts: Mapping[str, Any]) -> str:
    """The quasi-identifiers left as written, as a short list with the warning."""
    items = facts.get("quasi_identifiers") or []
    if not items:
        return "No quasi-identifier (date, place, organization, job…) left as written."
    shown = ", ".join(str(q["value"]) for q in items[:4])
    more = f" and {len(items) - 4} more" if len(items) > 4 else ""
    warning = facts.get("quasi_warning")
    return (f"{len(items)} quasi-identifier(s) left as written: {shown}{more}."
            + (" Together they may point to one person." if warning else ""))


def reidentified_sentence(recon: Mapping[str, Any]) -> str:
    """What the local model's reconstruction attack brought back."""
    total, got = int(recon["values_total"]), int(recon["values_recovered"])
    if total == 0:
        return "No protected value in the payload to re-identify."
    found = [v for v in recon.get("values", []) if v.get("recovered")]
    names = ", ".join(f"{v['value']} ({v['type']})" for v in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"The local model re-identified {got} of {total} protected value(s)"
            + (f": {names}{more}." if names else "."))


# --- the reconstruction attempt: its time and its steps ---------------------------------
_RECON_STEPS = {"loading": "Loading the local model…",
                "waiting": "Waiting for the local model (it may be finishing other work)…",
                "writing": "The local model is restoring the original"}


def reconstruct_idle_text(measured: Mapping[str, Any] | None) -> str:
    """The line beside "Try to re-identify" before a try: the typical time as the benchmark
    measured it (``measured``: :func:`preflight.app.privacy_report.reconstruct_timing`),
    or no figure at all when none was measured."""
    if not measured:
        return "Not tried yet. It runs on this computer; you can cancel it."
    seconds = float(measured["median_seconds"])
    took = f"{round(seconds)} s" if seconds < 90 else f"{round(seconds / 60)} min"
    return (f"Not tried yet: about {took} on a typical document (measured on "
            f"{measured['machine']}); you can cancel it.")


def reconstruct_progress_text(fraction: float, step: str) -> str:
    """One step of the attempt in words (``step``: "loading", "waiting" or "writing")."""
    words = _RECON_STEPS.get(step, "Re-identifying…")
    return f"{words} ({fraction:.0%} of its budget)…" if step == "writing" else words


def privacy_summary(facts: Mapping[str, Any] | None, dx: Mapping[str, Any] | None,
                    recon: Mapping[str, Any] | None = None,
                    ledger_text: str | None = None) -> list[str]:
    """One or two lines that repeat the Privacy group (the send confirmation shows them;
    ``ledger_text``: the ledger as of the send plan, instead of the facts' one)."""
    lines = [attack_sentence(dx)]
    if recon is not None:
        lines[0] += " " + reidentified_sentence(recon)
    ledger = ledger_text or (str(facts["epsilon_ledger"]["text"]) if facts else None)
    if facts is not None:
        n = len(facts.get("quasi_identifiers") or [])
        lines.append(f"{n} quasi-identifier(s) left as written; {ledger}.")
    elif ledger:
        lines.append(f"{ledger}.")
    return lines
