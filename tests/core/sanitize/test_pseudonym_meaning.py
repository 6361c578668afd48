"""Pseudonyms that keep what the text relies on (issue 15, item 10): the gender of a first
name, a first name for a first name, a name (never a nationality) for a name the NER
model called a group, and the order of amounts of money ("a raise stays a raise")."""

from __future__ import annotations

import re

import pytest

from _change_checks import assert_change_invariants, span
from preflight.core.pii.person_evidence import given_name_gender, given_names, group_shaped
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import restore

SEEDS = range(12)


def pseudonymize(text: str, spec, seed: int):
    mech = create_mechanism("pseudonym")
    out = mech.sanitize(text, [span(text, *s) for s in spec], SanitizeParams(seed=seed))
    assert_change_invariants(text, out)
    return out, mech


def stand_in(out, original: str) -> str:
    (change,) = [c for c in out.changes if c.original == original]
    return change.replacement


@pytest.mark.parametrize("first,gender", [
    ("Priya", "female"), ("Maria", "female"), ("Anjali", "female"),
    ("John", "male"), ("Pierre", "male"), ("Arjun", "male"),
])
def test_the_first_name_keeps_its_gender(first, gender):
    text = f"{first} Sharma asked for her review; {first} will call back."
    for seed in SEEDS:
        out, _ = pseudonymize(text, [(f"{first} Sharma", "PERSON")], seed)
        new_first = stand_in(out, f"{first} Sharma").split()[0]
        assert given_name_gender(new_first) == gender, (seed, new_first)


def test_a_lone_first_name_stays_a_first_name_and_a_title_stays():
    text = "Hi Priya, Mrs. Patel approved the budget."
    for seed in SEEDS:
        out, _ = pseudonymize(text, [("Priya", "PERSON"), ("Mrs. Patel", "PERSON")], seed)
        priya = stand_in(out, "Priya")
        assert priya.casefold() in given_names() and given_name_gender(priya) == "female"
        assert stand_in(out, "Mrs. Patel").startswith("Mrs. ")


def test_a_given_name_tagged_as_a_group_becomes_a_name_not_a_nationality():
    text = "Thanks to Priya for the Dutch numbers."
    for seed in SEEDS:
        out, _ = pseudonymize(text, [("Priya", "NRP"), ("Dutch", "NRP")], seed)
        priya = stand_in(out, "Priya")
        assert given_name_gender(priya) == "female", priya
        dutch = stand_in(out, "Dutch")                    # a real group stays a group
        assert group_shaped(dutch) and dutch.casefold() not in given_names(), dutch


def _amount(text: str) -> float:
    return float(re.search(r"[\d,]+(?:\.\d+)?", text).group().replace(",", ""))


def test_amounts_keep_their_order_and_ratio_and_are_restored():
    text = ("Following the review, Sofia's salary goes from $85,000 to $92,000 from March; "
            "the signing bonus of $4,500.00 is paid once.")
    spec = [("$85,000", "PAYMENT"), ("$92,000", "PAYMENT"), ("$4,500.00", "PAYMENT")]
    changed = 0
    for seed in SEEDS:
        out, mech = pseudonymize(text, spec, seed)
        old, new, bonus = (stand_in(out, v) for v, _ in spec)
        assert _amount(old) < _amount(new)                       # still a raise
        assert _amount(new) / _amount(old) == pytest.approx(92 / 85, rel=1e-3)
        assert re.fullmatch(r"\$\d{1,3},\d{3}", old) and re.fullmatch(r"\$\d,\d{3}\.\d\d", bonus)
        changed += old != "$85,000"
        assert restore(out.text, mech.vault) == text
    assert changed == len(SEEDS)


# Everyday names whose surnames and given names a name generator draws often.
_STAFF = ("Michael Smith", "Jennifer Johnson", "David Williams", "Sarah Brown",
          "James Jones", "Mary Miller", "Robert Davis", "Linda Garcia")
_CARDS = ("4539 1488 0343 6467", "5500 0055 5555 5559", "4111 1111 1111 1111")


def test_no_stand_in_repeats_a_part_of_a_real_value():
    """A surname alone is a leak: no stand-in name or firm carries a word of a protected
    value, and no stand-in number a run of four digits of the real one — whatever the
    seed."""
    text = "Staff on the rota: " + ", ".join(_STAFF) + ". Cards on file: " + "; ".join(
        _CARDS) + (". Dr Smith signs for Johnson, Davis and Partners; call Ms Brown on "
                   "+44 20 7946 0958.")
    spec = [(n, "PERSON") for n in _STAFF] + [(c, "CREDIT_CARD") for c in _CARDS] + [
        ("Dr Smith", "PERSON"), ("Ms Brown", "PERSON"), ("+44 20 7946 0958", "PHONE_NUMBER"),
        ("Johnson, Davis and Partners", "ORGANIZATION")]
    words = {w.casefold() for value, _ in spec for w in re.findall(r"[A-Z][^\W\d_]{2,}", value)}
    for seed in range(25):
        out, _ = pseudonymize(text, spec, seed)
        for change in out.changes:
            if not any(ch.isdigit() for ch in change.original):
                new = set(re.findall(r"[^\W\d_]{3,}", change.replacement.casefold()))
                assert not new & words, (seed, change.original, change.replacement)
            else:
                real = re.sub(r"\D", "", change.original)
                new = re.sub(r"\D", "", change.replacement)
                # the country code is kept on purpose ("+44"): runs of four only
                assert not any(new[i:i + 4] in real for i in range(len(new) - 3)), (
                    seed, change.original, change.replacement)
