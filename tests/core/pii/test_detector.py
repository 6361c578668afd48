"""PiiDetector end to end: offsets (CRLF, emoji, mixed scripts), deny/allow lists, the
fallback without the NER model, an injected analyzer, threads."""

from __future__ import annotations

import threading

import pytest
from presidio_analyzer import RecognizerResult

from preflight.core.config import DetectionSettings
from preflight.core.errors import ConfigError, InputError
from preflight.core.pii.detector import PiiDetector
from preflight.core.pii.entities import EVIDENCE_KEY
from preflight.core.pii.recognizers.base import NER_EVIDENCE
from preflight.core.types import Category

SAMPLE = ("Hi 👋 Jane Roe,\r\nmy card 4111 1111 1111 1111 and mail jane.roe@example.com.\r\n"
          "日本語のテキスト key AKIAIOSFODNN7EXAMPLE — SSN 464-02-4608.")


def _values(text, spans):
    return [(s.type, text[s.start:s.end]) for s in spans]


def _check_invariants(text, spans):
    for s in spans:
        assert 0 <= s.start < s.end <= len(text)
        assert s.why and text[s.start:s.end] not in s.why
        assert isinstance(s.category, Category)
    for a, b in zip(spans, spans[1:]):
        assert a.end <= b.start


# -- fast: no NER model ------------------------------------------------------------------

def test_missing_ner_model_falls_back_with_warning(tmp_path):
    det = PiiDetector(nlp_model_path=tmp_path / "nope")
    spans = det.detect(SAMPLE)
    assert det.ner_available is False
    assert det.warnings and "preflight models install" in det.warnings[0]
    found = _values(SAMPLE, spans)
    assert ("CREDIT_CARD", "4111 1111 1111 1111") in found
    assert ("EMAIL_ADDRESS", "jane.roe@example.com") in found
    assert ("API_KEY", "AKIAIOSFODNN7EXAMPLE") in found
    assert not any(s.recognizer == "SpacyRecognizer" for s in spans)  # no NER results
    _check_invariants(SAMPLE, spans)


def test_corrupt_ner_model_falls_back(tmp_path):
    broken = tmp_path / "ner"
    broken.mkdir()
    (broken / "config.cfg").write_text("[nlp]\nthis is not a spaCy config\n")
    det = PiiDetector(nlp_model_path=broken)
    assert _values("card 4111111111111111", det.detect("card 4111111111111111"))
    assert det.warnings and "cannot be loaded" in det.warnings[0]


@pytest.fixture(scope="module")
def blank_detector(tmp_path_factory):
    det = PiiDetector(nlp_model_path=tmp_path_factory.mktemp("empty") / "missing")
    det.load()
    return det


def test_crlf_emoji_and_mixed_script_offsets(blank_detector):
    spans = blank_detector.detect(SAMPLE)
    got = dict((t, v) for t, v in _values(SAMPLE, spans))
    assert got["US_SSN"] == "464-02-4608"
    assert got["API_KEY"] == "AKIAIOSFODNN7EXAMPLE"
    # offsets are code points: slicing the exact input gives the value back
    card = next(s for s in spans if s.type == "CREDIT_CARD")
    assert SAMPLE[card.start:card.end] == "4111 1111 1111 1111"
    assert SAMPLE.index("4111") == card.start


def test_deny_and_allow_lists(blank_detector):
    text = "Project BLUEBIRD ships to Initech; bluebird-2 is internal. Card 4111111111111111."
    blank_detector.settings = DetectionSettings(deny_list=["Bluebird"],
                                                allow_list=["4111111111111111"])
    try:
        spans = blank_detector.detect(text)
    finally:
        blank_detector.settings = DetectionSettings()
    found = _values(text, spans)
    assert ("DENY_LIST", "BLUEBIRD") in found and ("DENY_LIST", "bluebird") in found
    assert all(s.category is Category.DIRECT_IDENTIFIER for s in spans if s.type == "DENY_LIST")
    assert not any(t == "CREDIT_CARD" for t, _ in found)     # allowed value is never flagged


def test_deny_list_category_is_configurable(blank_detector):
    blank_detector.settings = DetectionSettings(deny_list=["Bluebird"],
                                                deny_list_category="confidential_attribute")
    try:
        spans = blank_detector.detect("about Bluebird")
    finally:
        blank_detector.settings = DetectionSettings()
    assert [s.category for s in spans] == [Category.CONFIDENTIAL_ATTRIBUTE]


def test_bad_deny_category_is_a_config_error(blank_detector):
    blank_detector.settings = DetectionSettings(deny_list=["x"], deny_list_category="weird")
    try:
        with pytest.raises(ConfigError):
            blank_detector.detect("x")
    finally:
        blank_detector.settings = DetectionSettings()


def test_threshold_filters_weak_spans(blank_detector):
    text = "We study depression detection."     # HEALTH term alone scores 0.45
    assert _values(text, blank_detector.detect(text)) == [("HEALTH", "depression")]
    blank_detector.settings = DetectionSettings(score_threshold=0.5)
    try:
        assert blank_detector.detect(text) == []
    finally:
        blank_detector.settings = DetectionSettings()


def test_empty_and_bad_input(blank_detector):
    assert blank_detector.detect("") == []
    assert blank_detector.detect(" \r\n\t") == []
    with pytest.raises(InputError):
        blank_detector.detect(b"bytes")  # type: ignore[arg-type]


def test_unsupported_language(tmp_path):
    with pytest.raises(ConfigError):
        PiiDetector(DetectionSettings(language="de"), nlp_model_path=tmp_path).detect("x")


def test_concurrent_calls_give_the_same_result(blank_detector):
    expected = blank_detector.detect(SAMPLE)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(blank_detector.detect(SAMPLE))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(r == expected for r in results)


class _FakeAnalyzer:
    """Returns fixed overlapping results: the detector must clean and resolve them."""

    def analyze(self, text, language, ad_hoc_recognizers=None, **kw):
        def r(typ, s, e, score, rec):
            return RecognizerResult(typ, s, e, score, recognition_metadata={
                "recognizer_name": rec, "recognizer_identifier": rec,
                EVIDENCE_KEY: NER_EVIDENCE})
        return [r("PERSON", 0, 9, 0.85, "SpacyRecognizer"),        # "Ann Lee's" → trimmed
                r("DATE_TIME", 0, 3, 0.85, "SpacyRecognizer"),
                r("PERSON", 14, 19, 0.85, "SpacyRecognizer"),      # "12345": digits → dropped
                r("ORGANIZATION", 20, 23, 0.85, "SpacyRecognizer")]  # "SSN" → dropped


def test_injected_analyzer_results_are_cleaned_and_resolved():
    text = "Ann Lee's id: 12345 SSN"
    spans = PiiDetector(analyzer=_FakeAnalyzer()).detect(text)
    assert _values(text, spans) == [("PERSON", "Ann Lee")]
    assert spans[0].why == "The NER model tagged it as a person's name"


# -- slow: the real spaCy model ----------------------------------------------------------

@pytest.mark.slow
def test_real_model_end_to_end(real_detector):
    spans = real_detector.detect(SAMPLE)
    found = _values(SAMPLE, spans)
    assert ("PERSON", "Jane Roe") in found
    for pair in [("CREDIT_CARD", "4111 1111 1111 1111"), ("EMAIL_ADDRESS", "jane.roe@example.com"),
                 ("API_KEY", "AKIAIOSFODNN7EXAMPLE"), ("US_SSN", "464-02-4608")]:
        assert pair in found
    _check_invariants(SAMPLE, spans)


@pytest.mark.slow
@pytest.mark.parametrize("text,expected", [
    ("Alice Johnson lives at 1600 Pennsylvania Avenue NW, Washington, DC 20500.",
     [("PERSON", "Alice Johnson"),
      ("STREET_ADDRESS", "1600 Pennsylvania Avenue NW, Washington, DC 20500")]),
    ("Server 159.72.97.180 went down.", [("IP_ADDRESS", "159.72.97.180")]),  # not a date/phone
    ("Date of birth: Mar 05, 2004", [("DATE_OF_BIRTH", "Mar 05, 2004")]),
    ("The data was provided by Tucker and Sons.", [("ORGANIZATION", "Tucker and Sons")]),
    ("IBAN GB82 WEST 1234 5698 7654 32", [("IBAN_CODE", "GB82 WEST 1234 5698 7654 32")]),
])
def test_real_model_overlap_decisions(real_detector, text, expected):
    found = _values(text, real_detector.detect(text))
    for pair in expected:
        assert pair in found, found


@pytest.mark.slow
def test_a_detected_value_is_caught_wherever_it_appears(real_detector) -> None:
    # The small NER model tags the name in some places only; every other occurrence must be
    # covered too, or the signature leaks what the greeting hid.
    text = ("Dear Taylor Herman,\nplease send the report to taylor.herman@acme.com.\n"
            "I met TAYLOR HERMAN and Herman's assistant. taylor herman agreed.\n"
            "Best,\nTaylor Herman\n")
    covered = [text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"]
    assert covered.count("Taylor Herman") == 2
    assert "Herman" in covered and "taylor herman" in covered and "TAYLOR HERMAN" in covered
    assert not any(v.startswith("Dear") for v in covered)


@pytest.mark.slow
@pytest.mark.parametrize("text", [
    # Brown corpus news: the model reads "Solly Hemus" as an organization where a copy of
    # "Solly" (a person, from "Solly plans") wins the overlap, and "Hemus" alone as an
    # organization elsewhere
    ("Solly Hemus announced a switch in his starting pitcher, from Bob Gibson to Ernie "
    "Broglio, for several reasons.\n\nManager Hemus, eager to end a pitching slump that "
    "has brought four losses in the five games on the current home stand, moved Gibson to "
    "the Wednesday night starting assignment. After Thursday's open date, Solly plans to "
    "open with Larry Jackson against the Cubs here Friday night.\n\nAfter a lengthy "
    "workout yesterday, an open date, Hemus said that Bob Nieman definitely would stay in "
    "the lineup."),
    # an ILUG list post: "Red Hat Linux", an organization, loses to a person "Linux"
    ("When the new academic year begins at UCC, every incoming student will\nbe offered a "
    "copy of Red Hat Linux 7.3.\n\nThe user group is tapping into an international Red "
    "Hat programme\nthat aims to introduce students at all levels to the open source\n"
    "style of computing.\n\nRed Hat Linux 7.3 incorporates ease of use and maintenance\n"
    "features and is intended to counter objections that Linux is hard to\nmaster on "
    "personal systems.\n\nDavid Owens, Red Hat's director of global logistics and "
    "production,\nsees the formation of the ILUG marketing group as a reason to take\na "
    "more proactive approach."),
])
def test_a_value_is_covered_where_an_overlap_it_was_inside_was_lost(real_detector, text):
    # Every occurrence of every detected value lies inside some detection: the re-scan
    # blocks a payload holding a value the product classified anywhere, so a value left
    # bare where the span around it lost an overlap blocks the user's send.
    import re

    spans = real_detector.detect(text)
    covered = {i for s in spans for i in range(s.start, s.end)}
    bare = {(value, m.start())
            for s in spans if len(value := text[s.start:s.end].strip()) > 1
            for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", text)
            if not covered.issuperset(range(m.start(), m.end()))}
    assert not bare


def test_propagation_is_whole_word_and_respects_the_allow_list() -> None:
    from preflight.core.pii.detector import propagate_values
    from preflight.core.types import Category, Span

    text = "Call Ann Lee at home. Annette met ann lee. Lee said hi to Leeds."
    first = Span(5, 12, "PERSON", Category.DIRECT_IDENTIFIER, 0.85, "SpacyRecognizer", "x",
                 NER_EVIDENCE)
    found = {(text[s.start:s.end], s.recognizer) for s in propagate_values(text, [first])}
    assert ("ann lee", "PropagatedValue") in found
    assert ("Lee", "PropagatedValue") in found          # a last name written alone
    assert not any(v.startswith("Annette") or v == "Leeds" for v, _ in found)
    assert propagate_values(text, [first], allowed={"ann lee"}) == []


@pytest.mark.slow
def test_a_person_the_model_calls_a_firm_elsewhere_is_a_person_everywhere(real_detector):
    # Brown corpus news: the model reads "Solly" alone as a person, "Solly Hemus" and
    # "Hemus" as an organization; the default policy keeps organizations, so the
    # surname went out wherever it stood alone
    text = ("Solly Hemus announced a switch in his starting pitcher.\n\nManager Hemus, "
            "eager to end a pitching slump that has brought four losses in the five games "
            "on the current home stand, moved Gibson to the Wednesday night starting "
            "assignment. After Thursday's open date, Solly plans to open with Larry Jackson "
            "against the Cubs here Friday night.\n\nAfter a lengthy workout yesterday, an "
            "open date, Hemus said that Bob Nieman definitely would stay in the lineup.")
    persons = [(s.start, s.end) for s in real_detector.detect(text) if s.type == "PERSON"]
    at = [i for i in range(len(text)) if text.startswith("Hemus", i)]
    assert len(at) == 3
    assert all(any(a <= i and i + 5 <= b for a, b in persons) for i in at), persons


def test_propagation_within_ranges_reads_the_words_around_them() -> None:
    from preflight.core.pii.overlaps import uncovered
    from preflight.core.pii.propagate import propagate_values
    from preflight.core.types import Category, Span

    text = "Red Hat Linux and Red Hats and Red Hat"
    def org(a, b):
        return Span(a, b, "ORGANIZATION", Category.QUASI_IDENTIFIER, 0.85,
                    "SpacyRecognizer", "x", NER_EVIDENCE)
    # "Red Hat" at 18 is part of "Red Hats": not the value, though a range ends after "Hat"
    found = propagate_values(text, [org(0, 7)], within=[(18, 25), (31, 38)])
    assert [(s.start, s.end) for s in found] == [(31, 38)]
    assert uncovered([org(0, 13), org(18, 26)], [org(8, 13), org(18, 20), org(22, 30)]) \
        == [(0, 8), (20, 22)]


def test_presidio_loads_without_its_transformers_engine() -> None:
    # Start-up path of the CLI and the window's detector process: importing the package
    # has no side effects (Presidio loads with the engine), Presidio's Hugging Face engine
    # (transformers, ~4 s of imports) must not load, and transformers must still be
    # importable afterwards (sentence-transformers needs it).
    import subprocess
    import sys

    code = ("import sys\n"
            "import preflight.core.pii, preflight.core.pii.canonical\n"
            "from preflight.core.pii.detector import PiiDetector\n"
            "assert 'presidio_analyzer' not in sys.modules, 'presidio imported at import'\n"
            "PiiDetector().load()\n"
            "assert 'presidio_analyzer' in sys.modules\n"
            "assert 'transformers' not in sys.modules, 'transformers imported'\n"
            "import presidio_analyzer.nlp_engine.huggingface_token_pipe as h\n"
            "assert not h.is_available()\n"
            "import transformers\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-800:]


def test_a_repeated_private_key_block_is_found_twice(real_detector):
    # A 1,600-character key block pasted twice: detection used to end in RecursionError.
    import base64
    import random

    rng = random.Random(3)
    body = base64.encodebytes(bytes(rng.getrandbits(8) for _ in range(1200))).decode()
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----"
    text = f"Hi Dana,\n\nThe deploy key:\n\n{key}\n\nThe same for staging:\n\n{key}\n\nMark"
    spans = real_detector.detect(text)
    for start in (text.index(key), text.rindex(key)):
        assert any(s.start <= start and start + len(key) <= s.end and s.category is
                   Category.SECRET for s in spans), start


def test_a_name_in_a_pasted_mime_header_is_found(real_detector):
    # A raw e-mail header keeps a non-ASCII display name RFC 2047-encoded: the name must
    # not reach the provider just because it is written as =?charset?Q?...?=.
    text = ("From: =?ISO-8859-1?Q?J=F8rgen_Thomsen?= <list@jth.net>\n"
            "Subject: Razor agents\n\nI cannot tell whether the forwarded message is "
            "handled correctly.\n")
    word = "=?ISO-8859-1?Q?J=F8rgen_Thomsen?="
    start = text.index(word)
    assert any(s.type == "PERSON" and s.start <= start and start + len(word) <= s.end
               for s in real_detector.detect(text))


def test_a_name_read_with_the_wrong_charset_is_found_and_linked(real_detector):
    # A mail whose "ø" became U+FFFD on the way: the given name must still be replaced,
    # and as the person the header names (not as a company the model guessed).
    text = ("From: J\ufffdrgen Thomsen <list@jth.net>\nSubject: Razor agents\n\nHi all,\n\n"
            "J\ufffdrgen here again: I cannot tell whether the forwarded message is handled "
            "correctly.\n\nCheers,\nJ\ufffdrgen\n")
    found = [(s.type, s.start) for s in real_detector.detect(text)
             if text[s.start:s.end].startswith("J\ufffdrgen")]
    starts = [i for i in range(len(text)) if text.startswith("J\ufffdrgen", i)]
    assert sorted(found) == [("PERSON", i) for i in starts]


@pytest.mark.parametrize("text, names", [
    pytest.param(
        # /usr/share/doc/curl/copyright: a year glued to the model's name, an inner capital,
        # a three-word display name the model calls an organization
        "Copyright: 1999, Leon Breedt <ljb@debian.org>\n 2005, LaMont Jones "
        "<lamont@ubuntu.com>\nCopyright: 2019 Ryan Tandy <ryan@nardis.ca>\nCopyright: "
        "2013-2022, Linus Nielsen Feltzing <linus@haxx.se>\n",
        {"Leon Breedt", "LaMont Jones", "Ryan Tandy", "Linus Nielsen Feltzing"},
        id="copyright-file"),
    pytest.param(
        # git's and imagemagick's changelog.Debian: the model reads the sign-off's name into
        # the address ("Lee Garrett <debian@…>  Tue", then lost to the address), drops an
        # unlisted name ending in s as a plural, and misses credits
        "  * install dashed commands to /usr/lib again (thx Sven Joachim;\n"
        "    closes: #985416).\n\n -- Lee Garrett <debian@rocketjump.eu>  Tue, 07 Oct "
        "2025 14:22:08 +0200\n\n -- Bastien Roucari\u00e8s <rouca@debian.org>  Thu, 29 "
        "Oct 2026 10:34:49 +0100\n",
        {"Sven Joachim", "Lee Garrett", "Bastien Roucari\u00e8s"},
        id="changelog"),
    pytest.param(
        # coreutils' THANKS: the model reads several lines as one person; Presidio's
        # de-duplication dropped the column rule's names inside that span, and the model's
        # span, cut to its first line, then covered only the first name
        "Andres Soolo                        andres@soolo.matti.ee\n"
        "Andrew Burgess                      aab@cichlid.com\n"
        "Andrew Church                       achurch@achurch.org\n"
        "Andrew Dalke                        dalke@bioreason.com\n",
        {"Andres Soolo", "Andrew Burgess", "Andrew Church", "Andrew Dalke"},
        id="thanks-file"),
    pytest.param(
        # dbus' and adwaita-icon-theme's AUTHORS: addresses spelled with spaces inside the
        # brackets, and a credit line linking the person's page
        "Antoine Jacoutot <ajacoutot@gnome.org>\nAntoine Jacoutot <ajacoutot openbsd org>\n"
        "Brad Smith <brad comstyle com>\n\nSome external 3D Assets used:\n"
        "Geraldo Cockerhan - http://www.blendswap.com/blends/view/40495 CCBYSA\n",
        {"Antoine Jacoutot", "Brad Smith", "Geraldo Cockerhan"},
        id="authors-file"),
])
def test_names_in_real_files_are_found(real_detector, text, names):
    found = {text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"}
    assert found == names


def test_a_sender_signing_in_lower_case_is_still_found(real_detector):
    # A SpamAssassin e-mail: "From: Tom <tomwhore@…>" and "-tom" as the sign-off. The
    # lower-case sign-off used to mark "Tom" as a common word and drop it.
    text = ("From: Tom <tomwhore@slack.net>\nSubject: Re: Digital radio playlists\n\n"
            "I still run a stream up on live365. I really should change them up.\n\n-tom\n")
    found = {(s.type, text[s.start:s.end]) for s in real_detector.detect(text)}
    assert ("PERSON", "Tom") in found and ("PERSON", "tom") in found


def test_an_address_spelled_with_spaces_in_brackets_is_an_address(real_detector):
    # dbus' AUTHORS: "<ajacoutot openbsd org>" is ajacoutot@openbsd.org, the mailbox a
    # reader (or the provider) reads back at once
    text = "Antoine Jacoutot <ajacoutot openbsd org>\nChris Mayo <aklhfex gmail com>\n"
    found = {text[s.start:s.end] for s in real_detector.detect(text)
             if s.type == "EMAIL_ADDRESS"}
    assert found == {"ajacoutot openbsd org", "aklhfex gmail com"}


@pytest.mark.parametrize("text, name", [
    # a listed line with a name on no list of names: a person (dpkg's THANKS, a changelog)
    ("Dmitry Shachnev <mitya57@debian.org>\n", "Dmitry Shachnev"),
    (" -- Modestas Vainius <modax@debian.org>  Sun, 01 Jan 2012 12:00:00 +0200\n",
     "Modestas Vainius"),
    # dictionary words written the same way: a shop or a department, not a person
    ("Wild Cats <info@wildcats.example>\n", None),
    ("Investor Relations <ir@example.com>\n", None),
])
def test_a_listed_name_on_no_list_is_a_person_unless_it_is_dictionary_words(
        real_detector, text, name):
    found = {text[s.start:s.end] for s in real_detector.detect(text) if s.type == "PERSON"}
    assert found == ({name} if name else set())


def test_the_detector_loads_the_models_dictionary(real_detector):
    from preflight.core.pii.person_evidence import LEXICON_TABLE, dictionary_words_only

    nlp = real_detector._analyzer.nlp_engine.get_nlp("en")
    lexicon = nlp.vocab.lookups.get_table(LEXICON_TABLE)
    assert dictionary_words_only("Wild Cats", lexicon)
    assert not dictionary_words_only("Dmitry Shachnev", lexicon)


def test_a_chat_export_handle_is_found_beside_its_address(real_detector):
    text = ("[10:02] Jane Roe: @mlopez can you check the invoice? "
            "Her mail is m.lopez@example.com.\n")
    found = {(s.type, text[s.start:s.end]) for s in real_detector.detect(text)}
    assert ("USERNAME", "@mlopez") in found
    assert ("EMAIL_ADDRESS", "m.lopez@example.com") in found


def test_a_phone_number_whose_digits_pass_the_nhs_checksum_stays_a_phone(real_detector):
    # one 10-digit number in 11 passes the NHS checksum: "415 555 0199" did, and the
    # NHS number at full confidence beat the phone number around it ("+1" was left)
    text = "from my phone, +1 415 555 0199\nHis NHS number is 943 476 5919.\n"
    found = {(s.type, text[s.start:s.end]) for s in real_detector.detect(text)}
    assert found == {("PHONE_NUMBER", "+1 415 555 0199"), ("UK_NHS", "943 476 5919")}
