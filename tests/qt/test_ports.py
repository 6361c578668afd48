"""Each fake the window's tests plug into the application layer (``ports.py``) keeps the
protocol of what it stands in for: the core's ports (method names, parameters, kinds and
defaults; annotations are documentation, not the contract), the model manager, the
detector's child process and the central store's client. A fake that drifted would let
the window's tests pass against a surface the product does not have."""

from __future__ import annotations

import inspect

import pytest
from ports import (
    DetectorControl,
    FakeModels,
    InProcessDetector,
    MemorySink,
    PatternDetector,
    Rig,
    ScriptedSLM,
    WordSpace,
    WordTokenizer,
    word_prior,
)

from preflight.app.detect_process import DetectorProcess
from preflight.app.ports import Ports
from preflight.app.services import Services
from preflight.core import ports as core
from preflight.core.config import DetectionSettings, Settings
from preflight.core.privacy.dx_prior import CountsPrior, TokenPrior
from preflight.core.send.audit_sync import CentralAuditSink
from preflight.runtime.models import ModelManager

from _utility_fakes import FakeEmbedder  # noqa: I001  (tests/core/utility, via ports.py)


def public(cls: type) -> dict[str, inspect.Signature]:
    """The public methods of ``cls`` (a protocol or a class) and their signatures."""
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(member, property):
            continue
        if inspect.isfunction(member):
            out[name] = inspect.signature(member)
    return out


def shape(sig: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def drift(fake: type, real: type, names: list[str] | None = None) -> list[str]:
    """What ``fake`` lacks of ``real`` or has with another signature."""
    want = public(real)
    have = public(fake)
    out = []
    for name in names or sorted(want):
        if name not in have:
            out.append(f"{name}: missing")
        elif shape(have[name]) != shape(want[name]):
            out.append(f"{name}: {have[name]} instead of {want[name]}")
    return out


PORTS = [
    (PatternDetector, core.Detector),
    (ScriptedSLM, core.LanguageModel),
    (ScriptedSLM, core.AnsweringModel),
    (FakeEmbedder, core.Embedder),
    (WordSpace, core.TokenSpace),
    (WordTokenizer, core.Tokenizer),
    (FakeModels, core.ModelLocator),
]


@pytest.mark.parametrize("fake,port", PORTS, ids=[f"{f.__name__}-{p.__name__}"
                                                   for f, p in PORTS])
def test_each_fake_keeps_its_core_port(fake, port):
    assert drift(fake, port) == []


def test_the_fakes_are_instances_of_the_ports():
    rig = Rig()
    built = {core.Detector: PatternDetector(DetectionSettings(), DetectorControl()),
             core.LanguageModel: rig.slm, core.AnsweringModel: rig.slm,
             core.Embedder: rig.embedder, core.TokenSpace: rig.space,
             core.Tokenizer: rig.tokenizer, core.ModelLocator: FakeModels(Settings())}
    for port, obj in built.items():
        assert isinstance(obj, port), port.__name__
    prior = word_prior(rig.space)          # the product's own prior class, over the fake
    assert isinstance(prior, CountsPrior) and drift(CountsPrior, TokenPrior) == []
    assert prior.counts().shape == (len(rig.space.matrix),) and prior.counts().sum() > 0


def test_the_model_manager_fake_keeps_what_the_application_calls():
    assert drift(FakeModels, ModelManager,
                 ["download", "install", "path", "spec", "status", "target", "use"]) == []


def test_the_detector_host_keeps_the_child_process_interface():
    assert drift(InProcessDetector, DetectorProcess) == []


def test_the_central_store_fake_keeps_its_protocol():
    assert drift(MemorySink, CentralAuditSink) == []


def test_drift_is_caught():
    class Drifted(ScriptedSLM):
        def run(self, task, text, on_token=None):      # no cancel: the core passes one
            return text

    assert drift(Drifted, core.LanguageModel) == [
        "run: (self, task, text, on_token=None) instead of "
        "(self, task: 'Task', text: 'str', on_token: 'Callable[[str], None] | None' = None, "
        "cancel: 'threading.Event | None' = None) -> 'str'"]


def test_the_product_builds_the_real_backends():
    """Without ports, the composition root builds every backend from the runtime."""
    services = Services(Settings())
    assert services.ports == Ports()
    assert all(getattr(services.ports, f) is None for f in Ports.__dataclass_fields__)
