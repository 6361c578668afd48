"""Fakes of the heavy ports, for driving the REAL application layer in the window's tests.

The window's tests build :class:`~preflight.app.window_doorway.WindowDoorway` over
:class:`~preflight.app.services.Services` whose heavy backends (see
:class:`~preflight.app.ports.Ports`) are the fakes below; everything else — policies,
operators, the vault, d_X, the utility assessor and its shipped regressor, the privacy
figures, the send session, the audit log, the flow learner — is the product's own. The
provider is a loopback HTTP server (``loopback.py``). Each fake is checked against the
core protocol it stands in for (``test_ports.py``); no model is ever loaded.

- :class:`PatternDetector` (``Detector``): capitalized name pairs, "<Word> Corp/GmbH/Inc"
  organizations, e-mail addresses, ``sk-`` keys, the deny-list (first, by the product's
  own recognizer: saved keyed hashes and values in memory); the allow-list is left.
- :class:`ScriptedSLM` (``LanguageModel`` + ``AnsweringModel``): the assessor's answers
  are the text's first words; the user's local answer is :attr:`ScriptedSLM.local_text`,
  streamed word by word; the reconstruction attack restores what :attr:`restores` maps.
- the embedder: ``tests/core/utility/_utility_fakes.FakeEmbedder`` (bag of words).
- :class:`WordSpace` (``TokenSpace``): random vectors for the words of the d_X calibration
  sample and of the tests' documents; its calibration is computed once per session.
- :class:`WordTokenizer` (``Tokenizer``), :class:`FakeModels` (the model manager),
  :class:`MemorySink` (the central audit store's client).
"""

from __future__ import annotations

import hashlib
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "core" / "utility",):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from _utility_fakes import FakeEmbedder  # noqa: E402

from preflight.app.ports import Ports  # noqa: E402
from preflight.core.config import DetectionSettings, ProviderSettings, Settings  # noqa: E402
from preflight.core.errors import Cancelled, ModelUnavailableError  # noqa: E402
from preflight.core.ports import ModelAnswer, Tokenization  # noqa: E402
from preflight.core.types import Category, Span  # noqa: E402

SAMPLE = ("Jane Doe met Max Power in Berlin. Write to jane.doe@example.com about the "
          "merger plan before Friday; the board wants a summary of the risks.")
ORG_SAMPLE = "Jane Doe of Acme Corp wrote to Max Power about the merger plan."

NAME = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
ORG = re.compile(r"\b[A-Z][a-z]+ (?:Corp|GmbH|Inc)\b")
EMAIL = re.compile(r"\b[\w.]+@[\w.]+\.\w+\b")
SECRET = re.compile(r"\bsk-[A-Za-z0-9]{16,}\b")
WORD = re.compile(r"\w+")


# --- detection ------------------------------------------------------------------------
@dataclass
class DetectorControl:
    """What the tests switch on a detector (it survives the detector's rebuild when the
    settings change) and what they read back."""

    warnings: list[str] = field(default_factory=list)   # non-empty: degraded
    delay: float = 0.0
    steps: int = 0                 # a long detection: steps reported, each cancellable
    step_delay: float = 0.05
    fail: BaseException | None = None
    calls: list[str] = field(default_factory=list)
    threads: set[str] = field(default_factory=set)


class PatternDetector:
    """The ``Detector`` port by patterns (see the module doc)."""

    def __init__(self, detection: DetectionSettings, control: DetectorControl) -> None:
        self.detection = detection
        self.control = control
        self.warnings = list(control.warnings)

    def detect(self, text: str) -> list[Span]:
        c = self.control
        c.calls.append(text)
        c.threads.add(threading.current_thread().name)
        time.sleep(c.delay)
        if c.fail is not None:
            raise c.fail
        spans: list[Span] = []

        def add(m: re.Match, etype: str, cat: Category, score: float, why: str) -> None:
            if not any(s.start < m.end() and m.start() < s.end for s in spans):
                spans.append(Span(m.start(), m.end(), etype, cat, score, "fake", why))

        if self.detection.deny_list or self.detection.deny_entries:
            # the product's own deny-list matching (values in clear and keyed hashes)
            from preflight.core.pii.recognizers.lists import deny_recognizer

            for r in deny_recognizer(self.detection).analyze(text, None):
                secret = r.entity_type == "SECRET"
                m = re.compile(r".+", re.S).match(text, r.start, r.end)
                add(m, r.entity_type, Category.SECRET if secret else Category.DIRECT_IDENTIFIER,
                    1.0, "On your deny-list")
        for m in SECRET.finditer(text):
            add(m, "API_KEY", Category.SECRET, 1.0, "Looks like an API key")
        for m in EMAIL.finditer(text):
            add(m, "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER, 0.99,
                "Looks like an e-mail address")
        for m in ORG.finditer(text):
            add(m, "ORGANIZATION", Category.QUASI_IDENTIFIER, 0.8,
                "A capitalized word before Corp, GmbH or Inc")
        for m in NAME.finditer(text):
            add(m, "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                "Two capitalized words read as a name")
        allowed = {v.casefold() for v in self.detection.allow_list}
        return sorted((s for s in spans if text[s.start:s.end].casefold() not in allowed),
                      key=lambda s: s.start)


class InProcessDetector:
    """:class:`~preflight.app.detect_process.DetectorProcess`'s interface over the
    services' detector, in this process (a fake detector cannot cross to a child)."""

    def __init__(self, services: Any, control: DetectorControl | None = None) -> None:
        self.services = services
        self.control = control if control is not None else DetectorControl()
        self.settings = services.settings
        self.warnings: list[str] = []
        self.closed = False
        self._own: tuple[Any, Any] | None = None

    def _detector(self) -> Any:
        if self.closed:
            from preflight.core.errors import PreflightError

            raise PreflightError("The PII detector was closed.", "Restart Preflight.")
        detection = self.settings.detection
        if detection == self.services.settings.detection:
            return self.services.detector()
        # settings of its own (the window's "this document only" values), as the child
        # process receives them with each call
        if self._own is None or self._own[0] != detection:
            self._own = (detection, self.services.make_detector(detection))
        return self._own[1]

    def warm(self) -> list[str]:
        self.warnings = list(self._detector().warnings)
        return self.warnings

    def detect(self, text: str, *, progress: Any = None, cancel: Any = None) -> list[Span]:
        """``control.steps`` > 0: the detection takes that many steps of
        ``control.step_delay`` seconds first, reporting each and stopping on ``cancel``
        as the child's detector does."""
        c = self.control
        for i in range(c.steps):
            if cancel is not None and cancel.is_set():
                from preflight.core.errors import Cancelled

                raise Cancelled("Detection stopped by you.",
                                "Nothing was detected, so nothing can be sent yet.")
            if progress is not None:
                progress(i / c.steps, f"Looking for personal data: {i} of {c.steps} "
                                      "passages read")
            time.sleep(c.step_delay)
        return list(self._detector().detect(text))

    def detect_incremental(self, text: str, *, progress: Any = None,
                           cancel: Any = None) -> list[Span]:
        return self.detect(text, progress=progress, cancel=cancel)

    def shutdown(self) -> None:
        self.closed = True

    def close(self, timeout: float = 1.0) -> None:
        pass


# --- the local language model -----------------------------------------------------------
class ScriptedSLM:
    """The ``LanguageModel`` and ``AnsweringModel`` ports (see the module doc)."""

    def __init__(self) -> None:
        self.local_text = "A local summary of the document"
        self.delay = 0.0                   # seconds per streamed word of a local answer
        self.run_delay = 0.0               # seconds per assessor call (the search's pace)
        self.restores: dict[str, str] = {}   # the reconstruction attack's guesses
        self.stop_seen = threading.Event()
        self.calls: list[str] = []         # task kinds, in order
        self._lock = threading.Lock()

    def _wait(self, seconds: float, cancel: threading.Event | None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cancel is not None and cancel.is_set():
                self.stop_seen.set()
                raise Cancelled()
            time.sleep(0.005)
        if cancel is not None and cancel.is_set():
            self.stop_seen.set()
            raise Cancelled()

    def run(self, task: Any, text: str, on_token: Callable[[str], None] | None = None,
            cancel: threading.Event | None = None) -> str:
        with self._lock:
            self.calls.append(task.kind)
        self._wait(self.run_delay, cancel)
        if task.kind == "reconstruct":
            out = text
            for token, value in self.restores.items():
                out = out.replace(token, value, 1)
            return out
        if task.kind == "correct":
            return text
        return " ".join(text.split()[:12])

    def answer(self, task: Any, text: str, on_token: Callable[[str], None] | None = None,
               cancel: threading.Event | None = None) -> ModelAnswer:
        with self._lock:
            self.calls.append("answer")
        out = []
        for word in self.local_text.split(" "):
            self._wait(self.delay, cancel)
            out.append(word + " ")
            if on_token is not None:
                on_token(word + " ")
        return ModelAnswer("".join(out).rstrip(), "stop")

    def perplexity(self, text: str) -> float:
        return 20.0 + len(WORD.findall(text)) % 7


# --- the d_X token space ----------------------------------------------------------------
#: Documents the window's tests type: their words are in the token space's vocabulary.
VOCABULARY_TEXTS = (SAMPLE, ORG_SAMPLE, "Call Bob Smith at bob@example.org. Thanks. Also "
                    "Ann Lee. now only wrote the codename falcon is secret More text Hi")


class WordSpace:
    """A word-level ``TokenSpace``: one random vector per word of the d_X calibration
    sample and of :data:`VOCABULARY_TEXTS`; other words stay as written (out of
    vocabulary), as a real space leaves what it cannot embed."""

    def __init__(self, dim: int = 8, seed: int = 0) -> None:
        from preflight.core.sanitize.dx_calibration import default_sample_text

        words = sorted(set(WORD.findall(default_sample_text() + " "
                                        + " ".join(VOCABULARY_TEXTS))))
        self._index = {w: i for i, w in enumerate(words)}
        self._pieces = [w.encode() for w in words]
        self._matrix = np.random.default_rng(seed).standard_normal(
            (len(words), dim)).astype(np.float32)
        self._candidates = np.arange(len(words), dtype=np.int64)
        self.name = f"test words {len(words)}x{dim}"
        self.key = hashlib.sha256(self._matrix.tobytes() + "\0".join(words).encode()
                                  ).hexdigest()

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix

    @property
    def candidate_ids(self) -> np.ndarray:
        return self._candidates

    def tokenize(self, text: str) -> Tokenization:
        from preflight.runtime.space_base import word_tokenization

        return word_tokenization(text, WORD, self._index.get)

    def piece(self, token_id: int) -> bytes:
        return self._pieces[int(token_id)]

    def filter_info(self) -> dict:
        n = len(self._pieces)
        return {"rule": "every word is printable", "kept": n, "total": n, "dropped": {}}


def word_prior(space: WordSpace) -> Any:
    """The attacker's prior over :class:`WordSpace`: word counts of the calibration
    sample (the public text the real prior is counted on, in miniature)."""
    from preflight.core.privacy.dx_prior import CountsPrior
    from preflight.core.sanitize.dx_calibration import default_sample_text

    counts = np.zeros(space.matrix.shape[0])
    for tid in space.tokenize(default_sample_text()).ids:
        counts[tid] += 1
    return CountsPrior(counts, "test words prior")


_CALIBRATION: dict[str, dict] = {}
_WARM: list[bool] = []


def warm_utility_model() -> None:
    """Load the shipped utility model once per session (its first load imports sklearn:
    seconds), so no test pays that in the middle of what it times."""
    if not _WARM:
        from preflight.core.utility.predictor import UtilityPredictor, shipped_bundle_path

        UtilityPredictor.load(shipped_bundle_path(), prefer_user=False)
        _WARM.append(True)


def seed_calibration(space: WordSpace) -> None:
    """Put the space's d_X calibration in this test's cache (computed once per session:
    seconds each time otherwise), where the mechanism looks for it first."""
    import json

    from preflight.core import paths
    from preflight.core.sanitize.dx_calibration import calibrate, default_sample_text

    if space.key not in _CALIBRATION:
        _CALIBRATION[space.key] = calibrate(space, default_sample_text())
    folder = paths.cache_dir() / "dx" / space.key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "calibration.json").write_text(json.dumps(_CALIBRATION[space.key]))


# --- tokenizer, models, central store -----------------------------------------------------
class WordTokenizer:
    """The ``Tokenizer`` port: one token per word or punctuation mark."""

    name = "test words"

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))


#: The model states FakeModels reports (others: installed; optional ones: missing).
MODEL_STATES = {"slm_qwen05": "ok", "similarity": "ok", "ner": "missing", "slm": "missing"}


class FakeModels:
    """The model manager (``ModelLocator`` plus status and install) over the real
    manifest, with the states of :data:`MODEL_STATES`; installing only reports progress,
    "use" writes the settings as the real one does."""

    def __init__(self, settings: Settings) -> None:
        from preflight.runtime.manifest import load_manifest

        self.manifest = load_manifest()
        self._settings = settings
        self.installed: list[list[str]] = []

    def spec(self, role: str) -> Any:
        return self.manifest.get(role)

    def target(self, role: str) -> Path:
        return Path("/models") / self.spec(role).file

    def _state(self, role: str) -> str:
        spec = self.spec(role)
        return MODEL_STATES.get(role, "missing" if spec.optional else "ok")

    def path(self, role: str) -> Path:
        if self._state(role) != "ok":
            spec = self.spec(role)
            raise ModelUnavailableError(f"The {spec.name} model is missing: "
                                        f"{self.target(role)}.",
                                        f"Run `preflight models install --role {role}`.")
        return self.target(role)

    def status(self) -> list[Any]:
        from preflight.runtime.models import ModelStatus

        return [ModelStatus(role=s.role, name=s.name, path=self.target(s.role),
                            sha256=s.sha256, state=self._state(s.role), licence=s.licence,
                            optional=s.optional) for s in self.manifest.models]

    def use(self, role: str, path: Path | None) -> Path | None:
        from preflight.core.config import load_settings, save_settings

        settings = load_settings()
        if path is None:
            settings.model_paths.pop(role, None)
        else:
            settings.model_paths[role] = str(path)
        save_settings(settings)
        return path

    def install(self, roles: Sequence[str] | None = None, with_extras: bool = False,
                progress: Any = None, cancel: threading.Event | None = None) -> list[Any]:
        self.installed.append(list(roles or []))
        for i in range(5):
            if progress is not None:
                progress(i / 4, "installing")
        return []

    def download(self, repo_id: str, filename: str, role: str, sha256: str | None = None,
                 revision: str = "main", progress: Any = None,
                 cancel: threading.Event | None = None) -> Path:
        return Path("/models") / filename


class MemorySink:
    """The central audit store's client, in memory; ``down`` makes it unreachable."""

    def __init__(self, where: str = "db.test") -> None:
        self.where = where
        self.events: dict[str, list] = {}
        self.down = False

    def _check(self) -> None:
        from preflight.core.send.audit_sync import CentralUnavailableError

        if self.down:
            raise CentralUnavailableError(f"The central audit store {self.where} cannot be "
                                          "reached (connection refused).", "It retries.")

    def head(self, log_id: str) -> tuple[int, str]:
        from preflight.core.send.audit_chain import GENESIS

        self._check()
        got = self.events.get(log_id)
        return (got[-1].seq, got[-1].hash) if got else (0, GENESIS)

    def append(self, who: Any, expected_head: tuple[int, str], events: Any,
               records: Any) -> None:
        self._check()
        self.events.setdefault(who.log_id, []).extend(events)

    def read(self, log_id: str) -> Any:
        self._check()
        return list(self.events.get(log_id, [])), [], self.head(log_id)

    def history(self, log_id: str) -> list:
        self._check()
        return []

    def close(self) -> None:
        pass


# --- the rig: ports, services, the window's doorway ----------------------------------------
class Rig:
    """The fakes of one test and the real application layer over them."""

    def __init__(self) -> None:
        self.detector = DetectorControl()
        self.slm = ScriptedSLM()
        self.embedder = FakeEmbedder()
        self.space = WordSpace()
        self.tokenizer = WordTokenizer()
        self.sink = MemorySink()
        self.sink_error: Exception | None = None    # building the store's client fails
        self.models: list[FakeModels] = []
        seed_calibration(self.space)
        warm_utility_model()

    def _models(self, settings: Settings) -> FakeModels:
        self.models.append(FakeModels(settings))
        return self.models[-1]

    def ports(self) -> Ports:
        return Ports(models=self._models,
                     detector=lambda detection, floor: PatternDetector(detection,
                                                                       self.detector),
                     slm=lambda: self.slm, embedder=lambda: self.embedder,
                     token_space=lambda: self.space, attack_prior=word_prior,
                     tokenizer=lambda: self.tokenizer, audit_sink=self._sink)

    def _sink(self, central: Any) -> MemorySink:
        if self.sink_error is not None:
            raise self.sink_error
        return self.sink

    def services(self, settings: Settings | None = None) -> Any:
        from preflight.app.services import build_services

        return build_services(settings if settings is not None else Settings(),
                              ports=self.ports())

    def doorway(self, settings: Settings | None = None) -> Any:
        """The real :class:`WindowDoorway` over these fakes (its detector in process)."""
        from preflight.app.window_doorway import WindowDoorway

        services = self.services(settings)
        return WindowDoorway(services=services,
                             detector_host=lambda _settings: InProcessDetector(
                                 services, self.detector))


def real_plan(rig: Rig, base_url: str, text: str = SAMPLE, *,
              findings: Sequence[Any] | None = None) -> Any:
    """A real send plan of ``text`` under placeholders to a provider at ``base_url`` (built
    by the application layer; nothing is sent), with ``findings`` instead of the re-scan's
    when given."""
    from dataclasses import replace

    from preflight.core.tasks import SUMMARIZE

    door = rig.doorway(window_settings(base_url, policy="placeholder"))
    spans = door.detect(text)
    sanitized, vault = door.sanitize(door.policy(), text, spans, 1)
    plan = door.prepare_send(text, sanitized, spans, SUMMARIZE, "loopback", None, vault)
    door.shutdown()
    return plan if findings is None else replace(plan, findings=tuple(findings))


def window_settings(provider_url: str | None = None, policy: str = "dx-all") -> Settings:
    """The settings most window tests start from: a d_X policy (the slider shows) with an
    ε range wide enough that its top keeps every word, and a loopback provider."""
    s = Settings()
    s.policy.active = policy
    s.policy.epsilon_max = 1000.0
    if provider_url is not None:
        s.providers.append(ProviderSettings(name="loopback", base_url=provider_url,
                                            model="test-model", price_input_per_mtok=2.0,
                                            price_output_per_mtok=8.0))
    return s
