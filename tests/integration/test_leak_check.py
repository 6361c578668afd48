"""The leak check's own matching (preflight_eval.leak_check): a value on the wire in any
form the brief names is found, and look-alikes are not; a part of a value alone on the
wire is a partial leak, counted apart. Fast: no model, no server."""

from __future__ import annotations

import json

import pytest

from preflight_eval.leak_check import Inserted, LeakReport, Wire, background, letters

HEAD = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\n")


def wire(body: object, head: bytes = HEAD, ensure_ascii: bool = True) -> Wire:
    return Wire(head, json.dumps(body, ensure_ascii=ensure_ascii).encode("utf-8"))


def chat(text: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def test_verbatim_and_json_escaped_values_are_found():
    name = Inserted("PERSON", "José Müller")
    assert wire(chat("Hello José Müller")).holds(name)                      # \u00e9 escapes
    assert wire(chat("Hello José Müller"), ensure_ascii=False).holds(name)  # raw UTF-8
    street = Inserted("ADDRESS", "12 Oak Street\nApt. 3")
    assert wire(chat("at 12 Oak Street\nApt. 3")).holds(street)             # \n escape


def test_normalized_variants_are_found():
    assert wire(chat("JOSÉ  MÜLLER wrote")).holds(Inserted("PERSON", "José Müller"))
    assert wire(chat("mail Ann.Lee@Example.COM")).holds(Inserted("EMAIL", "ann.lee@example.com"))
    card = Inserted("CARD", "4111111111111111")
    assert wire(chat("card 4111 1111-1111.1111")).holds(card)
    phone = Inserted("PHONE", "(415) 555-0198x1234")
    assert wire(chat("call +1 415 555 0198")).holds(phone)
    assert wire(chat("IBAN gb82west12345698765432")).holds(
        Inserted("IBAN", "GB82 WEST 1234 5698 7654 32"))


def test_headers_and_url_are_searched():
    key = Inserted("API_KEY", "sk-abc123XYZ")
    assert Wire(HEAD + b"X-Note: sk-abc123XYZ\r\n", b"{}").holds(key)
    assert Wire(b"POST /v1/x?q=sk%2Dabc123XYZ HTTP/1.1\r\n", b"").holds(key)


def test_replaced_or_partial_values_are_not_whole_leaks():
    assert not wire(chat("Dear <PERSON_1>, José")).holds(Inserted("PERSON", "José Müller"))
    card = Inserted("CARD", "4111111111111111")
    assert not wire(chat("card **** **** **** 1111")).holds(card)
    assert not wire(chat("4111 1111 then x 1111 1111")).holds(card)
    assert not wire(chat("key sk-abc123xyz")).holds(Inserted("API_KEY", "sk-abc123XYZ"))


def test_letters_keep_what_they_inserted():
    first, second = letters(2)
    assert letters(2)[0] == first                      # seeded: the same corpus every run
    kinds = [item.kind for item in first.inserted]
    assert kinds.count("PERSON") == 2 and len(kinds) == 9
    for item in first.inserted + second.inserted:
        assert item.value and item.value in (first.text if item in first.inserted
                                             else second.text), item
    assert first.text != second.text


@pytest.mark.parametrize("kind, value, sent, parts", [
    # a surname alone, a given name alone, either half of a hyphenated surname
    ("PERSON", "José Müller", "Dear Mr <PERSON_1>, Müller's file is attached.", ["Müller"]),
    ("PERSON", "Anna Lindqvist", "Thanks ANNA, <PERSON_1> will call.", ["Anna"]),
    ("PERSON", "Søren Kierkegaard-Hansen", "ask Hansen in accounts",
     ["Hansen"]),
    # titles, suffixes, initials and two-letter words are not parts of a name
    ("PERSON", "Dr. Wei Li MD", "Dr. <PERSON_1> MD signed. Li is short.", []),
    ("PERSON", "J. Robert Oakes", "J. <PERSON_1> wrote", []),
    # four digits of a number in a row, separators on the wire ignored
    ("CARD", "4111 1111 1111 1234", "card **** **** **** 1234", ["1234"]),
    ("PHONE", "(415) 555-0198 x22", "call 555-0198 after six", ["5550", "5501", "5019", "0198"]),
    ("SSN", "078-05-1120", "SSN ending 1120 on file", ["1120"]),
    ("PHONE", "(415) 555-0198", "ends in 198, extension 41", []),
    # half a key; the vendor prefix alone names no secret
    ("API_KEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "key sk_live_ then jWDarjtT1zdp7dc",
     ["jWDarjtT", "WDarjtT1", "DarjtT1z", "arjtT1zd", "rjtT1zdp", "jtT1zdp7", "tT1zdp7d",
      "T1zdp7dc"]),
    ("API_KEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "key sk_live_<API_KEY_1>", []),
    ("EMAIL", "ann.lindqvist@example.org", "write to ann.lindqvist at work", ["ann.lindqvist"]),
])
def test_a_part_of_a_value_alone_is_a_partial_leak(kind, value, sent, parts):
    item = Inserted(kind, value)
    w = wire(chat(sent))
    assert not w.holds(item)
    assert w.parts(item) == parts


def test_a_whole_value_is_not_also_a_partial_one():
    assert wire(chat("Dear José Müller")).parts(Inserted("PERSON", "José Müller")) == []


def test_a_part_the_document_also_uses_counts_only_beyond_its_own_uses():
    letter = "In April we met April Lee about the 2024 budget and card 4111 1111 1111 2024."
    inserted = (Inserted("PERSON", "April Lee"), Inserted("CARD", "4111 1111 1111 2024"))
    rest = background(letter, inserted)
    name, card = inserted
    sanitized = wire(chat("In April we met <PERSON_1> about the 2024 budget and card <CARD_1>."))
    assert sanitized.parts(name, rest) == [] and sanitized.parts(card, rest) == []
    given = wire(chat("In April we met April about the 2024 budget and card <CARD_1>."))
    assert given.parts(name, rest) == ["April"]
    four = wire(chat("In April we met <PERSON_1> about the 2024 budget and card ****2024."))
    assert four.parts(card, rest) == ["2024"]


def test_the_report_counts_whole_and_partial_leaks_apart():
    report = LeakReport("placeholder")
    wires = [wire(chat("Dear Jessica Smith, Aguilar and <PERSON_2> agreed."))]
    for item in (Inserted("PERSON", "Jessica Smith"), Inserted("PERSON", "Teresa Aguilar"),
                 Inserted("PERSON", "Brandon Conner")):
        report.record(item, wires, rest="Dear , and agreed.")
    assert (report.checked["PERSON"], report.leaked["PERSON"], report.partial["PERSON"]) == \
        (3, 1, 1)
    assert report.partials == [("PERSON", "Teresa Aguilar", ("Aguilar",))]
    assert "leaked whole   1" in report.line() and "in part   1 (PERSON 1)" in report.line()
