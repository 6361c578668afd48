"""The document controller's freshness ops: the window fails closed.

:attr:`FreshnessOps.fresh_result` is the one notion of "a complete sanitized result for
the current text, detections, exclusions, policy, seed and ε"; the window derives the
sanitized pane, Copy sanitized / Send / Keep local and the indicators from it alone.
:meth:`FreshnessOps._invalidate` drops the result (and the predictions derived from it)
with the reason the pane shows; :meth:`FreshnessOps._gate` says why no preview may be
computed yet (oversize text, detector loading or degraded and not accepted, detection
pending). A mixin of :class:`preflight.qt.controllers.DocumentController`.
"""

from __future__ import annotations

from typing import Any

from preflight.app.presentation import error_text


class FreshnessOps:
    """Mixin: needs ``result``, ``blocked``, ``oversize``, ``detector_warnings``, the
    ``Latest`` groups... (see :class:`~preflight.qt.controllers.DocumentController`)."""

    def _on_detector_failed(self, exc: BaseException) -> None:
        """Not loaded: treated as degraded (nothing is shown until the user accepts)."""
        msg, hint = error_text(exc)
        self._on_detector_ready([f"The PII detector did not start: {msg} {hint}".strip()])

    def accept_degraded(self) -> None:
        """The user accepts working with the degraded detector (Send still asks again)."""
        self.degraded_accepted = True
        self._request_preview(immediate=True)

    # -- freshness -----------------------------------------------------------------------
    def _key(self) -> tuple:
        """What a result must have been computed for to count as fresh."""
        return (self._detect.generation, self._policy_gen, self._excl_gen, self.seed,
                self.epsilon if self.uses_dx else None)

    @property
    def fresh_result(self) -> Any:
        """The :class:`PreviewResult`, if it is complete and current (the only thing that
        may leave this computer or reach the clipboard)."""
        res = self.result
        if res is None or self.blocked is not None or res.key != self._key():
            return None
        return res

    def _invalidate(self, reason: str | None) -> None:
        """Drop the result (and what was derived from it); ``reason`` goes in the pane."""
        self._preview.next_generation()
        self._pending_preview = False
        for group in (self._fast, self._refine, self._estimate):
            group.next_generation()
        self.blocked = reason
        self.result = None
        self.prediction = None
        self.sig_preparing.emit(False)
        self.sig_refining.emit(False)
        self.sig_preview_changed.emit(None)
        self.sig_actions.emit()

    def _gate(self) -> str | None:
        """Why no preview may be computed now (None: it may)."""
        if self.oversize:
            return self.oversize
        if not self.text.strip():
            return None
        if self.detector_warnings is None:
            return "Loading the PII detector…"
        if self.detector_warnings and not self.degraded_accepted:
            return ("The PII detector runs degraded (" + " ".join(self.detector_warnings)
                    + ") Accept this in the warning above to see the sanitized text.")
        if self._detected_gen != self._detect.generation:
            return "Checking the text for personal data…"
        if self.policy is None:
            return "Loading the policy…"
        return None
