"""Fuzzing the reversible path: any text (control characters, every script, huge inputs)
goes detect → sanitize(placeholder) → vault file → restore without a crash or a hang, and
the round trip gives the original back character for character."""

from __future__ import annotations

import inspect
import re
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight.core.ports import Detector
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import Vault, restore
from preflight.core.sanitize.vault_file import check_vault_fits
from preflight.core.errors import InputError
from preflight.core.textio import decode_document
from preflight.core.types import Category, Span

NAMES = ("Ann Lee", "Zoë Ångström", "李小龙", "O'Neil-Smith", "ann@x.org", "+1 415 555 0132")
_PATTERN = re.compile("|".join(re.escape(n) for n in sorted(NAMES, key=len, reverse=True)))


class NameListDetector:
    """Detector protocol: flags the known names (fast, deterministic, non-overlapping)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def detect(self, text: str) -> list[Span]:
        return [Span(m.start(), m.end(), "EMAIL_ADDRESS" if "@" in m.group() else "PERSON",
                     Category.DIRECT_IDENTIFIER, 0.9, "fake", "listed name")
                for m in _PATTERN.finditer(text)]


def test_fake_detector_matches_the_protocol():
    assert isinstance(NameListDetector(), Detector)
    want = inspect.signature(Detector.detect).parameters
    assert list(inspect.signature(NameListDetector.detect).parameters) == list(want)


# Any Unicode except surrogates (not encodable as UTF-8), control characters included.
_CHARS = st.characters(exclude_categories=("Cs",))
_PIECES = st.one_of(st.text(_CHARS, max_size=40), st.sampled_from(NAMES),
                    st.sampled_from(("\r\n", "\n", "\t", "\x00", "\u200b", "<", ">", "_1")))
TEXTS = st.lists(_PIECES, max_size=30).map("".join)


def round_trip(text: str, detector, tmp_path) -> str:
    spans = detector.detect(text)
    mech = create_mechanism("placeholder")
    result = mech.sanitize(text, spans, SanitizeParams(seed=1))
    if spans:
        assert len(result.changes) == len(spans)      # every detected value was replaced
    vault: Vault = mech.vault
    vault.bind(result.text, "fuzz.txt")
    # one file per document: saving another document's vault over it is refused (by design)
    path = vault.save(tmp_path / f"vault-{uuid.uuid4().hex}.json")
    loaded = Vault.load(path)
    check_vault_fits(result.text, loaded)              # its own sanitized text always fits
    return restore(result.text, loaded)


@settings(max_examples=150, deadline=2000,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_round_trip_restores_exactly(text, tmp_path):
    assert round_trip(text, NameListDetector(), tmp_path) == text


@settings(max_examples=100, deadline=1000)
@given(text=TEXTS)
def test_decoding_utf8_and_utf16_gives_the_text_back(text):
    body = text.lstrip("\ufeff")          # a leading byte-order mark is dropped by design
    if b"\x00" in body.encode("utf-8")[:8192]:
        with pytest.raises(InputError, match="binary"):
            decode_document(body.encode("utf-8"))
    else:
        assert decode_document(body.encode("utf-8")) == body
    if not body.startswith("\x00"):   # FF FE 00 00 would be the UTF-32-LE mark: ambiguous
        assert decode_document("\ufeff".encode("utf-16-le") + body.encode("utf-16-le")) == body
    assert decode_document("\ufeff".encode("utf-16-be") + body.encode("utf-16-be")) == body


@pytest.mark.parametrize("size", [200_000, 900_000])
def test_huge_inputs_finish_quickly(size, tmp_path):
    unit = "Ann Lee met Zoë Ångström \x07 at 李小龙's; mail ann@x.org.\r\n"
    text = (unit * (size // len(unit) + 1))[:size]
    t0 = time.monotonic()
    assert round_trip(text, NameListDetector(), tmp_path) == text
    assert time.monotonic() - t0 < 60


@pytest.mark.slow
def test_round_trip_with_the_real_detector(tmp_path):
    pytest.importorskip("presidio_analyzer")
    from preflight.core.pii.detector import PiiDetector

    text = ("Dear Dr. Maria Lopez,\r\nyour MRI on 2024-03-05 at St. Mary's showed no tumour. "
            "Call +1 415-555-0132 or write to maria.lopez@example.com; card "
            "4111 1111 1111 1111.\x0c\tPERSON_1 and <PERSON_2> are literal text here.\n")
    detector = PiiDetector()
    assert detector.detect(text), "the real detector found nothing"
    assert round_trip(text, detector, tmp_path) == text
