"""No key-shaped string survives a log line, whichever logger writes it."""

from __future__ import annotations

import io
import logging

import pytest

from preflight.core.send import logfilter

AWS = "AKIA" + "ABCDEFGHIJKLMNOP"


@pytest.mark.parametrize("secret", [
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "sk-abcdefgh12345678",
    AWS,
    "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "Xk9fQ2LmP8vR4tZ7wY1nB6cH3jD5sA0eG2uK",          # 36 random characters
])
def test_key_shapes_are_redacted(secret):
    out = logfilter.redact(f"calling with {secret} now")
    assert secret not in out and logfilter.REDACTED in out


def test_bearer_and_api_key_headers_are_redacted():
    assert "abc123def456" not in logfilter.redact("Authorization: Bearer abc123def456")
    assert "abc123def456" not in logfilter.redact('{"api-key": "abc123def456"}')


@pytest.mark.parametrize("text", [
    "Summarize the quarterly report for the board meeting",
    "/usr/lib/python3/site-packages/preflight/core/send/providers.py",
    "http://127.0.0.1:8080/v1/chat/completions",
    "internationalization-and-localization-guidelines",
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
])
def test_ordinary_text_survives(text):
    assert logfilter.redact(text) == text


def test_registered_secret_is_redacted_even_if_not_key_shaped():
    logfilter.register_secret("hunter2-plain")
    assert "hunter2-plain" not in logfilter.redact("pw=hunter2-plain;")


def test_installed_filter_redacts_child_logger_records_and_exceptions():
    logfilter.install()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    child = logging.getLogger("some.library.deep")
    child.addHandler(handler)      # a handler the filter was never attached to
    child.setLevel(logging.INFO)
    try:
        child.info("key=%s", "sk-live-0123456789abcdefXYZ")
        try:
            raise ValueError(f"bad key {AWS}")
        except ValueError:
            child.exception("failed")
    finally:
        child.removeHandler(handler)
    out = stream.getvalue()
    assert "sk-live-0123456789abcdefXYZ" not in out and AWS not in out
    assert out.count(logfilter.REDACTED) >= 2


def test_filter_on_root_logger_is_installed_once():
    logfilter.install()
    logfilter.install()
    root = logging.getLogger()
    assert sum(isinstance(f, logfilter.RedactingFilter) for f in root.filters) == 1
