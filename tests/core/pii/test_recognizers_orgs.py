"""Organizations by their cue: prisons, hospitals, schools, police stations and courts
named after their town or street (``FacilityRecognizer``), checked by the detector like
the NER model's guesses."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.orgs import FacilityRecognizer

from pii_testutil import run


@pytest.mark.parametrize("text,value", [
    ("After his arrest he was held at Wandsworth Prison for a week.", "Wandsworth Prison"),
    ("He was questioned at the Kelso police station on Monday.", "Kelso police station"),
    ("She was treated at St Olav Hospital after the fall.", "St Olav Hospital"),
    ("Their son attends Lindholm Primary School.", "Lindholm Primary School"),
    ("The Tromsø court adjourned the hearing.", "Tromsø court"),
])
def test_named_facilities(text, value):
    assert ("ORGANIZATION", value) in run(FacilityRecognizer(), text)


@pytest.mark.parametrize("text", [
    "The court adjourned the hearing.",
    "He walked to the police station.",
    "The School of Law admits 200 students.",
])
def test_unnamed_facilities(text):
    assert run(FacilityRecognizer(), text) == []


@pytest.mark.parametrize("text,expected", [
    ("After his arrest he was held at Wandsworth Prison and later at the Kelso police "
     "station.", ["Wandsworth Prison", "Kelso police station"]),
    ("Yesterday hospital staff met the Supreme Court's registrar.", []),
])
def test_detector_keeps_named_facilities_only(real_detector, text, expected):
    orgs = [text[s.start:s.end] for s in real_detector.detect(text)
            if s.type == "ORGANIZATION"]
    assert orgs == expected


@pytest.mark.parametrize("text,person", [
    ("Yesterday I asked Bartosz Wiśniewski police officers to wait outside.",
     "Bartosz Wiśniewski"),
])
def test_a_person_before_a_facility_word_stays_a_person(real_detector, text, person):
    spans = real_detector.detect(text)
    assert [text[s.start:s.end] for s in spans if s.type == "PERSON"] == [person]
    assert not [s for s in spans if s.type == "ORGANIZATION"]
