"""The leak check's own matching (preflight_eval.leak_check): a value on the wire in any
form the brief names is found, and look-alikes are not. Fast: no model, no server."""

from __future__ import annotations

import json

from preflight_eval.leak_check import Inserted, Wire, letters

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


def test_replaced_or_partial_values_are_not_leaks():
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
