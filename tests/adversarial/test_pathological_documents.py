"""A document that is mostly identifiers (a mailing list, an export of addresses) is
detected, sanitized and re-scanned in time that grows linearly with it: no step may do
one pass over the text per value found (70,000 addresses in 1 MB had not been sent after
20 minutes). Timings are CPU seconds of this process (other jobs on the machine matter
less) and only their growth is checked, with room for noise: linear work grows 4x when
the document does, one pass per value 16x. The real numbers, with the NER model, come
from ``python -m preflight_eval.bench_detect_limits --identifiers 5000,20000,70000``."""

from __future__ import annotations

import gc
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _sessions import session_for  # noqa: E402

from preflight.core.config import ProviderSettings  # noqa: E402
from preflight.core.pii.detector import PiiDetector  # noqa: E402
from preflight.core.pii.recognizers.base import NER_EVIDENCE  # noqa: E402
from preflight.core.sanitize.base import SanitizeParams  # noqa: E402
from preflight.core.sanitize.policy import find_policy  # noqa: E402
from preflight.core.sanitize.policy_apply import PolicyMechanism  # noqa: E402
from preflight.core.tasks import SUMMARIZE  # noqa: E402
from preflight.core.types import Category, Span  # noqa: E402

SMALL, LARGE = 1_500, 6_000
ALLOWED_GROWTH = 8.0     # linear: 4; a pass per value: 16
FLOOR_S = 0.3            # below this a stage's time is mostly constant overhead


def mailing_list(n: int) -> str:
    """A members export: one line per person, name and address (each address distinct,
    names and domains repeating, as in a real list)."""
    first = ["Ana", "Bilal", "Chen", "Dana", "Emil", "Fatou", "Goran", "Hana", "Ivo", "Jana"]
    last = ["Lindqvist", "Okafor", "Moreau", "Novak", "Tanaka", "Weber", "Costa", "Ivanova"]
    domains = ["northwind-traders.com", "contoso-mail.de", "fabrikam.co.uk", "example.org"]
    return "\n".join(
        f"{first[i % 10]} {last[i % 8]}: {first[i % 10].lower()}.{last[i % 8].lower()}{i}"
        f"@{domains[i % 4]}" for i in range(n))


def cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def pipeline(n: int, tmp_path: Path) -> dict[str, float]:
    """CPU seconds of what a send runs before asking: detection (every recognizer but the
    NER model, and all of Preflight's passes over their results), sanitization under the
    default policy, and the plan with its re-scan of the request body."""
    text = mailing_list(n)
    detector = PiiDetector()
    spans, t_detect = cpu(lambda: detector.detect(text))
    assert sum(s.type == "EMAIL_ADDRESS" for s in spans) == n
    mech = PolicyMechanism(find_policy("identifiers"))
    out, t_sanitize = cpu(lambda: mech.sanitize(text, spans, SanitizeParams(seed=1)))
    assert "@northwind-traders.com" not in out.text
    provider = ProviderSettings("loop", "http://127.0.0.1:9/v1", "m", key_env="PF_TEST_KEY")
    session = session_for(provider, tmp_path / str(n), detector=detector)
    plan, t_plan = cpu(lambda: session.prepare_send(
        text, None, "identifiers", SanitizeParams(seed=1), SUMMARIZE, spans=spans,
        sanitized=out, vault=mech.vault))
    assert [f.kind for f in plan.findings if f.blocking] == ["degraded"]   # no NER model
    return {"detect": t_detect, "sanitize": t_sanitize, "plan": t_plan}


@pytest.mark.slow
def test_a_document_of_addresses_is_processed_in_linear_time(tmp_path):
    (tmp_path / "warm").mkdir()
    pipeline(200, tmp_path / "warm")           # imports, caches, first-use setup
    small = pipeline(SMALL, tmp_path)
    large = pipeline(LARGE, tmp_path)
    for stage, took in large.items():
        assert took <= ALLOWED_GROWTH * max(small[stage], FLOOR_S), (stage, small, large)


# -- each step alone, on given detections (no recognizer runs): 8x the document ----------

STEP_SMALL, STEP_LARGE = 2_000, 16_000
STEP_GROWTH = 20.0       # linear: 8; a pass per value: 64
STEP_FLOOR_S = 0.05


def given_spans(text: str) -> list[Span]:
    """What a detector reports on the mailing list: the name and the address of each
    line."""
    found = [Span(m.start(), m.end(), "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER, 1.0,
                  "EmailRecognizer", "pattern") for m in re.finditer(r"\S+@\S+", text)]
    found += [Span(m.start(), m.end(), "PERSON", Category.DIRECT_IDENTIFIER, 0.85,
                   "SpacyRecognizer", "ner", NER_EVIDENCE)
              for m in re.finditer(r"^\w+ \w+", text, re.M)]
    return sorted(found, key=lambda s: s.start)


def step_growth(setup: Callable[[str, list[Span]], Callable[[], Any]]) -> float:
    """CPU time of the step ``setup(text, spans)`` returns, on the large list over the
    small one (floored); the setup itself is not timed."""
    small = mailing_list(50)
    setup(small, given_spans(small))()                            # first-use setup
    took = []
    for n in (STEP_SMALL, STEP_LARGE):
        text = mailing_list(n)
        step = setup(text, given_spans(text))
        took.append(max(min(quiet_cpu(step) for _ in range(2)), STEP_FLOOR_S))
    return took[1] / took[0]


def quiet_cpu(step: Callable[[], Any]) -> float:
    """CPU seconds of ``step`` without the garbage collector's pauses (they grow with
    everything alive in the test process, not with the step)."""
    gc.collect()
    gc.disable()
    try:
        return cpu(step)[1]
    finally:
        gc.enable()


def sanitized(text: str, spans: list[Span]) -> Any:
    return PolicyMechanism(find_policy("identifiers")).sanitize(text, spans,
                                                                SanitizeParams(seed=1))


def test_placeholder_numbering_grows_linearly():
    assert step_growth(lambda text, spans: lambda: sanitized(text, spans)) <= STEP_GROWTH


def test_value_propagation_grows_linearly():
    from preflight.core.pii.propagate import propagate_values

    assert step_growth(lambda text, spans: lambda: propagate_values(text, spans)) \
        <= STEP_GROWTH


def test_the_rescan_grows_linearly():
    from preflight.core.send.providers import create_client
    from preflight.core.send.rescan import rescan

    class Quiet:
        warnings: list[str] = []

        def detect(self, text: str) -> list[Span]:
            return []

    client = create_client(ProviderSettings("p", "http://127.0.0.1:9/v1", "m"))

    def setup(text: str, spans: list[Span]) -> Callable[[], Any]:
        out = sanitized(text, spans[::2])     # half the values left in: those leak
        request = client.build_request(SUMMARIZE, out.text)
        return lambda: rescan(Quiet(), text, out, request, spans)

    assert step_growth(setup) <= STEP_GROWTH


def test_plan_features_grow_linearly():
    from preflight.core.utility.features import fast_features

    def setup(text: str, spans: list[Span]) -> Callable[[], Any]:
        out = sanitized(text, spans[::2])
        return lambda: fast_features(text, out, spans)

    assert step_growth(setup) <= STEP_GROWTH


# -- what the single passes find --------------------------------------------------------

def test_the_one_pass_rescan_still_finds_overlapping_and_nested_values():
    """What one search per value found, the single pass finds too: values that overlap
    ("Anna Berg" / "Berg Holding"), a value inside a longer one that also occurs alone
    ("Martin"), in any case; one finding per value."""
    from preflight.core.send.providers import create_client
    from preflight.core.send.rescan import rescan
    from preflight.core.types import SanitizedText

    text = ("Anna Berg Holding signed. MARTIN LUNDSTEDT met Martin and martin\nlundstedt; "
            "Martina did not.")
    names = ["Anna Berg", "Berg Holding", "Martin Lundstedt", "Martin"]
    spans = [Span(text.index(v) if v != "Martin Lundstedt" else text.index("MARTIN"),
                  (text.index(v) if v != "Martin Lundstedt" else text.index("MARTIN")) + len(v),
                  "PERSON", Category.DIRECT_IDENTIFIER, 0.9, "test", "") for v in names]
    assert text[spans[3].start:spans[3].end] == "Martin"

    class Quiet:
        warnings: list[str] = []

        def detect(self, text: str) -> list[Span]:
            return []

    unchanged = SanitizedText(text, "identity", ())
    request = create_client(ProviderSettings("p", "http://127.0.0.1:9/v1", "m")).build_request(
        SUMMARIZE, text)
    found = {(f.value, f.start) for f in rescan(Quiet(), text, unchanged, request, spans)
             if f.kind == "leak" and f.part == "document"}
    assert ("Anna Berg", 0) in found and ("Berg Holding", 5) in found
    assert ("MARTIN LUNDSTEDT", text.index("MARTIN")) in found
    assert ("Martin", text.index("Martin and")) in found
    assert not any(v.startswith("Martina") for v, _ in found)


def test_values_left_in_the_payload_are_counted_in_one_pass():
    """The plan's "identifiers left" feature: exact substrings, prefixes and overlaps."""
    from preflight.core.utility.features import values_present

    text = "Martin Lundstedt met Martin; lundstedt@x.example wrote to Lundstedt."
    values = {"Martin", "Martin Lundstedt", "Lundstedt", "lundstedt@x.example",
              "Martina", "x.example", "Stockholm", "martin"}
    assert values_present(values, text) == {v for v in values if v in text}
