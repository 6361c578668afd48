"""Credentials and SSNs written in prose (issue 15, item 3); codes after an invoice,
ticket or case label are in test_labeled_identifiers.py.

Positive sentences are in the style of ordinary e-mails, chat messages and config
snippets; the negative ones talk about passwords, PINs and ids without giving one."""

from __future__ import annotations

import pytest

from preflight.core.pii.recognizers.identifiers import LabeledIdentifierRecognizer
from preflight.core.pii.recognizers.reference_numbers import ReferenceNumberRecognizer
from preflight.core.pii.recognizers.secrets import SecretsRecognizer

from pii_testutil import run

CREDENTIALS = [
    ("Meeting notes: the admin password is Falcon#2025!admin and we rotate it next week.",
     "Falcon#2025!admin"),
    ("Hi all, the wifi password for the guest network is Summer2024!", "Summer2024!"),
    ("pwd: hunter2", "hunter2"),
    ("Your PIN 4821 expires soon.", "4821"),
    ("my pin number is 193847, don't tell anyone", "193847"),
    ("Use postgres://admin:S3cret@db.internal:5432/prod for the migration.", "S3cret"),
    ("Server=tcp:x.database.windows.net;User ID=sa;Password=Pa55w0rd;", "Pa55w0rd"),
    ("Data Source=srv;Initial Catalog=db;User Id=app;Pwd=Xy7!pq;", "Xy7!pq"),
    ('The admin password is "Falcon#2025!admin".', "Falcon#2025!admin"),
    ("Admin password Falcon#2025!admin was set by Tom.", "Falcon#2025!admin"),
    ("The new admin password will be Falcon#2025!admin from Monday.", "Falcon#2025!admin"),
    ("The admin password, Falcon#2025!admin, must be changed.", "Falcon#2025!admin"),
    ("Login with user admin and password Falcon#2025!admin", "Falcon#2025!admin"),
    ("The VPN password has been changed to Winter-2025 as of today.", "Winter-2025"),
    ("Password for the staging db: t7#kQ9zL", "t7#kQ9zL"),
    ("the shared mailbox passphrase is CorrectHorse42?", "CorrectHorse42"),
    # other cue words (issue 45, item 5)
    ("The old credential was Xy7#pQ2! and nobody changed it.", "Xy7#pQ2!"),
    ("Login: admin / pw: Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("my pw is hunter22, don't laugh", "hunter22"),
    ("The passcode is 7Gh!2kLm.", "7Gh!2kLm"),
    ("creds are deploy:Qw3rty!9 until Friday", "deploy:Qw3rty!9"),
    ("The key was K3y-2024-Q, keep it safe.", "K3y-2024-Q"),
    ("The API key is 9f8a7b6c5d4e3f2a1b0cZ", "9f8a7b6c5d4e3f2a1b0cZ"),
    ("The token was ya29.A0ARrdaM-xyz123 when it leaked.", "ya29.A0ARrdaM-xyz123"),
    ("The door code is 7731.", "7731"),
    ("Use passphrase 'correct horse battery staple' for the vault.",
     "correct horse battery staple"),
]


@pytest.mark.parametrize("text,value", CREDENTIALS)
def test_credential_in_prose_is_a_secret(text, value):
    assert ("SECRET", value) in run(SecretsRecognizer(), text)


PROSE_WITHOUT_CREDENTIAL = [
    "Password reset is handled by IT.",
    "The PIN code feature ships in version 2.0.1 in room 204.",
    "Reset your password on the portal before 2024. It costs $49.99.",
    "The password is required for every login.",
    "The password is correct.",
    "Passwords must be at least 12 characters long.",
    "Your password expires in 90 days.",
    "The password was reset on 2024-05-01 by the helpdesk.",
    "Use a password manager such as 1Password or Bitwarden.",
    "the password policy v2 applies from 2025.",
    "The password for the Wi-Fi is on the whiteboard.",
    "What is the password for the guest network?",
    "Enter your PIN at the terminal and press OK.",
    "Pin the 2024 roadmap to the channel.",
    # what a sanitizer wrote in place of a password is not a password
    "The password is ******** in the screenshot.",
    "The password is <SECRET_1>.",
    "Password: [REDACTED]",
    # weaker cue words need a random-looking value
    "The key is to listen to the customer.",
    "The secret to success is Practice2024.",
    "Your token expires on 2024-05-01.",
    "Login is handled by the SSO portal.",
    "Our credentials are in the vault.",
    "I pass Route66 every day on the way to work.",
]


@pytest.mark.parametrize("text", PROSE_WITHOUT_CREDENTIAL)
def test_talk_about_passwords_is_not_a_secret(text):
    assert run(SecretsRecognizer(), text) == []


def test_connection_string_separator_is_not_part_of_the_password():
    text = "Server=db;Password=Pa55w0rd;Encrypt=true"
    values = {v for _, v in run(SecretsRecognizer(), text)}
    assert values == {"Pa55w0rd"}


LABELLED = [
    ("SSN: 123-45-6789", ("US_SSN", "123-45-6789")),
    ("His social security number 078-05-1120 was on the form.", ("US_SSN", "078-05-1120")),
    ("Social Security No. 219 09 9999", ("US_SSN", "219 09 9999")),
    ("123-45-6789 (SSN)", ("US_SSN", "123-45-6789")),
]


@pytest.mark.parametrize("text,expected", LABELLED)
def test_labelled_identifier(text, expected):
    assert run(LabeledIdentifierRecognizer(), text) == [expected]


UNLABELLED = [
    "The PIN code feature ships in version 2.0.1 in room 204.",
    "SSN: 000-00-0000",                          # a blank form
    "Call 555-123-4567 about your SSN card.",    # a phone number, not SSN-shaped
    "Order 123-45-6789 shipped.",                # SSN-shaped, no SSN word
    "It costs $49.99 per seat.",
]


@pytest.mark.parametrize("text", UNLABELLED)
def test_no_label_no_identifier(text):
    assert run(LabeledIdentifierRecognizer(), text) == []


def test_new_types_have_a_category_and_whys_never_hold_the_value():
    from preflight.core.pii.entities import category_of
    from preflight.core.types import Category

    assert category_of("ID_NUMBER") is Category.DIRECT_IDENTIFIER
    text = "SSN 123-45-6789, employee ID NW-204871, the password is Falcon#2025!admin"
    for rec in (SecretsRecognizer(), LabeledIdentifierRecognizer(), ReferenceNumberRecognizer()):
        for r in rec.analyze(text, None, None):
            assert text[r.start:r.end] not in r.recognition_metadata["preflight_why"]


@pytest.mark.parametrize("text,handles", [
    ("Thanks @jdoe and @alice-w for the fix (see #123).", ["@jdoe", "@alice-w"]),
    ("@maria.lopez: can you review? cc @here", ["@maria.lopez"]),     # not the broadcast
    ("Ping @octocat.", ["@octocat"]),                                  # the full stop ends it
    ("(@j_roe_99)", ["@j_roe_99"]),
    # an address, a domain, a URL's path, code
    ("Mail jane@example.com or visit https://medium.com/@writer.", []),
    ("    @property\n    def name(self):", []),
    ("@pytest.fixture\ndef thing():", []),
    ('@app.route("/x")', []),
    ("@media screen { }", []),
    (" * @param value the value", []),
    ("@Override\npublic String toString()", []),
    ("at @2024 and @ 3pm", []),                                        # no letter; no handle
])
def test_user_handles(text, handles):
    found = run(LabeledIdentifierRecognizer(), text)
    assert found == [("USERNAME", h) for h in handles]


def test_a_handle_is_a_direct_identifier_with_a_readable_stand_in():
    import random

    from faker import Faker

    from preflight.core.pii.entities import category_of
    from preflight.core.sanitize.surrogates import surrogate_for
    from preflight.core.types import Category

    assert category_of("USERNAME") is Category.DIRECT_IDENTIFIER
    fake = Faker()
    fake.seed_instance(3)
    stand_in = surrogate_for("@jdoe", "USERNAME", fake, random.Random(3))
    assert stand_in.startswith("@") and stand_in != "@jdoe" and len(stand_in) > 2
