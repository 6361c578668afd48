"""E-mail validation never touches the network (tldextract uses its bundled snapshot)."""

from __future__ import annotations

import socket

import pytest

from preflight.core.pii.recognizers.email import OfflineEmailRecognizer, offline_extractor

from pii_testutil import run


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_email_validation_offline(no_network, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))          # any cache write would land here
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    offline_extractor.cache_clear()
    text = "Write to jane.roe@example.co.uk or bob@mail.internal.invalid-tld"
    assert run(OfflineEmailRecognizer(), text) == [("EMAIL_ADDRESS", "jane.roe@example.co.uk")]
    assert list(tmp_path.rglob("*")) == []             # no suffix-list cache written


@pytest.mark.parametrize("address", [
    "father.time@xcar.wooster.local", "jane.roe@acme.internal", "j.roe@mail.corp",
    "jroe@fileserver.lan", "jane@router.home.arpa",
])
def test_an_address_on_a_company_internal_domain_is_an_address(address):
    # the public suffix list knows none of these; an employee's address there is PII
    assert run(OfflineEmailRecognizer(), f"Mail {address} today") == [
        ("EMAIL_ADDRESS", address)]


def test_module_level_extractor_made_offline(no_network):
    import tldextract
    import tldextract.tldextract as impl

    from preflight.core.pii.recognizers.email import make_tldextract_offline

    saved = impl.TLD_EXTRACTOR
    try:
        make_tldextract_offline()
        assert tldextract.extract("a.b.example.com").suffix == "com"
    finally:
        impl.TLD_EXTRACTOR = saved


@pytest.mark.slow
def test_whole_detector_offline(no_network, real_detector):
    text = "Mail jane.roe@example.org, see https://example.org/x"
    types = [s.type for s in real_detector.detect(text)]
    assert "EMAIL_ADDRESS" in types
