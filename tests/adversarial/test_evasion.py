"""Evasions of PII detection: for each class, the detector finds a span covering the
original characters of the value, and the placeholder operator leaves no trace of it
(checked on the canonical view of the output, so a leftover zero-width-split or
homoglyph copy would count as a leak)."""

from __future__ import annotations

import itertools

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight.core.pii.canonical import CONFUSABLES, canonicalize
from preflight.core.sanitize.base import SanitizeParams, create_mechanism

pytestmark = pytest.mark.slow

_REVERSE = {}
for _k, _v in CONFUSABLES.items():
    _REVERSE.setdefault(_v, _k)


def _core(value: str) -> str:
    """The letters and digits of a value, canonical and lower-cased (what must vanish)."""
    return re.sub(r"[\W_]+", "", canonicalize(value).text).lower()


def check(detector, text: str, value: str, core: str | None = None,
          types: set[str] | None = None) -> None:
    start = text.index(value)
    end = start + len(value)
    spans = detector.detect(text)
    covering = [s for s in spans if s.start < end and start < s.end]
    covered = set()
    for s in covering:
        covered.update(range(s.start, s.end))
    meaningful = [i for i in range(start, end) if text[i].isalnum()]
    missed = [i for i in meaningful if i not in covered]
    assert not missed, f"{value!r} not covered; spans: {[(text[s.start:s.end], s.type) for s in spans]}"
    if types is not None:
        assert {s.type for s in covering} & types, [(s.type, text[s.start:s.end]) for s in covering]
    out = create_mechanism("placeholder").sanitize(text, spans, SanitizeParams()).text
    flat = re.sub(r"[\W_]+", "", canonicalize(out).text).lower()
    assert (core or _core(value)) not in flat, out


ZW = "\u200b"


# -- zero-width characters -----------------------------------------------------------

@pytest.mark.parametrize("value", [
    "4111\u200b1111\u200b1111\u200b1111",
    "4\u200c1\u200c1\u200c1 1111 1111 1111",
    "5555\u20605555\u20605555\u20604444",
    "37828224\u200d6310005",
])
def test_zero_width_in_card(real_detector, value):
    check(real_detector, f"Please charge card {value} for the order.", value,
          types={"CREDIT_CARD"})


@pytest.mark.parametrize("value", [
    "jane.roe\u200b@acme.com", "ja\u200bne\u200b.roe@ac\u200bme.com", "k\u00adsmith@example.org",
    "\u2066tom.b@example.net\u2069",
])
def test_zero_width_in_email(real_detector, value):
    check(real_detector, f"Write to {value} about it.", value, types={"EMAIL_ADDRESS"})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 18), st.sampled_from(["\u200b", "\u200c", "\u2060",
                                                                  "\ufeff", "\u00ad"])),
                min_size=1, max_size=6))
def test_random_zero_width_in_card_and_email(real_detector, inserts):
    card, email = "4111 1111 1111 1111", "jane.roe@acme.com"
    for pos, ch in sorted(inserts, reverse=True):
        card = card[:pos] + ch + card[pos:]
        p = min(pos, len(email) - 1)
        email = email[:p] + ch + email[p:]
    check(real_detector, f"Card {card} was used.", card, core="4111111111111111")
    check(real_detector, f"Mail {email} now.", email, core="janeroeacmecom")


# -- homoglyphs -----------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    "j\u0430ne.roe@acme.com",          # Cyrillic а
    "jane.r\u043ee@\u0430cme.com",     # о, а
    "\u0440aul@example.org",           # р
    "\u0455mith@example.net",          # ѕ
    "jane@ex\u0430mple.c\u043em",      # inside the domain
    "\u03bflga@example.com",           # Greek ο
])
def test_homoglyph_email(real_detector, value):
    check(real_detector, f"Contact {value} for access.", value, types={"EMAIL_ADDRESS"})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sets(st.integers(0, 16), min_size=1, max_size=5))
def test_random_homoglyph_positions(real_detector, positions):
    email = "jane.roe@acme.com"
    swapped = "".join(_REVERSE.get(c, c) if i in positions else c for i, c in enumerate(email))
    check(real_detector, f"Mail {swapped} today.", swapped, core="janeroeacmecom")


# -- spelled-out e-mails and encodings ---------------------------------------------------

@pytest.mark.parametrize("value", [
    "jane [at] acme [dot] com", "jane.roe (at) acme (dot) co (dot) uk", "jane at acme dot com",
    "jane(at)acme.com", "jane{at}acme{dot}org", "JANE [AT] ACME [DOT] COM",
    "jane&#64;acme.com", "jane&#x40;acme&#46;com", "jane&commat;acme&period;com",
    "jane%40acme.com",
])
def test_spelled_email(real_detector, value):
    check(real_detector, f"Reach me: {value} anytime.", value, types={"EMAIL_ADDRESS"})


@pytest.mark.parametrize("at,dot,local", list(itertools.product(
    [" [at] ", "(at)", " at ", " {at} ", " (AT) ", "&#64;", "%40"],
    [" [dot] ", "(dot)", " dot ", ".", " (DOT) "],
    ["jane", "k.smith", "tom_b"])))
def test_spelled_email_variants(real_detector, at, dot, local):
    """Every combination (a random sample once missed " at " with " [dot] ")."""
    if at.strip().lower() == "at" and dot == ".":
        return  # "look at example.com" is prose, not an address
    value = f"{local}{at}acme{dot}com"
    check(real_detector, f"Reach me at {value} anytime.", value, core=_core(f"{local}@acme.com"))


# -- spaced-out, letters for digits, spelled digits, full-width ---------------------------

_DISGUISED_CARDS = {
    "spaced": ["4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", "4-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1",
               "4  1  1  1  1  1  1  1  1  1  1  1  1  1  1  1"],
    "letters": ["4lll 1111 1111 1111", "4111 IIII 1111 1111", "4O12 8888 8888 1881",
                "55O0 0000 0000 0004"],
    "spelled": ["four one one one one one one one one one one one one one one one",
                "Four One One One, One One One One, One One One One, One One One One",
                "five five zero zero zero zero zero zero zero zero zero zero zero zero zero four"],
}


@pytest.mark.parametrize("value", [v for vs in _DISGUISED_CARDS.values() for v in vs])
def test_disguised_card_digits(real_detector, value):
    assert _core(value) in ("4111111111111111", "4012888888881881", "5500000000000004")
    check(real_detector, f"My card number is {value} okay.", value, types={"CREDIT_CARD"})


def test_spaced_out_email(real_detector):
    value = "j a n e . r o e @ a c m e . c o m"
    check(real_detector, f"Here it is: {value} thanks.", value, core="janeroeacmecom",
          types={"EMAIL_ADDRESS"})


@pytest.mark.parametrize("value, core", [
    ("\uff15\uff13\uff16-\uff12\uff12-\uff18\uff18\uff14\uff11", "536228841"),
    ("\uff15\uff13\uff16\uff12\uff12\uff18\uff18\uff14\uff11", "536228841"),
])
def test_full_width_ssn(real_detector, value, core):
    check(real_detector, f"SSN: {value}", value, core=core, types={"US_SSN"})


def test_full_width_card(real_detector):
    value = "\uff14\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 \uff11\uff11\uff11\uff11 " \
            "\uff11\uff11\uff11\uff11"
    check(real_detector, f"Card {value} on file.", value, core="4111111111111111",
          types={"CREDIT_CARD"})


# -- keys split across lines ---------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("api_key = sk-proj-Ab3dEf6hIj9kLm2N\noP5qRs8tUv1wXy4zAb7\nNext we deploy.",
     "sk-proj-Ab3dEf6hIj9kLm2N\noP5qRs8tUv1wXy4zAb7"),
    ("token: ghp_a1B2c3D4e5F6g7H8i9J0\nk1L2m3N4o5P6q7R8s9T0\n",
     "ghp_a1B2c3D4e5F6g7H8i9J0\nk1L2m3N4o5P6q7R8s9T0"),
    ("AWS key AKIAIOSF\nODNN7EXAMPLE\nis rotated monthly.", "AKIAIOSF\nODNN7EXAMPLE"),
])
def test_key_split_across_lines(real_detector, text, value):
    check(real_detector, text, value)


# -- secrets in everyday config, code and shell forms, and in prose without "password" -----

@pytest.mark.parametrize("text, value", [
    ("# staging\nDB_USER=app\nDB_PASSWORD=Wint3r!Db\n", "Wint3r!Db"),
    ("db:\n  host: db.example.com\n  db_password: Tr0ub4dor&3\n", "Tr0ub4dor&3"),
    ('{"username": "svc", "password": "J50n!Secret"}', "J50n!Secret"),
    ("<connection><password>Xml#Pass77</password></connection>", "Xml#Pass77"),
    ("PGPASSWORD=Pg9!xyz psql -h db -U app -c 'select 1'", "Pg9!xyz"),
    ("mysql -u root -pMy5ql!root shop < backup.sql", "My5ql!root"),
    ("curl -u deploy:Cu7l!pass https://api.example.com/v1/deploy", "Cu7l!pass"),
    ("define('DB_PASSWORD', 'Wp!c0nfig9');", "Wp!c0nfig9"),
    ("sshpass -p 'Ssh#pass1' ssh root@build-07", "Ssh#pass1"),
    ("docker login -u ci -p Dock3r!pw registry.example.com", "Dock3r!pw"),
    ("The old credential was Xy7#pQ2! and nobody rotated it.", "Xy7#pQ2!"),
    ("Here are the creds for staging: deploy / Qw3rty!9", "Qw3rty!9"),
])
def test_secret_in_config_shell_and_prose(real_detector, text, value):
    check(real_detector, text, value, types={"SECRET"})


@pytest.mark.parametrize("text, value", [
    ("Steuer-IdNr.: 36 574 261 809", "36 574 261 809"),
    ("N° de sécurité sociale : 2 95 10 99 126 111 93", "2 95 10 99 126 111 93"),
    ("National Insurance number JG 10 37 26 A", "JG 10 37 26 A"),
    ("Codice fiscale RCCMNL83S18D969H", "RCCMNL83S18D969H"),
    ("DNI: 54362315-K", "54362315-K"),
    ("PESEL 44051401359", "44051401359"),
    ("BSN 111222333", "111222333"),
    ("AHV-Nr. 756.9217.0769.85", "756.9217.0769.85"),
    ("personnummer 880320-0016", "880320-0016"),
    ("Rijksregisternummer 85.07.30-033 28", "85.07.30-033 28"),
])
def test_labelled_national_identifier(real_detector, text, value):
    check(real_detector, f"New starter form. {text}. Thanks!", value, types={"NATIONAL_ID"})


# -- values broken by a wrap, without a label or a prefix -----------------------------------

@pytest.mark.parametrize("text, value, types", [
    ("Please book it on the corporate card, number 5555 5555\n5555 4444, as usual.\n",
     "5555 5555\n5555 4444", {"CREDIT_CARD"}),
    ("If I am not at my desk, the quickest way to reach me is +49 30 9018\n2011 after four.\n",
     "+49 30 9018\n2011", {"PHONE_NUMBER"}),
    ("The deployment notes from last night list the vendor key as whsec_9fK2mQ7xLp4Rt8Vb\n"
     "N3cY6dZ1hJ5s and nothing else.\n", "whsec_9fK2mQ7xLp4Rt8Vb\nN3cY6dZ1hJ5s", None),
])
def test_value_broken_by_a_wrap(real_detector, text, value, types):
    check(real_detector, text, value, types=types)


# -- MIME encoded words (a pasted e-mail header) ------------------------------------------

@pytest.mark.parametrize("value", [
    "=?ISO-8859-1?Q?J=F8rgen_Thomsen?=",
    "=?utf-8?B?SsO4cmdlbiBUaG9tc2Vu?=",
    "=?UTF-8?Q?Jane_Miller?=",
])
def test_encoded_display_name(real_detector, value):
    check(real_detector, f"From: {value} <list@jth.net>\nSubject: agents\n\nSee below.\n",
          value, types={"PERSON"})


# -- names ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("Signed: Doe, Jane\nDate: today", "Doe, Jane"),
    ("Attendees: Roe, Richard; Doe, Jane; Smith, Peter", "Doe, Jane"),
    ("Name: Kowalski, Anna\n", "Kowalski, Anna"),
])
def test_surname_given(real_detector, text, value):
    check(real_detector, text, value, types={"PERSON"})


def test_partial_cyrillic_name(real_detector):
    text = "Dear Иван Петров,\nthe contract is ready. Петров will sign on Monday."
    spans = real_detector.detect(text)
    second = text.rindex("Петров")
    assert any(s.start <= second and s.end >= second + 6 and s.type == "PERSON" for s in spans)
    out = create_mechanism("placeholder").sanitize(text, spans, SanitizeParams()).text
    assert "Петров" not in out and "Иван" not in out


@pytest.mark.parametrize("text", ["Contact John Smith for the keys.",
                                  "Email John Smith about the contract."])
def test_label_word_not_in_name(real_detector, text):
    persons = [text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"]
    assert persons == ["John Smith"]


def test_invoice_number_is_not_a_date(real_detector):
    text = "Please pay invoice 4471 by Friday."
    spans = real_detector.detect(text)
    assert not [s for s in spans if s.type == "DATE_TIME" and "4471" in text[s.start:s.end]]


# -- the pre-send re-scan sees the same disguises ---------------------------------------------

_RESCAN_CASES = [
    ("Please charge card 4111\u200b1111\u200b1111\u200b1111 for the order.", "CREDIT_CARD"),
    ("Write to jаne.rоe@acme.com today.", "EMAIL_ADDRESS"),             # Cyrillic а, о
    ("Reach me: jane [at] acme [dot] com anytime.", "EMAIL_ADDRESS"),
    ("Reach me: jane&#64;acme.com anytime.", "EMAIL_ADDRESS"),
    ("My card number is 4O12 8888 8888 1881 okay.", "CREDIT_CARD"),
    ("My card number is four one one one one one one one one one one one one one one one.",
     "CREDIT_CARD"),
    ("SSN: \uff15\uff13\uff16-\uff12\uff12-\uff18\uff18\uff14\uff11", "US_SSN"),
    ("token: ghp_a1B2c3D4e5F6g7H8i9J0\nk1L2m3N4o5P6q7R8s9T0\n", None),
]


@pytest.mark.parametrize("text, kind", _RESCAN_CASES + [
    ("See you at the plant on Monday; bring the Q3 numbers.", "nothing")])
def test_rescan_blocks_a_disguised_value_left_in_the_payload(real_detector, tmp_path, text,
                                                            kind):
    """A payload that still carries the disguised value (as if the user had kept it) is
    blocked by the re-scan before anything is sent."""
    from preflight.core.config import ProviderSettings, Settings
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.session import SendSession
    from preflight.core.types import SanitizedText

    session = SendSession(Settings(providers=[ProviderSettings("p", "http://127.0.0.1:9/v1",
                                                               "m")]),
                          detector=real_detector, audit=AuditLog(tmp_path / "a.db"))
    kept = SanitizedText(text, "keep", ())
    plan = session.prepare_send(text, "p", "keep", sanitized=kept, spans=[])
    blocking = plan.blocking
    if kind == "nothing":                      # the control: plain prose is not blocked
        assert not blocking, [(f.type, f.value) for f in blocking]
        return
    assert blocking, f"nothing blocked in {text!r}"
    if kind is not None:
        assert kind in {f.type for f in blocking}, [(f.type, f.value) for f in blocking]
