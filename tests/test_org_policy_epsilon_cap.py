"""The company policy's max_document_epsilon (the ε ledger's cap)."""

from __future__ import annotations

from preflight.core.org_policy import load_org_policy


def test_cap_is_read_and_described(tmp_path):
    path = tmp_path / "org.toml"
    path.write_text("max_document_epsilon = 120\n", encoding="utf-8")
    org = load_org_policy(path)
    assert org.max_document_epsilon == 120.0
    assert org.describe()["sets"]["max_document_epsilon"] == 120.0


def test_bad_cap_breaks_the_policy_with_its_line(tmp_path):
    path = tmp_path / "org.toml"
    path.write_text("allow_resend = true\nmax_document_epsilon = -3\n", encoding="utf-8")
    org = load_org_policy(path)
    assert org.broken
    assert "line 2" in str(org.error) and "max_document_epsilon" in str(org.error)


def test_no_file_means_no_cap():
    assert load_org_policy().max_document_epsilon is None
