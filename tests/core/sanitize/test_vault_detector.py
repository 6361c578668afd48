"""Round trips on real detector output (Presidio + spaCy): slow, loads the NER model."""

from __future__ import annotations

import pytest

from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import StreamRestorer, restore

pytestmark = pytest.mark.slow

TEXTS = [
    "Dear Maria Keller,\r\nthank you for your call from +49 30 1234567. Maria Keller's "
    "IBAN DE89 3704 0044 0532 0130 00 is on file; write to maria.keller@example.com.",
    "John Smith (born 1980-02-29) met JOHN SMITH's lawyer Tom Berg at Acme Corp in Boston "
    "on March 5, 2021. Card: 4111 1111 1111 1111. IP 192.168.1.20.",
    "Ünal Öztürk und Zoë Ng trafen sich in Zürich. 😀 PERSON_1 ist ein Platzhalter.\n"
    "Email zoe.ng@example.org, phone (415) 555-0132.",
]


@pytest.fixture(scope="module")
def detector():
    from preflight.core.pii.detector import PiiDetector

    det = PiiDetector()
    det.load()
    return det


@pytest.mark.parametrize("method", ["placeholder", "pseudonym"])
@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_on_detector_output(detector, method, text):
    spans = detector.detect(text)
    assert spans, "the detector found nothing; the test would prove nothing"
    mech = create_mechanism(method)
    result = mech.sanitize(text, spans, SanitizeParams(seed=1))
    for s in spans:
        value = text[s.start:s.end]
        if len(value) > 6:
            assert value not in result.text
    assert restore(result.text, mech.vault) == text
    sr = StreamRestorer(mech.vault)
    streamed = "".join(sr.feed(result.text[i:i + 7]) for i in range(0, len(result.text), 7))
    assert streamed + sr.flush() == restore(result.text, mech.vault, exact_forms=False)
