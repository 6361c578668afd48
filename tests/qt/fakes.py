"""A fake :class:`preflight.app.doorway.Doorway` for the window's unit tests.

Same methods and signatures as the protocol and the real ``WindowDoorway`` (checked by
tests/app/test_doorway_contract.py) and the same result types; no models. Detection finds
capitalized name pairs, "<Word> Corp/GmbH/Inc" organizations and e-mail addresses. Policies
are the core's own (presets, operators, :class:`PolicyMechanism`); only d_X is faked: it
replaces each word with a probability that falls with ε, deterministically for a seed.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from preflight.core.config import ProviderSettings, Settings
from preflight.core.org_policy import OrgPolicy
from preflight.app.window_doorway import saved_policy_row
from preflight.core.errors import Cancelled, ConfigError, ProviderError
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.sanitize.policy import PRESETS, Policy, find_policy, policy_from_mapping
from preflight.core.sanitize.policy_apply import PolicyMechanism
from preflight.core.types import Category, SanitizedText, Span, apply_replacements
from preflight.app.doorway import AnswerChunk, Prediction
from preflight.app.ops_status import UtilityModelStatus
from preflight.app.presentation import quasi_warning
from preflight.core.privacy.ledger import ledger_for, send_epsilon
from preflight.core.privacy.quasi import quasi_identifiers_left
from preflight.core.privacy.reconstruct import score
from preflight.core.send.audit import PriorSend
from preflight.core.send.cost import CostEstimate
from preflight.core.send.local import LocalResult, guarded_answer
from preflight.core.utility.assess import Assessment
from preflight.core.utility.recommend import Recommendation

SAMPLE = ("Jane Doe met Max Power in Berlin. Write to jane.doe@example.com about the "
          "merger plan before Friday; the board wants a summary of the risks.")
ORG_SAMPLE = "Jane Doe of Acme Corp wrote to Max Power about the merger plan."

NAME = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
ORG = re.compile(r"\b[A-Z][a-z]+ (?:Corp|GmbH|Inc)\b")
EMAIL = re.compile(r"\b[\w.]+@[\w.]+\.\w+\b")
WORD = re.compile(r"\w+")


# Held-out errors of the regressors in the shipped bundle's shape (see the real
# WindowDoorway, which reads them from resources/utility/regressor.joblib).
FAST_RMSE = 0.25
FULL_RMSE = 0.21


def fake_detect(text: str, deny: Sequence[str] = ()) -> list[Span]:
    spans = []
    for m in EMAIL.finditer(text):
        spans.append(Span(m.start(), m.end(), "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER,
                          0.99, "fake-email", "Looks like an e-mail address"))
    for m in ORG.finditer(text):
        spans.append(Span(m.start(), m.end(), "ORGANIZATION", Category.QUASI_IDENTIFIER,
                          0.8, "fake-org", "A capitalized word before Corp, GmbH or Inc"))
    for m in NAME.finditer(text):
        if not any(s.start < m.end() and m.start() < s.end for s in spans):
            spans.append(Span(m.start(), m.end(), "PERSON", Category.DIRECT_IDENTIFIER,
                              0.85, "fake-ner", "Two capitalized words read as a name"))
    for word in deny:
        for m in re.finditer(rf"\b{re.escape(word)}\b", text, re.IGNORECASE):
            if not any(s.start < m.end() and m.start() < s.end for s in spans):
                spans.append(Span(m.start(), m.end(), "DENY_LIST",
                                  Category.DIRECT_IDENTIFIER, 1.0, "deny-list",
                                  "On your deny-list"))
    return sorted(spans, key=lambda s: s.start)


def _u(seed: int, i: int) -> float:
    h = hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


@dataclass
class FakePrepared:
    """What the d_X mechanism's ``prepare`` returns, without a token space."""

    text: str
    spans: list[Span]
    params: SanitizeParams
    calls: list[float] = field(default_factory=list)

    @property
    def seed(self) -> int:
        return int(self.params.seed or 0)

    @property
    def scope(self) -> str:
        return self.params.scope

    @property
    def epsilon_range(self) -> tuple[float, float]:
        return (1.0, 100.0)

    @property
    def dx_part(self) -> "FakePrepared":
        return self

    def kept_share(self, epsilon: float) -> float:
        """The share of the words in scope that ``at(epsilon)`` leaves unchanged."""
        keep = 1 - math.exp(-epsilon / 10)
        words = self._targets()
        return sum(_u(self.seed, i) <= keep for i in range(len(words))) / max(1, len(words))

    def _inside(self, w: tuple[int, int]) -> bool:
        return any(s.start <= w[0] and w[1] <= s.end for s in self.spans)

    def _targets(self) -> list[tuple[int, int]]:
        words = [(m.start(), m.end()) for m in WORD.finditer(self.text)]
        if self.scope == "pii":
            return [w for w in words if self._inside(w)]
        if self.scope == "rest":
            return [w for w in words if not any(s.start < w[1] and w[0] < s.end
                                                for s in self.spans)]
        return words

    def at(self, epsilon: float, *, fixed=()) -> SanitizedText:
        from preflight.core.sanitize.dx_prepared import merge_fixed

        self.calls.append(epsilon)
        keep = 1 - math.exp(-epsilon / 10)           # more ε → more words kept
        reps = []
        words = self._targets()
        for i, (s, e) in enumerate(words):
            if _u(self.seed, i) > keep:
                reps.append((s, e, f"w{i}", "TOKEN"))
        if fixed:                                    # as DxPrepared.at: one pass
            reps = merge_fixed(reps, list(fixed))
        out, changes = apply_replacements(self.text, reps)
        return SanitizedText(out, "dx", changes, {
            "epsilon": epsilon, "scope": self.scope, "tokens_changed": len(reps),
            "tokens_total": len(words),
            "guarantee": "d_X-privacy covers every word of the text." if self.scope == "all"
            else f"d_X-privacy covers the words of scope {self.scope}."})

    def resample(self, seed: int | None = None) -> "FakePrepared":
        new = seed if seed is not None else self.seed + 1
        return FakePrepared(self.text, self.spans, replace(self.params, seed=new))

    def update(self, new_text: str, new_spans: Sequence[Span]) -> "FakePrepared":
        return FakePrepared(new_text, list(new_spans), self.params)


class FakeDx:
    """The shared d_X mechanism's two calls (``prepare``, ``sanitize``) over FakePrepared."""

    name = "dx"

    def __init__(self, made: list[FakePrepared]) -> None:
        self.made = made

    def prepare(self, text: str, spans: Sequence[Span], params: SanitizeParams
                ) -> FakePrepared:
        p = FakePrepared(text, list(spans), params)
        self.made.append(p)
        return p

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams
                 ) -> SanitizedText:
        return self.prepare(text, spans, params).at(params.epsilon or 10.0)


@dataclass(frozen=True)
class FakeFinding:
    id: str
    type: str
    value: str
    reason: str
    blocking: bool = True


@dataclass(frozen=True)
class FakeCost:
    input_tokens: int
    max_output_tokens: int = 142
    token_method: str = "estimate: characters / 4"
    priced: bool = True
    max_total: float = 0.0012


@dataclass(frozen=True)
class FakeRequest:
    url: str
    body: bytes

    def display_headers(self, with_auth: bool = True):
        return [("Content-Type", "application/json"),
                ("Authorization", "Bearer <API key from keyring>")]


@dataclass(frozen=True)
class FakePlan:
    provider: ProviderSettings
    request: FakeRequest
    cost: FakeCost
    findings: tuple
    prior_sends: tuple
    method: str
    epsilon: float | None
    predicted_utility: float | None
    vault: Any = None
    sanitized: Any = None          # the SanitizedText the payload carries (as SendPlan)

    @property
    def payload(self) -> bytes:
        return self.request.body

    @property
    def blocking(self):
        return tuple(f for f in self.findings if f.blocking)


@dataclass(frozen=True)
class FakeConfirmation:
    overrides: frozenset
    resend: bool


@dataclass(frozen=True)
class FakeSendResult:
    record_id: int
    answer: str
    answer_raw: str
    output_tokens: int
    cost: float
    realized_utility: float | None = 0.71
    finish_reason: str | None = "stop"       # as SendResult: "length" = cut at max_tokens
    notes: tuple[str, ...] = ()              # as SendResult: shown beside the answer
    audit_error: str | None = None           # as SendResult: what the audit log lacks


class FakeBackend:
    def __init__(self, settings: Settings | None = None, *, delay: float = 0.0,
                 answer: str = "Summary about <PERSON_1> and the plan.",
                 findings: tuple = (), prior_sends: tuple = ()) -> None:
        self.settings = settings or Settings()
        self.org_policy = OrgPolicy.none()    # tests put a loaded company policy here
        self.delay = delay
        self.answer_text = answer
        self.findings = findings
        self.prior_sends = prior_sends
        self.detect_calls: list[str] = []
        self.detect_threads: set[str] = set()
        self.sent: list[FakePlan] = []
        self.rows: list[dict[str, Any]] = []
        self.saved = 0
        self.prepared: list[FakePrepared] = []
        self.opened: list[Any] = []           # sources given to new_document
        self.stop_seen = threading.Event()
        self.attack_delay = 0.0
        self.recommend_delay = 0.0            # seconds per ε tried by recommend()
        self.attack_calls: list[tuple[float, bool]] = []   # (ε, with the curve)
        self.attack_cancelled = 0
        self.provider: str | None = None      # set_provider: the predictions' provider
        self.calibrated: dict[str | None, int] = {}   # provider -> sends its refit saw
        # faults the fail-closed tests switch on and off
        self.detector_warnings: list[str] = []  # what warm_detector reports (degraded)
        self.fail_detect: BaseException | None = None
        self.fail_sanitize: BaseException | None = None
        self.policy_delay = 0.0               # seconds policy() takes
        self.plans: list[FakePlan] = []       # every prepare_send
        self.keys: dict[str, str] = {}        # set_key (held like a session key)
        self.probes: list[str] = []           # providers check_connection tested
        self.finish_reason: str | None = "stop"   # why the provider's answer ended
        self.result_notes: tuple[str, ...] = ()   # the core's notes on the answer
        self.local_text = "A local summary of the document"   # what the local model writes
        # company deployment: what the status calls report (tests replace them)
        self.utility_status: Any = UtilityModelStatus("shipped")
        self.central_status: Any = None       # None: no central audit store
        self.status_calls = 0

    # settings
    def save_settings(self, settings: Settings) -> None:
        self.org_policy.check_min_utility(settings.policy.min_utility)  # as config does
        self.settings = settings
        self.saved += 1

    # detection
    def warm_detector(self) -> list[str]:
        return list(self.detector_warnings)

    def detect(self, text: str) -> list[Span]:
        self.detect_calls.append(text)
        self.detect_threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        if self.fail_detect is not None:
            raise self.fail_detect
        return fake_detect(text, self.settings.detection.deny_list)

    # policies: the core's own policies and operators, d_X from FakeDx
    def _saved(self) -> list[Policy]:
        return [policy_from_mapping({k: v for k, v in asdict(p).items() if v is not None},
                                    f"saved[{i}]") for i, p in enumerate(self.settings.policy.saved)]

    def policies(self) -> list[tuple[str, str, bool]]:
        return [(p.name, p.title, p.uses_dx)
                for p in [*PRESETS.values(), *(s for s in self._saved()
                                               if s.name not in PRESETS)]]

    def policy(self, name: str | None = None) -> Policy:
        time.sleep(self.policy_delay)
        return find_policy(name or self.settings.policy.active, self._saved())

    def save_policy(self, policy: Policy) -> None:
        if policy.name in PRESETS:
            raise ConfigError(f"'{policy.name}' is the name of a built-in policy.",
                              "Choose another name for your policy.")
        self.settings.policy.saved = [s for s in self.settings.policy.saved
                                      if s.name != policy.name] + [saved_policy_row(policy)]
        self.saved += 1

    def set_active_policy(self, name: str) -> None:
        self.policy(name)
        self.settings.policy.active = name
        self.saved += 1

    def epsilon_range(self) -> tuple[float, float]:
        return self.org_policy.clamp_epsilon_range(1.0, 100.0)

    def prepare(self, policy, text, spans, seed):
        mech = PolicyMechanism(policy, dx=FakeDx(self.prepared))
        return mech.prepare(text, list(spans), SanitizeParams(seed=seed))

    def new_document(self, source, text):
        self.opened.append(source)

    def sanitize(self, policy, text, spans, seed):
        if self.fail_sanitize is not None:
            raise self.fail_sanitize
        mech = PolicyMechanism(policy, dx=FakeDx(self.prepared))
        out = mech.sanitize(text, list(spans), SanitizeParams(seed=seed))
        vault = {e.token: e.original for e in mech.vault.entries} if mech.reversible else None
        return out, vault

    # utility
    def set_provider(self, provider):
        self.provider = provider

    def _calibration(self) -> str:
        from types import SimpleNamespace

        from preflight.app.presentation import calibration_text

        return calibration_text(SimpleNamespace(
            provider=self.provider, calibrated_on=self.calibrated.get(self.provider, 0)))

    def predict_fast(self, original, sanitized, spans, task=None) -> Prediction:
        share = 1 - (sanitized.info.get("tokens_changed", 0)
                     / max(1, sanitized.info.get("tokens_total", 1)))
        return Prediction(Assessment({"share": share}, round(0.2 + 0.7 * share, 4)),
                          FAST_RMSE, self._calibration())

    def predict_refined(self, original, sanitized, spans, task, cancel) -> Prediction:
        for _ in range(int(self.delay * 100)):
            if cancel.is_set():
                raise Cancelled()
            time.sleep(0.01)
        p = self.predict_fast(original, sanitized, spans)
        return Prediction(Assessment(p.features, p.value, p.value), FULL_RMSE,
                          self._calibration())

    def utility_curve(self, original, prepared, spans, epsilons, cancel):
        return [(e, self.predict_fast(original, prepared.at(e), spans).value) for e in epsilons]

    def recommend(self, original, prepared, spans, task, cancel, progress=None
                  ) -> Recommendation:
        """Tries ε 1, 3, 10, 30, 100 in turn, ``recommend_delay`` seconds each, reporting
        each one and stopping when cancelled (like the core's search)."""
        grid = [1, 3, 10, 30, 100]
        curve = []
        for i, e in enumerate(grid):
            if progress is not None:
                progress(i / len(grid), f"ε {e} (setting {i + 1} of {len(grid)})")
            for _ in range(int(self.recommend_delay * 100)):
                if cancel.is_set():
                    raise Cancelled()
                time.sleep(0.01)
            if cancel.is_set():
                raise Cancelled()
            curve += self.utility_curve(original, prepared, spans, [e], cancel)
        if progress is not None:
            progress(1.0, "done")
        min_u = self.settings.policy.min_utility
        for e, u in curve:
            if u >= min_u:       # like the core's, it carries the text it measured at ε
                return Recommendation("send", float(e), u, u, min_u, None,
                                      sanitized=prepared.at(float(e)))
        return Recommendation("keep_local", None, curve[-1][1], curve[-1][1], min_u,
                              "A local summary of the document")

    # privacy: the core's own quasi-identifiers, ledger and reconstruction scoring; the
    # d_X attack and the local model's reconstruction are faked
    def privacy_facts(self, original, sanitized, spans) -> dict[str, Any]:
        quasi = quasi_identifiers_left(original, sanitized, list(spans))
        ledger = ledger_for([p for p in self.prior_sends if isinstance(p, PriorSend)],
                            send_epsilon(sanitized), self.org_policy.max_document_epsilon)
        return {"quasi_identifiers": [q.to_json() for q in quasi],
                "quasi_warning": quasi_warning(quasi),
                "epsilon_ledger": {**ledger.to_json(), "text": ledger.describe()}}

    def dx_attack(self, prepared, epsilon, spans, curve, cancel) -> dict[str, Any]:
        """Success = unchanged words + a share of the changed ones that grows with ε."""
        self.attack_calls.append((float(epsilon), bool(curve)))
        for _ in range(int(self.attack_delay * 100)):
            if cancel.is_set():
                self.attack_cancelled += 1
                raise Cancelled()
            time.sleep(0.01)
        dx = prepared.dx_part
        grid = sorted({*(round(1.0 * 100 ** (i / 8), 6) for i in range(9)), float(epsilon)}) \
            if curve else [float(epsilon)]

        def point(e: float) -> dict[str, Any]:
            same = dx.kept_share(e)
            return {"epsilon": e, "success": same + (1 - same) * (1 - math.exp(-e / 40)),
                    "success_pii": None, "identity": same, "nearest": same,
                    "mc_error": 0.01, "sampling_error": 0.0}
        points = [point(e) for e in grid]
        cur = next(p for p in points if p["epsilon"] == float(epsilon))
        return {**cur, "curve": points, "tokens": len(dx._targets()), "samples": 16,
                "seconds": self.attack_delay}

    def reconstruct(self, original, sanitized, spans, cancel) -> dict[str, Any]:
        """The fake model restores the first changed value and nothing else."""
        for _ in range(int(self.delay * 100)):
            if cancel.is_set():
                raise Cancelled()
            time.sleep(0.01)
        first = sanitized.changes[0] if sanitized.changes else None
        answer = sanitized.text if first is None else (
            sanitized.text[:first.start] + first.original + sanitized.text[first.end:])
        return score(original, sanitized, list(spans), answer).to_json()

    # send
    def provider_names(self) -> list[str]:
        return [p.name for p in self.settings.providers]

    def default_provider(self):
        names = self.provider_names()
        return names[0] if names else None

    def estimate(self, payload, task, provider) -> CostEstimate:
        return CostEstimate(math.ceil(len(payload) / 4), task.max_tokens,
                            "estimate: characters / 4", 0.0008, 0.0004, bool(provider))

    def prepare_send(self, original, sanitized, spans, task, provider, prediction,
                     vault=None) -> FakePlan:
        prov = next(p for p in self.settings.providers if p.name == provider)
        self.org_policy.check_provider(prov.base_url)      # as the send session does
        body = ('{"model": "%s", "messages": [{"role": "user", "content": %s}]}'
                % (prov.model, __import__("json").dumps(sanitized.text))).encode()
        plan = FakePlan(prov, FakeRequest(prov.base_url + "/chat/completions", body),
                        FakeCost(len(sanitized.text) // 4), self.findings, self.prior_sends,
                        sanitized.method, sanitized.info.get("epsilon"),
                        prediction.value if prediction else None, vault, sanitized)
        self.plans.append(plan)
        return plan

    def confirmation_for(self, plan, overrides, resend_ok):
        return FakeConfirmation(frozenset(overrides), resend_ok)

    def execute_send(self, plan, confirmation, on_chunk, cancel) -> FakeSendResult:
        missing = [f for f in plan.blocking if f.id not in confirmation.overrides]
        if missing:
            raise ProviderError("blocked", "override")
        self.sent.append(plan)
        raw = self.answer_text
        restored = raw
        for k, v in (plan.vault or {}).items():
            restored = restored.replace(k, v)
        for piece_raw in _chunks(raw):
            piece = piece_raw
            for k, v in (plan.vault or {}).items():
                piece = piece.replace(k, v)
            if cancel.is_set():
                self.stop_seen.set()
                raise Cancelled()
            time.sleep(self.delay)
            on_chunk(AnswerChunk(piece, piece_raw))
        self.rows.append({"created_at": "2026-11-21T21:00:00", "kind": "send", "status": "done",
                          "provider": plan.provider.name, "model": plan.provider.model,
                          "method": plan.method, "epsilon": plan.epsilon,
                          "payload": plan.payload, "answer_restored": restored})
        return FakeSendResult(len(self.rows), restored, raw, 9, 0.0004,
                              finish_reason=self.finish_reason, notes=self.result_notes,
                              audit_error=getattr(self, "audit_error", None))

    def run_local(self, task, text, on_token, cancel):
        fake = self

        class _LocalModel:
            """Streams ``local_text`` word by word, as the local SLM streams tokens."""

            def run(self, task, text, on_token=None, cancel=None) -> str:
                out = []
                for w in fake.local_text.split(" "):
                    if cancel is not None and cancel.is_set():
                        fake.stop_seen.set()
                        raise Cancelled()
                    time.sleep(fake.delay)
                    out.append(w + " ")
                    on_token(w + " ")
                return "".join(out).rstrip()

        # the real loop guard of the send session's keep_local
        got = guarded_answer(_LocalModel(), task, text, on_token=on_token, cancel=cancel)
        # like the real send session's keep_local: the local answer is recorded in History
        self.rows.append({"created_at": "2026-11-21T21:05:00", "kind": "local",
                          "status": "done", "answer_restored": got.text})
        return LocalResult(len(self.rows), got.text, got.finish_reason)

    # keys
    def keyring_status(self):
        @dataclass
        class S:
            available: bool = False
            backend: str = "fail.Keyring"
            reason: str = "no keyring in tests"
        return S()

    def set_key(self, provider, key, remember):
        self.keys[provider.name] = key
        return "session"

    def key_source(self, provider):
        return "none set — use “Set API key…”"

    def check_connection(self, provider):
        """The real probe (a GET of <base_url>/models; the tests point it at a loopback
        server), with the key the user set in this session."""
        from preflight.core.send.probe import check_connection

        self.probes.append(provider.name)
        return check_connection(provider, self.keys.get(provider.name))

    # history
    def history(self):
        return list(reversed(self.rows))

    def export_history(self, path: Path) -> int:
        Path(path).write_text(__import__("json").dumps(
            [{k: (v.decode() if isinstance(v, bytes) else v) for k, v in r.items()}
             for r in self.rows]))
        return len(self.rows)

    # models
    def model_status(self):
        @dataclass
        class St:
            role: str
            name: str
            path: str
            state: str
            optional: bool = False
            detail: str = ""
        return [St("slm_qwen05", "Qwen2.5-Coder-0.5B-Instruct", "/models/qwen.gguf", "ok"),
                St("similarity", "all-mpnet-base-v2", "/models/mpnet", "ok"),
                St("ner", "en_core_web_sm", "/models/ner", "missing"),
                St("slm", "SmolLM2-135M-Instruct", "/models/slm.gguf", "missing"),
                St("cloud_standin", "Gemma 3 270M", "/models/gemma.gguf", "missing",
                   optional=True)]

    def install_models(self, progress, cancel):
        for i in range(5):
            progress(i / 4, "installing")
        return []

    def download_model(self, repo_id, filename, role, progress, cancel):
        return Path("/tmp/x")

    def use_model(self, role, path):
        pass

    # company deployment
    def utility_model_status(self):
        self.status_calls += 1
        return self.utility_status

    def central_audit_status(self):
        self.status_calls += 1
        return self.central_status

    def company_limits(self):
        from preflight.app.company_limits import limits_on_settings

        return limits_on_settings(self.org_policy, self.settings)

    def check_assessor(self, url, model):
        """The real probe (the tests point it at a loopback server)."""
        from preflight.app.ops_status import check_assessor

        self.probes.append(url)
        return check_assessor(url, model)

    def shutdown(self) -> None:
        pass


def _chunks(text: str, n: int = 3) -> list[str]:
    words = text.split(" ")
    return [" ".join(words[i:i + n]) + (" " if i + n < len(words) else "")
            for i in range(0, len(words), n)]


def open_window(qtbot, backend, *, owned_by_qtbot: bool = True):
    """The main window over ``backend``, shown and started (light theme); a test that
    deletes the window itself passes ``owned_by_qtbot=False``."""
    from preflight.qt.qt_app import build_window

    win = build_window(backend, theme="light")
    if owned_by_qtbot:
        qtbot.addWidget(win)
    win.show()
    win.start()
    return win


def stop_window_work(win) -> None:
    """Cancel everything the window started and wait for its workers (test teardown)."""
    from preflight.qt.qt_workers import wait_all

    win.doc.cancel_all()
    win.privacy.cancel_all()
    win.answers.stop()
    wait_all(3000)
