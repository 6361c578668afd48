"""The sanitized preview — what Send would carry: :class:`PayloadController`.

It turns the document's detections and the policy in force into the sanitized text at
the slider's ε with the document's secret seed: a d_X policy is prepared once per text,
policy and seed (lane "dx"), and an ε step only re-renders (bursts coalesce: the newest ε
runs next); other policies sanitize on the pool.

The window fails closed: :attr:`PayloadController.fresh_result` is the one notion of "a
complete sanitized result for the current text, detections, exclusions, policy, seed and
ε"; the sanitized pane, Copy sanitized / Send / Keep local, the banner and the indicators
derive from it alone. Any edit, pending detection, error, oversize text, unaccepted
degraded detector or policy change drops the result (:meth:`PayloadController.invalidate`)
with the reason the pane shows; only a preview computed after a successful detection of
the current text brings one back.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import QObject, Signal

from preflight.app.leave_summary import summarize_leaving
from preflight.app.presentation import PrivacyIndicators, error_text, privacy_indicators
from preflight.core.errors import Cancelled
from preflight.core.types import SanitizedText
from preflight.qt.document_ops import single_timer
from preflight.qt.qt_workers import Latest, OpContext, QtOp

TYPING_PREVIEW_MS = 150       # default delay of a requested preview refresh
SLIDER_DEBOUNCE_MS = 10       # slider: coalesce bursts, keep latency far below 100 ms


@dataclass(frozen=True)
class PreviewResult:
    sanitized: SanitizedText
    indicators: PrivacyIndicators
    epsilon: float | None
    generation: int
    vault: Any = None              # placeholder/pseudonym: how the answer is restored
    key: tuple = ()                # PayloadController.key() it was computed for


class PayloadController(QObject):
    """The sanitized preview and whether it is fresh (see the module doc)."""

    sig_preview_changed = Signal(object)          # PreviewResult, or None: dropped
    sig_preparing = Signal(bool)
    sig_prepared = Signal(object)                 # a new d_X preparation is in use
    sig_actions = Signal()                        # fresh_result may have changed
    sig_status = Signal(str)
    sig_error = Signal(str, str)

    def __init__(self, app: Any, doc: Any, policies: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.app, self.doc, self.policies = app, doc, policies
        self.epsilon: float | None = None
        self.seed = secrets.randbits(64)
        self.prepared: Any = None
        self.prepared_key: tuple | None = None
        self.result: PreviewResult | None = None
        self.blocked: str | None = None           # why there is no result (the pane says)
        self.previews_done = 0
        self._pending = False
        self._preview = Latest()
        self._timer = single_timer(self, TYPING_PREVIEW_MS, self._run)

    @property
    def uses_dx(self) -> bool:
        return self.policies.uses_dx

    # -- inputs ------------------------------------------------------------------------------
    def set_epsilon(self, epsilon: float) -> None:
        if self.epsilon is not None and abs(epsilon - self.epsilon) < 1e-12:
            return
        self.epsilon = epsilon
        self.sig_actions.emit()                # the shown result is for another ε now
        if self.uses_dx:
            self.request(delay_ms=SLIDER_DEBOUNCE_MS)

    def on_epsilon_range(self, lo: float, hi: float) -> None:
        """The range loaded or changed: ε stays if inside, else the policy's or the middle."""
        policy = self.policies.policy
        start = policy.epsilon if policy is not None else None
        if self.epsilon is None or not lo <= self.epsilon <= hi:
            self.epsilon = start if start and lo <= start <= hi else math.sqrt(lo * hi)

    def resample(self) -> None:
        """Fresh noise (d_X) or fresh surrogates (pseudonym)."""
        self.seed = secrets.randbits(64)
        self.sig_actions.emit()
        if self.uses_dx and self.prepared is not None:
            prepared, seed = self.prepared, self.seed
            self.sig_preparing.emit(True)
            QtOp(self, lambda ctx: prepared.resample(seed), self._on_resampled,
                 self._on_error, lane="dx").run()
        else:
            self.request(immediate=True)

    def _on_resampled(self, prepared: Any) -> None:
        self.sig_preparing.emit(False)
        self.prepared = prepared
        self.request(immediate=True)
        self.sig_prepared.emit(prepared)

    def new_document(self) -> None:
        """Another document: nothing prepared for the last one is reused (its placeholder
        numbering included)."""
        self.prepared, self.prepared_key = None, None

    def on_policy_changed(self) -> None:
        """Another policy applies: its preparation starts afresh."""
        self.prepared = None
        self.invalidate(self.gate() or "Applying the policy…")

    # -- freshness -----------------------------------------------------------------------
    def key(self) -> tuple:
        """What a result must have been computed for to count as fresh."""
        detection, exclusions = self.doc.key()
        return (detection, self.policies.generation, exclusions, self.seed,
                self.epsilon if self.uses_dx else None)

    @property
    def fresh_result(self) -> PreviewResult | None:
        """The :class:`PreviewResult`, if it is complete and current (the only thing that
        may leave this computer or reach the clipboard)."""
        res = self.result
        if res is None or self.blocked is not None or res.key != self.key():
            return None
        return res

    def invalidate(self, reason: str | None) -> None:
        """Drop the result (listeners drop what they derived from it); ``reason`` goes in
        the pane."""
        self._preview.next_generation()
        self._pending = False
        self.blocked = reason
        self.result = None
        self.sig_preparing.emit(False)
        self.sig_preview_changed.emit(None)
        self.sig_actions.emit()

    def gate(self) -> str | None:
        """Why no preview may be computed now (None: it may)."""
        reason = self.doc.gate()
        if reason is None and self.doc.text.strip() and self.policies.policy is None:
            return "Loading the policy…"
        return reason

    def on_void(self, reason: str | None) -> None:
        """The document changed: drop the result (``reason``, else the gate's)."""
        self.invalidate(reason if reason is not None else self.gate())

    # -- the preview -------------------------------------------------------------------------
    def request(self, immediate: bool = False, delay_ms: int | None = None) -> None:
        """Compute the preview now, or after ``delay_ms`` (default: the typing delay)."""
        if immediate:
            self._timer.stop()
            self._run()
        else:
            self._timer.start(delay_ms if delay_ms is not None else TYPING_PREVIEW_MS)

    def _run(self) -> None:
        if self._preview.busy and self.uses_dx and self.prepared is not None \
                and self.prepared_key == self._prep_key():
            # Slider step while a step is running: coalesce, the newest ε runs next.
            self._pending = True
            return
        self._pending = False
        text, spans, policy = self.doc.text, self.doc.effective_spans(), self.policies.policy
        all_spans = list(self.doc.spans)
        reason = self.gate()
        if reason is not None or not text.strip():
            if self.result is not None or reason != self.blocked:
                self.invalidate(reason)
            return
        self.blocked = None
        app, seed = self.app, self.seed
        memory = app.document_memory           # this document's, whenever the step runs
        if policy.uses_dx:
            if self.epsilon is None:
                return                     # the range is still loading
            eps, key, prepared = self.epsilon, self._prep_key(), self.prepared
            if prepared is None or self.prepared_key is None \
                    or self.prepared_key[0] != key[0]:
                self.sig_preparing.emit(True)

                def op(ctx: OpContext):
                    p = app.prepare(policy, text, spans, seed, memory)
                    ctx.check()
                    return p, _preview(p.at(eps), text, all_spans), p.vault
            elif self.prepared_key != key:
                self.sig_preparing.emit(True)

                def op(ctx: OpContext):
                    p = prepared.update(text, spans)
                    ctx.check()
                    return p, _preview(p.at(eps), text, all_spans), p.vault
            else:
                def op(ctx: OpContext):
                    return prepared, _preview(prepared.at(eps), text, all_spans), \
                        prepared.vault
            lane = "dx"
        else:
            key = None

            def op(ctx: OpContext):
                sanitized, vault = app.sanitize(policy, text, spans, seed, memory)
                return None, _preview(sanitized, text, all_spans), vault
            lane = "pool"
        holder: dict[str, int] = {}
        want = self.key()
        qop = QtOp(self, op, lambda r: self._on_preview(r, holder["g"], key, want),
                   lambda exc: self._on_preview_error(exc, holder["g"]), lane=lane)
        holder["g"] = self._preview.start(qop)

    def _prep_key(self) -> tuple:
        spans = tuple((s.start, s.end) for s in self.doc.effective_spans())
        return ((self.policies.generation, self.seed), self.doc.text, spans)

    def _on_preview_error(self, exc: BaseException, gen: int) -> None:
        self.sig_preparing.emit(False)
        if not self._preview.is_current(gen):
            return
        if not isinstance(exc, Cancelled):
            msg, hint = error_text(exc)
            self.invalidate(f"Sanitization failed, so nothing can be sent: {msg} "
                            f"{hint}".strip())
            self.sig_error.emit(msg, hint)
            return
        self._after_step()

    def _on_preview(self, res: tuple[Any, tuple[SanitizedText, PrivacyIndicators], Any],
                    gen: int, key: tuple | None, want: tuple) -> None:
        prepared, (sanitized, indicators), vault = res
        self.sig_preparing.emit(False)
        if want[:3] != self.key()[:3] or self.gate() is not None:
            return                 # another text, detection, policy or exclusion by now
        if prepared is not None and key is not None and key[0] == self._prep_key()[0]:
            new_prepared = prepared is not self.prepared
            self.prepared, self.prepared_key = prepared, key
            if new_prepared:
                self.sig_prepared.emit(prepared)
        eps = sanitized.epsilon
        self.result = PreviewResult(sanitized, indicators,
                                    float(eps) if eps is not None else None, gen, vault, want)
        self.blocked = None
        self.previews_done += 1
        self.sig_preview_changed.emit(self.result)
        self.sig_actions.emit()
        self._after_step()

    def _after_step(self) -> None:
        if self._pending:
            self._pending = False
            self._run()

    def _on_error(self, exc: BaseException) -> None:
        self.sig_preparing.emit(False)
        if not isinstance(exc, Cancelled):
            self.sig_error.emit(*error_text(exc))

    def cancel_all(self) -> None:
        self._preview.next_generation()
        self._timer.stop()


def _preview(sanitized: SanitizedText, text: str, spans: list
             ) -> tuple[SanitizedText, PrivacyIndicators]:
    # "left" has one source: the banner's summary, which holds the send's re-scan leaks
    left = len(summarize_leaving(text, sanitized, spans).leaving)
    return sanitized, replace(privacy_indicators(text, sanitized, spans), pii_left=left)
