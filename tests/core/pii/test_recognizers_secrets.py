"""Secrets: vendor key formats, credentials in context, generic high-entropy tokens."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.secrets import (
    HighEntropyTokenRecognizer, SecretsRecognizer, looks_like_secret,
)

from pii_testutil import run

GH = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
FOUND = [
    ("key sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5 here", ("API_KEY", "sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5")),
    ("sk-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5", ("API_KEY", "sk-Ab3De5Gh7Jk9Mn1Pq3St5Vx7Za9Ce1Gi3Km5")),
    ("aws id AKIAIOSFODNN7EXAMPLE.", ("API_KEY", "AKIAIOSFODNN7EXAMPLE")),
    ("temp ASIAY34FZKBOKMUTVV7A", ("API_KEY", "ASIAY34FZKBOKMUTVV7A")),
    (f"token {GH}", ("API_KEY", GH)),
    ("github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGH",
     ("API_KEY", "github_pat_11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyzABCDEFGH")),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
     ("API_KEY", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx")),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", ("API_KEY", "sk_live_4eC39HqLyjWDarjtT1zdp7dc")),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     ("SECRET", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")),
    ("Authorization: Bearer abcDEF123456ghiJKL789", ("SECRET", "abcDEF123456ghiJKL789")),
    ("password: Hunter2!", ("SECRET", "Hunter2!")),
    ("The password is s3cr3tpass, don't share it", ("SECRET", "s3cr3tpass")),
    ("export OPENAI_API_KEY=Zx81kQpLmN03rTyU", ("SECRET", "Zx81kQpLmN03rTyU")),
    ("db: postgres://admin:pa55word@db.internal:5432/x", ("SECRET", "pa55word")),
]


@pytest.mark.parametrize("text,expected", FOUND)
def test_secret_found(text, expected):
    assert expected in run(SecretsRecognizer(), text)


def test_private_key_block_is_one_span():
    text = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ny"
    found = run(SecretsRecognizer(), text)
    assert found == [("SECRET", text[2:-2])]


NOT_FOUND = [
    "The password is required for every login.",     # "is" + ordinary word
    "sk-learn is a popular library",                 # too short after the prefix
    "AKIA is not a key by itself",
    "Use the token-based approach described above.",
    "The ask-the-expert-mode-of-the-system-works well.",
]


@pytest.mark.parametrize("text", NOT_FOUND)
def test_no_secret(text):
    assert run(SecretsRecognizer(), text) == []


@pytest.mark.parametrize("token,kind", [
    ("TGumno1Vpywq3aFXGiBWEfHZ1rgogBzjhQC0HQ8Z", "mixed"),
    ("k5kD8Tpz3wYWKUjDCUbZMy4VlzGdErzqTU7ATPEx", "mixed"),
    ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "hex"),
    ("state_of_the_art_model_v2_final", None),
    ("ThisIsACamelCaseIdentifierName2", None),
    ("/usr/local/lib/python3.11/site-packages", None),
    ("123e4567-e89b-12d3-a456-426614174000", None),   # a UUID is not a secret
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", None),
])
def test_entropy_classifier(token, kind):
    assert looks_like_secret(token) == kind


def test_high_entropy_scores_and_context():
    rec = HighEntropyTokenRecognizer()
    token = "TGumno1Vpywq3aFXGiBWEfHZ1rgogBzjhQC0HQ8Z"
    plain = rec.analyze(f"see {token} below", None, None)
    near = rec.analyze(f"the api key {token}", None, None)
    assert [r.score for r in plain] == [0.6]
    assert [r.score for r in near] == [0.85]
    sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    assert rec.analyze(f"commit {sha} fixed it", None, None) == []      # hex needs context
    assert len(rec.analyze(f"secret: {sha}", None, None)) == 1


def test_why_never_contains_the_value():
    text = "password: Hunter2! and AKIAIOSFODNN7EXAMPLE"
    for r in SecretsRecognizer().analyze(text, None, None):
        why = r.recognition_metadata["preflight_why"]
        assert text[r.start:r.end] not in why
