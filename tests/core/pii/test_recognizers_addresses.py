"""Street addresses (US/UK), PO boxes, military addresses."""

from __future__ import annotations

import pytest
from presidio_analyzer import RecognizerResult

from preflight.core.pii.recognizers.addresses import StreetAddressRecognizer


def best(text: str, threshold: float = 0.35) -> str | None:
    results: list[RecognizerResult] = [
        r for r in StreetAddressRecognizer().analyze(text, None, None) if r.score >= threshold
    ]
    if not results:
        return None
    r = max(results, key=lambda r: (r.end - r.start, r.score))
    return text[r.start:r.end]


FOUND = [
    ("Office: 1600 Pennsylvania Avenue NW, Washington, DC 20500.",
     "1600 Pennsylvania Avenue NW, Washington, DC 20500"),
    ("Send it to 083 Crosby Plaza Apt. 533\nFarleytown, MT 73436 please",
     "083 Crosby Plaza Apt. 533\nFarleytown, MT 73436"),
    ("at 7070 Warner Ridges Suite 228, North Kaylee, ND 72372-1234.",
     "7070 Warner Ridges Suite 228, North Kaylee, ND 72372-1234"),
    ("We met at 221B Baker Street, London NW1 6XE today",
     "221B Baker Street, London NW1 6XE"),
    ("Flat 0\nFrancesca Plains\nSouth Joyceborough\nSR08 7UX", "Flat 0\nFrancesca Plains\nSouth Joyceborough\nSR08 7UX"),
    ("She lives at 12 Oak Street.", "12 Oak Street"),
    ("Mail to PO Box 1234, Springfield, IL 62701.", "PO Box 1234, Springfield, IL 62701"),
    ("P.O. Box 77 is ours", "P.O. Box 77"),
    ("PSC 1241, Box 5868\nAPO AP 25384", "PSC 1241, Box 5868\nAPO AP 25384"),
    ("USNS Wilson\nFPO AE 12345", "USNS Wilson\nFPO AE 12345"),
    ("home address: 45 Maple Ridge", "45 Maple Ridge"),      # weak suffix + address cue
    ("Springfield, Illinois addresses: 9 Elm Rd, Springfield, Illinois 62701",
     "9 Elm Rd, Springfield, Illinois 62701"),
]


@pytest.mark.parametrize("text,expected", FOUND)
def test_address_found(text, expected):
    assert best(text) == expected


@pytest.mark.parametrize("text", [
    "Figure 3 Data Points show the trend.",     # weak suffix, no cue
    "We sent 12 Key Points to reviewers.",
    "In 2019 the street was quiet.",
    "Table 2 lists results.",
])
def test_not_an_address(text):
    assert best(text) is None
