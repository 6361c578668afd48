"""Internal host names and web addresses that end where their host ends (issue 45,
item 5). Sentences in the style of runbooks, IT tickets and onboarding mails."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.hosts import InternalHostRecognizer, WholeHostUrlRecognizer
from preflight.core.types import Category, Span

from pii_testutil import run

INTERNAL = [
    ("The nightly build runs on build-07.corp.example.local, not on the laptops.",
     ["build-07.corp.example.local"]),
    ("See http://intranet.northwind.local/wiki/Onboarding for the checklist.",
     ["intranet.northwind.local"]),
    ("Jenkins moved to https://ci.acme.corp/job/nightly last week.", ["ci.acme.corp"]),
    ("Point the client at db01.internal:5432 and the cache at redis.lan.",
     ["db01.internal", "redis.lan"]),
    ("The printer is printer3.home.arpa; the NAS is nas.intranet.",
     ["printer3.home.arpa", "nas.intranet"]),
    ("Open http://wiki/ and search for the runbook.", ["wiki"]),
    ("Log in to https://jenkins:8080/login with your badge id.", ["jenkins"]),
    ("The repo is on http://gitlab.northwind/platform/api.", ["gitlab.northwind"]),
    ("Use postgres://admin:S3cret@db.internal:5432/prod for the migration.", ["db.internal"]),
    (r"Salaries are in \\fs01\hr\2024.xlsx on the share.", ["fs01"]),
]


@pytest.mark.parametrize("text,hosts", INTERNAL)
def test_internal_host_names(text, hosts):
    assert run(InternalHostRecognizer(), text) == [("INTERNAL_HOST", h) for h in hosts]


@pytest.mark.parametrize("text", [
    "Visit https://www.example.com/about for more.",
    "Run it on http://localhost:3000/ or http://127.0.0.1:8080/.",
    "Mail jane@corp.local about it.",                    # an e-mail address, not a host
    "import com.example.internal.util; // a Java package",
    "The local bus stops at the corp office.",
    "Copy settings.local.py next to manage.py.",
])
def test_no_internal_host(text):
    assert run(InternalHostRecognizer(), text) == []


@pytest.mark.parametrize("text,url", [
    ("Docs: https://www.example.com/about, then the FAQ.", "https://www.example.com/about"),
    ("See http://jira.northwind.no/browse/INC-1 please.", "http://jira.northwind.no/browse/INC-1"),
    ("Mirror: ftp.example.org:2121/pub today.", "ftp.example.org:2121/pub"),
])
def test_public_urls_are_whole(text, url):
    assert run(WholeHostUrlRecognizer(), text) == [("URL", url)]


@pytest.mark.parametrize("text", [
    "See http://intranet.northwind.local/wiki for details.",    # .no inside "northwind"
    "The build runs on build-07.corp.example.local every night.",
    "Connect to db01.internal or fileserver.lan.",
    "126 F.Supp.235 was cited.",
])
def test_a_url_never_stops_inside_a_host_name(text):
    for _, value in run(WholeHostUrlRecognizer(), text):
        end = text.index(value) + len(value)
        assert end == len(text) or not (text[end].isalnum() or text[end] in "-."
                                        and text[end + 1:end + 2].isalnum()), value


def _span(start, end, typ, cat, score, rec="Rule"):
    return Span(start, end, typ, cat, score, rec, "why")


def test_a_url_around_a_better_detection_keeps_its_other_parts():
    from preflight.core.pii.overlaps import resolve_overlaps

    text = "https://shop.example.com/orders?order=4471&x=1"
    order = text.index("4471")
    url = _span(0, len(text), "URL", Category.QUASI_IDENTIFIER, 0.6)
    code = _span(order, order + 4, "ID_NUMBER", Category.DIRECT_IDENTIFIER, 0.8)
    out = resolve_overlaps([url, code])
    assert [(text[s.start:s.end], s.type) for s in out] == [
        ("https://shop.example.com/orders?order=", "URL"), ("4471", "ID_NUMBER"),
        ("&x=1", "URL")]


def test_internal_hosts_leave_nothing_of_the_host_under_the_default_policy(real_detector):
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.sanitize.policy import PRESETS
    from preflight.core.sanitize.policy_apply import PolicyMechanism

    text = ("Deploy from http://intranet.northwind.local/wiki to build-07.corp.example.local "
            "and check \\\\fs01\\hr afterwards.")
    spans = real_detector.detect(text)
    out = PolicyMechanism(PRESETS["identifiers"]).sanitize(text, spans, SanitizeParams()).text
    for part in ("northwind", "rthwind", "build-07", "fs01"):
        assert part not in out, out


def test_urls_as_placeholders_cover_the_whole_host(real_detector):
    from preflight.core.sanitize.base import SanitizeParams, create_mechanism

    # Presidio's pattern ended this URL at ".no" (Norway) inside "northwind": the payload
    # carried "<URL_1>rthwind.local/wiki"
    text = ("Bookmark http://intranet.northwind.local/wiki, https://portal.northwind.no/login "
            "and https://www.example.com/help.")
    spans = real_detector.detect(text)
    out = create_mechanism("placeholder").sanitize(text, spans, SanitizeParams()).text
    assert "rthwind" not in out and "example" not in out, out
