"""Restoring placeholders and surrogates: round trips, tolerant answers, streaming."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _change_checks import documents, span
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import (
    PLACEHOLDER,
    SURROGATE,
    StreamRestorer,
    Vault,
    VaultEntry,
    restore,
    find_tokens,
    is_secret_type,
    withheld_note,
)

REVERSIBLE = ["placeholder", "pseudonym"]


def sanitize(method: str, text: str, spans, seed: int | None = 3):
    mech = create_mechanism(method)
    result = mech.sanitize(text, spans, SanitizeParams(seed=seed))
    mech.vault.bind(result.text)    # as the product does: restore knows its own document
    return result, mech.vault


# -- round trips --------------------------------------------------------------------------

@pytest.mark.parametrize("method", REVERSIBLE)
@settings(max_examples=250, deadline=None)
@given(doc=documents(max_parts=16), seed=st.integers(0, 2**32))
def test_restore_inverts_sanitize(method, doc, seed):
    text, spans = doc
    result, vault = sanitize(method, text, spans, seed)
    assert restore(result.text, vault) == text


@pytest.mark.parametrize("method", REVERSIBLE)
@settings(max_examples=100, deadline=None)
@given(doc=documents(max_parts=16))
def test_restore_survives_a_saved_vault(method, doc, tmp_path_factory):
    text, spans = doc
    result, vault = sanitize(method, text, spans)
    path = vault.save(tmp_path_factory.mktemp("v") / "vault.json")
    assert restore(result.text, Vault.load(path)) == text


FIXED = "Dear Ann Lee,\r\nyour card 4111 1111 1111 1111 (Ann Lee, ann.lee@x.org) was charged."
FIXED_SPANS = [("Ann Lee", "PERSON"), ("4111 1111 1111 1111", "CREDIT_CARD"),
               ("Ann Lee", "PERSON", 1), ("ann.lee@x.org", "EMAIL_ADDRESS")]


@pytest.mark.parametrize("method", REVERSIBLE)
def test_restore_fixed_document(method):
    result, vault = sanitize(method, FIXED, [span(FIXED, *s) for s in FIXED_SPANS])
    assert "Ann Lee" not in result.text and "4111" not in result.text
    assert restore(result.text, vault) == FIXED
    assert len(vault) == 3


# -- tolerant restore of answers ------------------------------------------------------------

@pytest.fixture()
def ph_vault():
    text = "Ann Lee met Bob at Acme; mail ann@acme.com."
    _, vault = sanitize("placeholder", text, [
        span(text, "Ann Lee", "PERSON"), span(text, "Bob", "PERSON"),
        span(text, "Acme", "ORGANIZATION"), span(text, "ann@acme.com", "EMAIL_ADDRESS"),
    ])
    return vault


@pytest.mark.parametrize("answer, expected", [
    ("<PERSON_1> met <PERSON_2>.", "Ann Lee met Bob."),
    ("PERSON_1 met PERSON_2.", "Ann Lee met Bob."),
    ("<person_1> met <Person_2>.", "Ann Lee met Bob."),
    ("<PERSON_1>'s meeting", "Ann Lee's meeting"),
    ("PERSON_1's meeting", "Ann Lee's meeting"),
    ("[PERSON_1] and {PERSON_2}", "Ann Lee and Bob"),
    ("< PERSON_1 > wrote", "Ann Lee wrote"),
    ("Person 1 wrote to PERSON-2", "Ann Lee wrote to Bob"),
    ("PERSON1 wrote", "Ann Lee wrote"),
    ("&lt;PERSON_1&gt; wrote", "Ann Lee wrote"),
    ("Write to <EMAIL_ADDRESS_1> or EMAIL ADDRESS 1", "Write to ann@acme.com or ann@acme.com"),
    ("**<ORGANIZATION_1>**", "**Acme**"),
    ("(<PERSON_2>)", "(Bob)"),
    # not ours: left alone
    ("<PERSON_9> and PERSON_10 and PERSON_12", "<PERSON_9> and PERSON_10 and PERSON_12"),
    ("XPERSON_1 and PERSON_1234", "XPERSON_1 and PERSON_1234"),
    ("<PERSON_01>", "<PERSON_01>"),
    ("no tokens at all", "no tokens at all"),
])
def test_tolerant_placeholder_restore(ph_vault, answer, expected):
    assert restore(answer, ph_vault) == expected


def _surrogate_vault(*entries: tuple[str, str, bool]) -> Vault:
    vault = Vault()
    vault.reset("pseudonym", "", [VaultEntry(tok, "X", orig, SURROGATE, (), glued)
                                  for tok, orig, glued in entries])
    return vault


@pytest.mark.parametrize("answer, expected", [
    ("Rome is big.", "Paris is big."),
    ("Romeo in Rome.", "Romeo in Paris."),
    ("Rome's streets", "Paris's streets"),
    ("rome", "rome"),                       # surrogates are case-sensitive
    ("Anna Rome met Anna", "Maria Keller met Maria"),  # longest surrogate first
    ("xKimy", "xTomy"),                     # glued surrogates match inside words
])
def test_surrogate_restore_respects_word_boundaries(answer, expected):
    vault = _surrogate_vault(("Rome", "Paris", False), ("Anna Rome", "Maria Keller", False),
                             ("Anna", "Maria", False), ("Kim", "Tom", True))
    assert restore(answer, vault) == expected


def test_exact_forms_only_when_counts_match():
    text = "ANN LEE and Ann Lee"
    result, vault = sanitize("placeholder", text, [span(text, "ANN LEE", "PERSON"),
                                                   span(text, "Ann Lee", "PERSON")])
    assert result.text == "<PERSON_1> and <PERSON_1>"
    assert restore(result.text, vault) == text
    assert restore(result.text, vault, exact_forms=False) == "ANN LEE and ANN LEE"
    assert restore("<PERSON_1>", vault) == "ANN LEE"


@pytest.mark.parametrize("method", REVERSIBLE)
def test_an_encoded_spelling_shares_the_token_and_is_restored_legibly(method):
    # A pasted header writes the name as a MIME encoded word, the body as text; a zero-width
    # space hides inside the second spelling of the address.
    text = ("From: =?ISO-8859-1?Q?J=F8rgen_Thomsen?= <jt@x.net>\n\nJørgen Thomsen wrote "
            "from jt@x\u200b.net.")
    spans = [span(text, "=?ISO-8859-1?Q?J=F8rgen_Thomsen?=", "PERSON"),
             span(text, "jt@x.net", "EMAIL_ADDRESS"),
             span(text, "Jørgen Thomsen", "PERSON"),
             span(text, "jt@x\u200b.net", "EMAIL_ADDRESS")]
    result, vault = sanitize(method, text, spans)
    assert len(vault.entries) == 2, "one token per value, whatever its spelling"
    person = next(e for e in vault.entries if e.type == "PERSON")
    assert person.original == "Jørgen Thomsen"
    assert restore(result.text, vault) == text          # the document comes back exactly
    answer = f"{person.token} asked about it."
    assert restore(answer, vault, exact_forms=False) == "Jørgen Thomsen asked about it."
    email = next(e for e in vault.entries if e.type == "EMAIL_ADDRESS")
    assert email.original == "jt@x.net"


def test_empty_vault_restores_nothing():
    assert restore("<PERSON_1> PERSON_1", Vault()) == "<PERSON_1> PERSON_1"
    sr = StreamRestorer(Vault())
    assert sr.feed("<PERSON_1>") + sr.flush() == "<PERSON_1>"


# -- streaming ------------------------------------------------------------------------------

def _stream(vault: Vault, chunks: list[str]) -> str:
    sr = StreamRestorer(vault)
    return "".join(sr.feed(c) for c in chunks) + sr.flush()


@pytest.fixture(scope="module")
def mixed_vault() -> Vault:
    vault = Vault()
    vault.reset("test", "", [
        VaultEntry("<PERSON_1>", "PERSON", "Ann Lee", PLACEHOLDER),
        VaultEntry("<PERSON_12>", "PERSON", "Bob", PLACEHOLDER),
        VaultEntry("<EMAIL_ADDRESS_1>", "EMAIL_ADDRESS", "ann@x.org", PLACEHOLDER),
        VaultEntry("Maria Lopez", "PERSON", "Eva Ng", SURROGATE),
        VaultEntry("Maria", "PERSON", "Eva", SURROGATE),
        VaultEntry("Kim", "PERSON", "Tom", SURROGATE, glued=True),
    ])
    return vault


ANSWER = ("<PERSON_1>'s note: PERSON_12 wrote to <email_address_1>; Maria Lopez and Maria "
          "(not Mariana) met PERSON_1 and xKimx. <PERSON_2> stays. Maria Lo")


def test_stream_every_two_way_split(mixed_vault):
    expected = restore(ANSWER, mixed_vault, exact_forms=False)
    assert "Ann Lee's note: Bob wrote to ann@x.org; Eva Ng and Eva (not Mariana)" in expected
    for i in range(len(ANSWER) + 1):
        assert _stream(mixed_vault, [ANSWER[:i], ANSWER[i:]]) == expected, i


def test_stream_every_three_way_split_of_a_token(mixed_vault):
    text = "a <PERSON_12> Maria Lopez b"
    expected = restore(text, mixed_vault, exact_forms=False)
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            assert _stream(mixed_vault, [text[:i], text[i:j], text[j:]]) == expected, (i, j)


def test_stream_one_character_at_a_time(mixed_vault):
    assert _stream(mixed_vault, list(ANSWER)) == restore(ANSWER, mixed_vault, exact_forms=False)


def test_stream_holds_back_only_a_possible_token(mixed_vault):
    sr = StreamRestorer(mixed_vault)
    assert sr.feed("Hello <PERS") == "Hello "
    assert sr.feed("ON_1> and Mar") == "Ann Lee and "
    assert sr.feed("ia Lopez, done") == "Eva Ng, done"
    assert sr.flush() == ""


@settings(max_examples=200, deadline=None)
@given(doc=documents(max_parts=10), cuts=st.lists(st.integers(0, 200), max_size=6),
       method=st.sampled_from(REVERSIBLE))
def test_stream_equals_whole_restore_for_any_chunking(doc, cuts, method):
    text, spans = doc
    result, vault = sanitize(method, text, spans)
    out = result.text
    points = sorted({min(c, len(out)) for c in cuts})
    chunks = [out[a:b] for a, b in zip([0] + points, points + [len(out)])]
    # The stream restores an answer: secrets (and tokens in links) stay placeholders, and
    # a note beside the answer says so.
    whole = restore(out, vault, exact_forms=False, secrets=False, in_links=False)
    secret = [e.token for _, _, e in find_tokens(out, vault) if is_secret_type(e.type)]
    sr = StreamRestorer(vault)
    assert "".join(sr.feed(c) for c in chunks) + sr.flush() == whole
    assert (withheld_note(secret) in sr.notes()) is bool(secret)


@settings(max_examples=200, deadline=None)
@given(answer=st.lists(st.sampled_from([
    "<PERSON_1>", "PERSON_12", "<email_address_1>", "Maria Lopez", "Maria", "Kim", "Mari",
    "<PERS", "PERSON_", " ", "x", "1", "2", "'s", "\r\n", "é", "<", ">", "_"]), max_size=20),
    cuts=st.lists(st.integers(0, 200), max_size=8))
def test_stream_equals_whole_restore_on_answer_like_text(mixed_vault, answer, cuts):
    text = "".join(answer)
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    assert _stream(mixed_vault, chunks) == restore(text, mixed_vault, exact_forms=False)
