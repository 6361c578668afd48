"""The company policy's [audit.central] table: read strictly (a password or options in
the URL, an unknown key, a bad sslmode are refused, naming the line), shown by describe()
and `preflight info`, and fail closed like every other mistake in the file."""

from __future__ import annotations

import pytest

from preflight.core.org_policy import load_org_policy

CENTRAL = """\
version = 1

[audit.central]
url = "postgresql://preflight_audit@audit.example.com:5432/preflight"
password_env = "PREFLIGHT_AUDIT_PASSWORD"
password_keyring = "audit-store"
sslrootcert = "/etc/preflight/ca.pem"
"""


def _load(tmp_path, text):
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return load_org_policy(path)


def test_the_central_store_is_read_with_safe_defaults(tmp_path):
    org = _load(tmp_path, CENTRAL)
    c = org.central_audit
    assert not org.broken and c.sslmode == "verify-full"        # TLS verified by default
    assert (c.password_env, c.password_keyring) == ("PREFLIGHT_AUDIT_PASSWORD", "audit-store")
    assert c.where == "audit.example.com:5432/preflight"
    assert org.describe()["sets"]["audit_central"]["sslrootcert"] == "/etc/preflight/ca.pem"
    assert _load(tmp_path, "version = 1\n").central_audit is None


@pytest.mark.parametrize("line, problem, at", [
    ('url = "postgresql://u:hunter2@h/db"', "must not contain a password", 4),
    ('url = "postgresql://u@h/db?sslmode=disable"', "must not contain options", 4),
    ('url = "https://u@h/db"', "must be a postgresql:// URL", 4),
    ('url = "postgresql://h/db"', "must name the database user", 4),
    ('url = "postgresql://u@h/db"\nsslmode = "sometimes"', "'audit.central.sslmode' must be",
     5),
    ('url = "postgresql://u@h/db"\npassword = "x"', "'audit.central.password' is not a", 5),
    ('url = "postgresql://u@h/db"\npassword_env = "NOT A NAME"', "environment variable name",
     5),
])
def test_a_bad_central_store_names_the_line_and_blocks_sending(tmp_path, line, problem, at):
    org = _load(tmp_path, "version = 1\n\n[audit.central]\n" + line + "\n")
    assert org.broken and org.central_audit is None
    reason = org.send_block_reason()
    assert problem in reason and f"(line {at}: " in reason
    assert "hunter2" not in reason                # a password in the file is never echoed


def test_an_unknown_audit_table_is_refused(tmp_path):
    org = _load(tmp_path, "version = 1\n[audit.elsewhere]\nurl = 1\n")
    assert org.broken and "'audit.elsewhere' is not a company policy key" in str(org.error)
