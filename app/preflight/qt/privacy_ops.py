"""The privacy figures behind the assessment panel's Privacy group and the chart's attack
curve (a controller: the views only render what it emits).

It follows :class:`~preflight.qt.payload_ops.PayloadController`'s result and asks the
application for three things, each a :class:`~preflight.qt.qt_workers.Latest` group on its
own lane so none blocks the slider:

- the cheap facts (quasi-identifiers left, the document's ε ledger) for every new payload,
  debounced, on "pool";
- the optimal attack on the d_X noise on the "attack" lane: its curve over ε once per
  preparation (document + policy + seed), then the current ε alone when the slider
  settles; a slider move cancels the stale run at once;
- the reconstruction attack with the local SLM on "slm", only when asked ("Try to
  re-identify"), with its progress per step; Cancel or a new payload stops it (the cancel
  event reaches the model's generation loop) and drops its result.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from preflight.app.presentation import error_text, privacy_summary, \
    reconstruct_progress_text
from preflight.core.errors import Cancelled
from preflight.qt.qt_workers import Latest, OpContext, QtOp

FACTS_DEBOUNCE_MS = 200       # the ledger and quasi-identifiers: after a burst of steps
ATTACK_SETTLE_MS = 400        # the attack at the current ε: once the slider rests
ATTACK_LANE = "attack"


class PrivacyController(QObject):
    """Privacy figures of the document controller's current payload (see module doc)."""

    sig_facts = Signal(object)              # dict: quasi_identifiers, epsilon_ledger, …
    sig_attack = Signal(object)             # dx_attack dict at the current ε, or None
    sig_attack_curve = Signal(object)       # [(ε, success)] of this preparation ([]: none)
    sig_attack_busy = Signal(bool)
    sig_attack_failed = Signal(str)
    sig_reconstruction = Signal(object)     # reconstruction dict, or None (cleared)
    sig_reconstructing = Signal(bool)
    sig_reconstruct_failed = Signal(str)
    sig_reconstruct_progress = Signal(str)  # the attempt's current step, in words
    sig_status = Signal(str)

    def __init__(self, app: Any, doc: Any, payload: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app, self.doc, self.payload = app, doc, payload
        self.facts: dict[str, Any] | None = None
        self.attack: dict[str, Any] | None = None
        self.reconstruction: dict[str, Any] | None = None
        self.uses_dx = False
        self._payload: str | None = None
        self._curve_of: Any = None          # the preparation the attack curve is for
        self._facts = Latest()
        self._curve = Latest()
        self._point = Latest()
        self._recon = Latest()
        self._facts_timer = _timer(self, FACTS_DEBOUNCE_MS, self._run_facts)
        self._settle_timer = _timer(self, ATTACK_SETTLE_MS, self._run_point)

    # -- inputs ----------------------------------------------------------------------------
    def on_payload(self, res: Any) -> None:
        """A new payload (or none): facts again, the attack where d_X noise is."""
        text = None if res is None else res.sanitized.text
        if text != self._payload:
            self._payload = text
            self._drop_reconstruction()
        if res is None:
            self._facts_timer.stop()
            self._stop_attack()
            self.facts = None
            self.sig_facts.emit(None)
            return
        self._facts_timer.start()
        self.uses_dx = res.epsilon is not None and self.payload.prepared is not None
        if not self.uses_dx:
            self._stop_attack()
            self._curve_of = None
            self.sig_attack_curve.emit([])
            self.sig_attack.emit(None)
            return
        if self.payload.prepared is not self._curve_of:
            self._run_curve(res.epsilon)
        elif self.attack is None or not same_epsilon(self.attack["epsilon"], res.epsilon):
            # the slider moved: the running point is stale; run again once it rests
            self._point.next_generation()
            self._settle_timer.start()
            self.sig_attack_busy.emit(True)

    def _stop_attack(self) -> None:
        self._settle_timer.stop()
        for group in (self._curve, self._point):
            group.next_generation()
        self.attack = None
        self.sig_attack_busy.emit(False)

    # -- the cheap facts ---------------------------------------------------------------------
    def _run_facts(self) -> None:
        res = self.payload.result
        if res is None:
            return
        text, spans, app = self.doc.text, list(self.doc.spans), self.app
        self._facts.start(QtOp(
            self, lambda ctx: app.privacy_facts(text, res.sanitized, spans),
            self._on_facts, self._on_facts_error, lane="pool"))

    def _on_facts(self, facts: dict[str, Any]) -> None:
        self.facts = facts
        self.sig_facts.emit(facts)

    def _on_facts_error(self, exc: BaseException) -> None:
        if not isinstance(exc, Cancelled):
            self.sig_status.emit(" ".join(error_text(exc)).strip())

    # -- the attack on the d_X noise -------------------------------------------------------
    def _run_curve(self, epsilon: float) -> None:
        prepared, spans, app = self.payload.prepared, list(self.doc.spans), self.app
        self._curve_of = prepared
        self._settle_timer.stop()
        self._point.next_generation()
        self.attack = None
        self.sig_attack_busy.emit(True)
        self.sig_attack_curve.emit([])

        def op(ctx: OpContext) -> dict[str, Any]:
            return app.dx_attack(prepared, epsilon, spans, True, ctx.cancel)

        self._curve.start(QtOp(self, op, lambda r: self._on_curve(r, prepared),
                               self._on_attack_error, lane=ATTACK_LANE))

    def _on_curve(self, result: dict[str, Any], prepared: Any) -> None:
        if prepared is not self.payload.prepared:
            return
        self.sig_attack_curve.emit([(p["epsilon"], p["success"]) for p in result["curve"]])
        self._on_point(result)

    def _run_point(self) -> None:
        res, prepared = self.payload.result, self.payload.prepared
        if res is None or res.epsilon is None or prepared is None:
            return
        eps, spans, app = res.epsilon, list(self.doc.spans), self.app

        def op(ctx: OpContext) -> dict[str, Any]:
            return app.dx_attack(prepared, eps, spans, False, ctx.cancel)

        self._point.start(QtOp(self, op, self._on_point, self._on_attack_error,
                               lane=ATTACK_LANE))

    def _on_point(self, result: dict[str, Any]) -> None:
        res = self.payload.result
        if res is None or res.epsilon is None or not same_epsilon(result["epsilon"],
                                                                   res.epsilon):
            return                 # the slider moved on: the settled run follows
        self.attack = result
        self.sig_attack_busy.emit(False)
        self.sig_attack.emit(result)

    def _on_attack_error(self, exc: BaseException) -> None:
        if isinstance(exc, Cancelled):
            return
        self.sig_attack_busy.emit(False)
        self.sig_attack_failed.emit(" ".join(error_text(exc)).strip())

    # -- the reconstruction attack (on demand) ---------------------------------------------
    def reconstruct(self) -> None:
        """“Try to re-identify”: the local model tries to restore the payload."""
        res = self.payload.result
        if res is None:
            return
        text, spans, app = self.doc.text, list(self.doc.spans), self.app
        self.sig_reconstructing.emit(True)
        # queued behind other work of the local model until its lane is free
        self.sig_reconstruct_progress.emit(reconstruct_progress_text(0.0, "waiting"))
        self._recon.start(QtOp(
            self, lambda ctx: app.reconstruct(text, res.sanitized, spans, ctx.cancel,
                                              ctx.progress),
            self._on_reconstruction, self._on_recon_error, lane="slm",
            progress=self._on_recon_progress))

    def cancel_reconstruction(self) -> None:
        """Cancel: the running attempt stops (its cancel event is set) and says so."""
        if not self._recon.busy:
            return
        self._recon.next_generation()
        self.sig_reconstructing.emit(False)
        self.sig_reconstruct_progress.emit("Stopped; nothing was measured.")

    def _on_recon_progress(self, fraction: float, step: str) -> None:
        if self._recon.busy:
            self.sig_reconstruct_progress.emit(reconstruct_progress_text(fraction, step))

    def _on_reconstruction(self, result: dict[str, Any]) -> None:
        self.reconstruction = result
        self.sig_reconstructing.emit(False)
        self.sig_reconstruction.emit(result)

    def _on_recon_error(self, exc: BaseException) -> None:
        self.sig_reconstructing.emit(False)
        if not isinstance(exc, Cancelled):
            self.sig_reconstruct_failed.emit(" ".join(error_text(exc)).strip())

    def _drop_reconstruction(self) -> None:
        if self._recon.busy:
            self.sig_reconstructing.emit(False)
        self._recon.next_generation()
        if self.reconstruction is not None:
            self.reconstruction = None
            self.sig_reconstruction.emit(None)

    # -- outputs -----------------------------------------------------------------------------
    def summary(self, ledger_text: str | None = None) -> list[str]:
        """The Privacy group in one or two lines (the send confirmation repeats them, with
        the ledger as of its plan)."""
        attack = self.attack if self.uses_dx else None
        lines = privacy_summary(self.facts, attack, self.reconstruction, ledger_text)
        if self.uses_dx and attack is None:
            lines[0] = "The attack on the d_X noise is still being measured."
        return lines

    def cancel_all(self) -> None:
        self._facts_timer.stop()
        self._settle_timer.stop()
        for group in (self._facts, self._curve, self._point, self._recon):
            group.next_generation()


def same_epsilon(measured: float, epsilon: float) -> bool:
    """Whether an attack measured at ``measured`` is for ``epsilon``: the attack rounds
    the ε it reports (its memo key), so an exact comparison would re-run it for nothing."""
    return abs(measured - epsilon) <= 1e-6 * max(1.0, abs(epsilon))


def _timer(parent: QObject, ms: int, slot) -> QTimer:
    t = QTimer(parent)
    t.setSingleShot(True)
    t.setInterval(ms)
    t.timeout.connect(slot)
    return t
