"""What "Everything detected" leaves out because it names nobody below a whole country
(docs/POLICIES.md): a nationality, a possessive public body, the year in a law's title;
and what it keeps detecting beside them (religious, political and ethnic groups, towns)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _typed(detector, text: str, value: str) -> list[str]:
    """The types of the spans that overlap ``value`` in ``text``."""
    start = text.index(value)
    return [s.type for s in detector.detect(text)
            if s.start < start + len(value) and start < s.end]


@pytest.mark.parametrize("word", [
    "Portuguese", "Norwegian", "Lebanese", "Kenyan", "Yemeni", "Slovak", "Peruvian",
    "South Korean", "Bangladeshi",
])
def test_the_adjective_of_a_country(word):
    from preflight.core.pii.countries import country_adjective

    assert country_adjective(word)


@pytest.mark.parametrize("word", [
    # groups of belief, politics or origin: sensitive, never a country's adjective
    "Anglican", "Bahai", "Liberal", "Romani", "Kurdish", "Christian", "Islamist", "Tamil",
    "Berber", "Sufi",
    # no adjective at all
    "Portugal", "Chad",
    # given names spelt like one ("Nor|man" / "Nor|way", "Mor|gan" / "Mor|occo")
    "Norman", "Morgan",
])
def test_not_the_adjective_of_a_country(word):
    from preflight.core.pii.countries import country_adjective

    assert not country_adjective(word)


@pytest.mark.parametrize("text, value", [
    ("Our new hire, a Polish national, starts in the Gdańsk office in June.", "Polish"),
    ("The supplier asked whether the Portuguese subsidiary had signed.", "Portuguese"),
    # the model calls it a person: a given name and a surname-shaped word
    ("The claimant is a Sierra Leonean national living in Croydon.", "Sierra Leonean"),
])
def test_a_nationality_is_not_detected(real_detector, text, value):
    assert _typed(real_detector, text, value) == []


@pytest.mark.parametrize("text, value", [
    ("The employee asked for leave on the Kurdish new year.", "Kurdish"),
    ("She has been an active member of the local Anglican parish since 2015.", "Anglican"),
])
def test_a_group_of_belief_or_origin_stays_detected(real_detector, text, value):
    assert _typed(real_detector, text, value) == ["NRP"]


@pytest.mark.parametrize("text, value", [
    # a possessive or plural institution
    ("The report was sent to the Commission’s Delegate for comment.",
     "Commission’s Delegate"),
    # the year in the title of a law
    ("The contract is subject to the Late Payment of Commercial Debts Act 1998 and to our "
     "terms.", "1998"),
    # the year written before the head
    ("Section 12 of the 1998 Act lets the supplier claim interest.", "1998"),
])
def test_names_nobody_below_a_country(real_detector, text, value):
    assert _typed(real_detector, text, value) == []


def test_the_town_of_a_local_body_stays_detected(real_detector):
    text = "The permit was refused by the Bexhill Town Council last spring."
    assert _typed(real_detector, text, "Bexhill") != []


@pytest.mark.parametrize("text, value", [
    ("Norman is busy with the quarterly figures, so send them tomorrow.", "Norman"),
    ("Please ask Morgan about the spare keys for the Leeds office.", "Morgan"),
])
def test_a_given_name_spelt_like_a_nationality_stays_a_person(real_detector, text, value):
    assert _typed(real_detector, text, value) == ["PERSON"]
