"""The window's single doorway into the core (Qt-free).

Controllers call these methods from background ops; every method is a thin adapter over
the core's own API (detection, mechanisms, utility, send, models) so the window holds no
business logic. Heavy objects are built lazily, on first use, inside background ops —
never at window start. Tests replace the whole object with a fake of the same shape.

Threading: each method is called from one lane only (see the controllers): detection on
"detect", d_X on "dx", anything touching the local SLM on "slm". That is what the
non-thread-safe objects behind them need.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from preflight.core.config import Settings, load_settings, save_settings
from preflight.core.errors import ConfigError, ModelUnavailableError, PreflightError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.tasks import SUMMARIZE as SUMMARIZE_TASK
from preflight.core.tasks import Task
from preflight.core.types import SanitizedText, Span

log = logging.getLogger(__name__)

OPERATOR_ORDER = ("placeholder", "pseudonym", "mask", "redact", "generalize")


@dataclass(frozen=True)
class Prediction:
    """Predicted cloud-answer utility (0–1) with an uncertainty band."""

    value: float
    low: float | None = None
    high: float | None = None
    refined: bool = False
    features: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Recommendation:
    decision: str                    # "send" | "keep_local"
    epsilon: float | None
    predicted: float | None
    reason: str = ""
    local_answer: str | None = None   # keep_local: the SLM's answer on the original


@dataclass(frozen=True)
class Estimate:
    tokens: int
    cost: float | None
    how: str                         # "tokenizer" or "chars/4 estimate"
    provider: str | None = None


@dataclass(frozen=True)
class AnswerChunk:
    restored: str                    # text to append to the restored view
    raw: str                         # text to append to the raw view


def _missing(what: str, exc: Exception) -> PreflightError:
    return ModelUnavailableError(
        f"{what} is not available in this installation ({type(exc).__name__}: {exc}).",
        "Run ./setup.sh run to install everything Preflight needs.",
    )


class _TapRestorer:
    """Wraps the core's stream restorer to also report the raw deltas (for the Raw tab)."""

    def __init__(self, inner: Any, on_raw: Callable[[str], None] | None) -> None:
        self._inner, self._on_raw = inner, on_raw

    def feed(self, chunk: str) -> str:
        if self._on_raw is not None:
            self._on_raw(chunk)
        return self._inner.feed(chunk)

    def flush(self) -> str:
        return self._inner.flush()


class Backend:
    """Real implementation over the core. One instance per window."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else load_settings()
        self._lock = threading.RLock()
        self._detector: Any = None
        self._dx: Any = None
        self._slm: Any = None
        self._embedder: Any = None
        self._predictor: Any = None
        self._assessors: dict[Task, Any] = {}
        self._session: Any = None
        self._session_keys: Any = None
        self._raw_sink: Callable[[str], None] | None = None

    # -- settings ------------------------------------------------------------------------
    def save_settings(self, settings: Settings) -> None:
        save_settings(settings)
        self.settings = settings
        with self._lock:
            if self._detector is not None:
                self._detector.settings = settings.detection   # deny/allow lists changed
            self._session = None

    # -- detection (lane "detect") -------------------------------------------------------
    def detector(self) -> Any:
        """The detector lives in a child process (see :mod:`preflight.qt.detect_process`)."""
        with self._lock:
            if self._detector is None:
                from preflight.qt.detect_process import DetectorProcess

                self._detector = DetectorProcess(self.settings.detection)
            return self._detector

    def warm_detector(self) -> list[str]:
        return self.detector().warm()

    def detect(self, text: str) -> list[Span]:
        if not text.strip():
            return []
        return list(self.detector().detect(text))

    # -- mechanisms (lane "dx" for d_X) --------------------------------------------------
    def methods(self) -> list[str]:
        from preflight.core.sanitize.base import mechanism_names

        names = mechanism_names()
        ordered = [n for n in ("dx", *OPERATOR_ORDER) if n in names]
        return ordered + [n for n in names if n not in ordered]

    def dx(self) -> Any:
        with self._lock:
            if self._dx is None:
                from preflight.core.sanitize.base import create_mechanism

                self._dx = create_mechanism("dx")
            return self._dx

    def epsilon_range(self) -> tuple[float, float]:
        lo, hi = self.dx().epsilon_range
        pol = self.settings.policy
        lo = pol.epsilon_min if pol.epsilon_min else lo
        hi = pol.epsilon_max if pol.epsilon_max else hi
        if not (0 < lo < hi):
            raise ConfigError("The ε bounds in the policy are invalid.",
                              "Open Settings → Policy and set 0 < minimum < maximum.")
        return float(lo), float(hi)

    def dx_prepare(self, text: str, spans: Sequence[Span], seed: int, scope: str) -> Any:
        return self.dx().prepare(text, list(spans), SanitizeParams(seed=seed, scope=scope))

    def sanitize(self, method: str, text: str, spans: Sequence[Span], seed: int
                 ) -> tuple[SanitizedText, Any]:
        """Operators: a fresh mechanism (and vault) per run — one vault per document."""
        from preflight.core.sanitize.base import create_mechanism

        mech = create_mechanism(method)
        out = mech.sanitize(text, list(spans), SanitizeParams(seed=seed))
        vault = (out.info or {}).get("vault") if isinstance(out.info, dict) else None
        return out, vault if vault is not None else getattr(mech, "vault", None)

    # -- utility (fast on "pool", refined/recommend on "slm") ----------------------------
    def slm(self) -> Any:
        with self._lock:
            if self._slm is None:
                try:
                    from preflight.runtime.slm import LocalSLM
                except ImportError as exc:
                    raise _missing("The local model", exc) from None
                self._slm = LocalSLM()
            return self._slm

    def assessor(self, task: Task) -> Any:
        with self._lock:
            a = self._assessors.get(task)
            if a is None:
                try:
                    from preflight.core.utility.assess import UtilityAssessor
                except ImportError as exc:
                    raise _missing("The utility assessor", exc) from None
                shared = next(iter(self._assessors.values()), None)
                a = UtilityAssessor(
                    slm=self.slm(),
                    embedder=shared.embedder if shared is not None and shared._embedder
                    else None,
                    predictor=shared.predictor if shared is not None and shared._predictor
                    else None,
                    task=task)
                self._assessors[task] = a
            return a

    def _band(self, value: float, refined: bool) -> tuple[float | None, float | None]:
        """± the held-out RMSE of the regressor that made the prediction."""
        try:
            metrics = self.assessor(SUMMARIZE_TASK).predictor.metrics
        except Exception:  # noqa: BLE001 - no metrics: no band
            return None, None
        rmse = _find_rmse(metrics, "full" if refined else "fast")
        if rmse is None:
            return None, None
        return max(-1.0, value - rmse), min(1.0, value + rmse)

    def predict_fast(self, original: str, sanitized: SanitizedText,
                     spans: Sequence[Span], task: Task | None = None) -> Prediction:
        a = self.assessor(task or SUMMARIZE_TASK).fast(original, sanitized, list(spans))
        low, high = self._band(a.predicted_fast, False)
        return Prediction(float(a.predicted_fast), low, high, False, dict(a.features))

    def predict_refined(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                        task: Task, cancel: threading.Event) -> Prediction:
        assessor = self.assessor(task)
        assessor.predictor          # fail fast (missing regressor) before any SLM work
        a = assessor.refine(original, sanitized, list(spans), cancel=cancel)
        value = float(a.best)
        low, high = self._band(value, True)
        return Prediction(value, low, high, True, dict(a.features))

    def utility_curve(self, original: str, prepared: Any, spans: Sequence[Span],
                      epsilons: Sequence[float], cancel: threading.Event
                      ) -> list[tuple[float, float]]:
        out = []
        for eps in epsilons:
            if cancel.is_set():
                break
            out.append((eps, self.predict_fast(original, prepared.at(eps), spans).value))
        return out

    def recommend(self, original: str, prepared: Any, spans: Sequence[Span], task: Task,
                  cancel: threading.Event) -> Recommendation:
        try:
            from preflight.core.utility import recommend as rec_mod
        except ImportError as exc:
            raise _missing("The ε recommendation", exc) from None
        lo, hi = self.epsilon_range()
        if not hasattr(prepared, "epsilon_range"):
            prepared = _WithRange(prepared, (lo, hi))
        res = rec_mod.recommend(
            original, prepared, self.assessor(task), self.settings.policy.min_utility,
            spans=list(spans), epsilon_min=lo, epsilon_max=hi, cancel=cancel,
        )
        return Recommendation(
            decision=str(res.decision), epsilon=res.epsilon,
            predicted=res.predicted_utility, local_answer=res.local_answer,
        )

    # -- send ------------------------------------------------------------------------------
    def session(self) -> Any:
        with self._lock:
            if self._session is None:
                from preflight.core.send.keys import SessionKeyStore
                from preflight.core.send.session import SendSession, _default_restorer

                if self._session_keys is None:
                    self._session_keys = SessionKeyStore()
                self._session = SendSession(
                    self.settings, detector=self.detector(), session_keys=self._session_keys,
                    slm=self.slm(),
                    restorer_factory=lambda vault: _TapRestorer(_default_restorer(vault),
                                                                self._raw_sink),
                )
            return self._session

    def provider_names(self) -> list[str]:
        return [p.name for p in self.settings.providers]

    def default_provider(self) -> str | None:
        names = self.provider_names()
        if self.settings.default_provider in names:
            return self.settings.default_provider
        return names[0] if names else None

    def estimate(self, payload: str, task: Task, provider: str | None) -> Estimate:
        from preflight.core.send import cost

        session = self.session()
        counted = session.token_counter.count(task_payload_text(task, payload))
        price = None
        if provider:
            prov = session.provider(provider)
            est = cost.estimate_cost(counted, task.max_tokens, prov)
            price = est.max_total if est.priced else 0.0
        how = "tokenizer" if counted.method.startswith("tokenizer") else "chars/4 estimate"
        return Estimate(tokens=counted.tokens, cost=price, how=how, provider=provider)

    def prepare_send(self, original: str, sanitized: SanitizedText, spans: Sequence[Span],
                     task: Task, provider: str, prediction: Prediction | None,
                     vault: Any = None, seed: int | None = None) -> Any:
        """Lane "detect": the plan re-scans the payload with the (single-owner) detector."""
        session = self.session()
        eps = (sanitized.info or {}).get("epsilon")
        return session.prepare_send(
            original, provider, sanitized.method,
            SanitizeParams(seed=seed, epsilon=eps), task,
            spans=list(spans), sanitized=sanitized, vault=vault,
            predicted_utility=prediction.value if prediction else None,
            features=prediction.features if prediction and prediction.features else None,
        )

    def confirmation_for(self, plan: Any, overrides: Sequence[str], resend_ok: bool) -> Any:
        from preflight.core.send.session import Confirmation

        return Confirmation(confirmed=True, overrides=frozenset(overrides),
                            resend_acknowledged=resend_ok)

    def execute_send(self, plan: Any, confirmation: Any,
                     on_chunk: Callable[[AnswerChunk], None], cancel: threading.Event) -> Any:
        raw: list[str] = []

        def on_raw(delta: str) -> None:
            raw.append(delta)

        def on_restored(text: str) -> None:
            on_chunk(AnswerChunk(text, "".join(raw)))
            raw.clear()

        self._raw_sink = on_raw
        try:
            result = self.session().execute(plan, confirmation, on_chunk=on_restored,
                                            cancel=cancel)
        finally:
            self._raw_sink = None
        if raw:
            on_chunk(AnswerChunk("", "".join(raw)))
        return result

    # -- local answer (lane "slm") -------------------------------------------------------
    def run_local(self, task: Task, text: str, on_token: Callable[[str], None],
                  cancel: threading.Event) -> Any:
        return self.session().keep_local(text, task, on_token=on_token, cancel=cancel)

    # -- keys ------------------------------------------------------------------------------
    def keyring_status(self) -> Any:
        from preflight.core.send.keys import keyring_status

        return keyring_status()

    def set_key(self, provider: str, key: str, remember: bool) -> str:
        """Store a key; returns where it went ("keyring" or "session")."""
        from preflight.core.send.keys import KeyStore, SessionKeyStore

        if remember:
            KeyStore().set(provider, key, remember=True)
            return "keyring"
        with self._lock:
            if self._session_keys is None:
                self._session_keys = SessionKeyStore()
            self._session_keys.set(provider, key)
        return "session"

    def key_source(self, provider: str) -> str:
        from preflight.core.send.keys import KeyStore, resolve_key

        try:
            prov = next(p for p in self.settings.providers if p.name == provider)
            return resolve_key(prov, KeyStore(), self._session_keys).source
        except Exception as exc:  # noqa: BLE001 - shown as text in the settings
            return f"none ({getattr(exc, 'message', type(exc).__name__)})"

    # -- history ---------------------------------------------------------------------------
    def history(self) -> list[dict[str, Any]]:
        from preflight.core.send.audit import AuditLog

        log_ = AuditLog()
        try:
            return list(reversed(log_.records()))
        finally:
            log_.close()

    def export_history(self, path: Path) -> int:
        from preflight.core.send.audit import AuditLog

        log_ = AuditLog()
        try:
            return log_.export(path)
        finally:
            log_.close()

    # -- models ----------------------------------------------------------------------------
    def model_manager(self) -> Any:
        from preflight.runtime.models import ModelManager

        return ModelManager(settings=self.settings)

    def model_status(self) -> list[Any]:
        return list(self.model_manager().status())

    def install_models(self, progress: Callable[[float, str], None],
                       cancel: threading.Event) -> list[Any]:
        return self.model_manager().install(progress=progress, cancel=cancel)

    def download_model(self, repo_id: str, filename: str, role: str,
                       progress: Callable[[float, str], None], cancel: threading.Event) -> Path:
        return self.model_manager().download(repo_id, filename, role, progress=progress,
                                             cancel=cancel)

    def use_model(self, role: str, path: Path | None) -> None:
        self.model_manager().use(role, path)
        self.settings = load_settings()

    def shutdown(self) -> None:
        det = self._detector
        if det is not None:
            det.close()
        slm = self._slm
        if slm is not None and hasattr(slm, "close"):
            try:
                slm.close()
            except Exception:  # noqa: BLE001 - best effort at exit
                log.debug("SLM close failed", exc_info=True)


class _WithRange:
    """A prepared d_X document plus the ε range the recommendation searches."""

    def __init__(self, prepared: Any, epsilon_range: tuple[float, float]) -> None:
        self._prepared = prepared
        self.epsilon_range = epsilon_range

    def at(self, epsilon: float) -> SanitizedText:
        return self._prepared.at(epsilon)


def _find_rmse(metrics: Any, which: str) -> float | None:
    """Dig the held-out RMSE of model ``which`` out of the bundle's metrics."""
    if not isinstance(metrics, dict):
        return None
    for key in (which, f"{which}_model", "full" if which == "full" else "fast"):
        sub = metrics.get(key)
        if isinstance(sub, dict):
            for k in ("rmse", "RMSE"):
                if isinstance(sub.get(k), (int, float)):
                    return float(sub[k])
    for k in (f"rmse_{which}", "rmse"):
        if isinstance(metrics.get(k), (int, float)):
            return float(metrics[k])
    return None


def task_payload_text(task: Task, payload: str) -> str:
    """The text a provider receives for ``task`` (instruction + sanitized document)."""
    return "\n".join(m["content"] for m in task.messages(payload))


