"""`preflight sanitize`: in-process with a fake detector, plus one real run (slow)."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from preflight.app.services import Services
from preflight.cli import main as cli
from preflight.core import paths
from preflight.core.sanitize.base import mechanism_names
from preflight.core.sanitize.vault import Vault, restore
from preflight.core.types import Category, Span

DOC = "Ann Lee wrote to bob@acme.com on 2021-03-05.\r\nAnn Lee, 42 years old, pays 4111 1111 1111 1111."
PATTERNS = [(r"Ann Lee", "PERSON"), (r"\S+@\S+\.com", "EMAIL_ADDRESS"),
            (r"\d{4}-\d\d-\d\d", "DATE_TIME"), (r"42 years old", "AGE"),
            (r"4111 1111 1111 1111", "CREDIT_CARD")]


class FakeDetector:
    warnings: list[str] = []

    def __init__(self, *_a, **_k):
        self.calls = 0

    def detect(self, text: str) -> list[Span]:
        spans = [Span(m.start(), m.end(), typ, Category.DIRECT_IDENTIFIER, 0.9, "fake", "fake")
                 for pat, typ in PATTERNS for m in re.finditer(pat, text)]
        return sorted(spans, key=lambda s: s.start)


@pytest.fixture(autouse=True)
def fake_detector(monkeypatch):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: FakeDetector())


def run(capsys, *argv, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def doc(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_bytes(DOC.encode())
    return path


@pytest.mark.parametrize("method", ["redact", "delete", "mask", "generalize", "placeholder",
                                    "pseudonym"])
def test_json_output_has_text_and_changes(capsys, doc, method):
    code, out, err = run(capsys, "sanitize", str(doc), "--method", method, "--json",
                         "--seed", "1")
    assert code == 0, err
    data = json.loads(out)
    assert data["method"] == method
    assert "Ann Lee" not in data["text"] and "bob@acme.com" not in data["text"]
    assert "\r\n" in data["text"]
    assert len(data["changes"]) == 6
    for ch in data["changes"]:
        assert set(ch) == {"start", "end", "source_start", "source_end", "type"}
        # change ranges index the exact input (CRLF counted as two characters)
        assert DOC[ch["source_start"]:ch["source_end"]].strip() != ""
    if method in ("placeholder", "pseudonym"):
        assert data["reversible"] is True
        assert data["vault"].endswith(".json")
        assert "vault written to" in err
    else:
        assert "vault" not in data and err == ""


def test_plain_output_is_the_sanitized_text_exactly(capsys, doc):
    code, out, err = run(capsys, "sanitize", str(doc), "-m", "placeholder")
    assert code == 0
    assert out == ("<PERSON_1> wrote to <EMAIL_ADDRESS_1> on <DATE_TIME_1>.\r\n<PERSON_1>, "
                   "<AGE_1>, pays <CREDIT_CARD_1>.")


def test_default_vault_path_and_permissions(capsys, doc):
    code, out, err = run(capsys, "sanitize", str(doc), "-m", "placeholder")
    expected = paths.data_dir() / "vaults" / f"{__import__('hashlib').sha256(DOC.encode()).hexdigest()}.json"
    assert str(expected) in err
    assert stat.S_IMODE(os.stat(expected).st_mode) == 0o600
    assert restore(out, Vault.load(expected)) == DOC
    assert str(paths.data_dir()).startswith(os.environ["PREFLIGHT_HOME"])


def test_explicit_vault_and_restore_round_trip(capsys, doc, tmp_path, monkeypatch):
    vault = tmp_path / "my.vault.json"
    code, out, err = run(capsys, "sanitize", str(doc), "-m", "pseudonym", "--seed", "9",
                         "--vault", str(vault))
    assert code == 0 and vault.exists()
    sanitized = tmp_path / "s.txt"
    sanitized.write_bytes(out.encode())
    code, back, err = run(capsys, "restore", str(sanitized), "--vault", str(vault))
    assert code == 0, err
    assert back == DOC
    # and from stdin
    code, back, err = run(capsys, "restore", "-", "--vault", str(vault), stdin=out,
                          monkeypatch=monkeypatch)
    assert back == DOC


def test_stdin_input(capsys, monkeypatch):
    code, out, err = run(capsys, "sanitize", "-", "-m", "redact", stdin="Hi Ann Lee!",
                         monkeypatch=monkeypatch)
    assert (code, out) == (0, "Hi [REDACTED]!")


def test_seed_makes_pseudonyms_reproducible(capsys, doc):
    outs = [run(capsys, "sanitize", str(doc), "-m", "pseudonym", "--seed", s)[1]
            for s in ("4", "4", "5")]
    assert outs[0] == outs[1] != outs[2]


def test_vault_for_irreversible_method_is_ignored_with_a_warning(capsys, doc, tmp_path):
    code, out, err = run(capsys, "sanitize", str(doc), "-m", "mask", "--vault",
                         str(tmp_path / "v.json"))
    assert code == 0 and "not reversible" in err
    assert not (tmp_path / "v.json").exists()


def test_params_reach_the_mechanism(capsys, doc, monkeypatch):
    seen = {}

    class Spy:
        name = "spy"

        def sanitize(self, text, spans, params):
            from preflight.core.types import SanitizedText, apply_replacements

            seen.update(params=params, spans=spans)
            out, changes = apply_replacements(
                text, [(s.start, s.end, text[s.start:s.end].upper(), s.type) for s in spans])
            return SanitizedText(out, "spy", changes)

    monkeypatch.setattr(Services, "mechanism", lambda self, name, **kw: Spy())
    code, out, err = run(capsys, "sanitize", str(doc), "--policy", "identifiers-dx",
                         "--epsilon", "12.5", "--seed", "3")
    p = seen["params"]
    assert (p.epsilon, p.seed) == (12.5, 3)
    assert len(seen["spans"]) == 6 and out == DOC.replace("Ann Lee", "ANN LEE").replace(
        "bob@acme.com", "BOB@ACME.COM").replace("years old", "YEARS OLD")


def test_method_choices_come_from_the_registry(capsys):
    with pytest.raises(SystemExit):
        cli.main(["sanitize", "--help"])
    help_text = capsys.readouterr().out
    for name in mechanism_names():
        assert name in help_text


@pytest.mark.parametrize("argv, needle", [
    (["sanitize", "/nonexistent/x.txt", "-m", "redact"], "does not exist"),
])
def test_bad_input_is_one_clean_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


@pytest.mark.slow
def test_real_detector_end_to_end(tmp_path):
    text = ("Dear Maria Keller,\nplease call me at +1 415-555-0132 or write to "
            "maria.keller@example.com. Card 4111 1111 1111 1111.\nRegards, John Smith")
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8")
    vault = tmp_path / "v.json"
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "preflight", "sanitize", str(src), "-m",
                           "placeholder", "--vault", str(vault), "--json"],
                          capture_output=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(proc.stdout)
    for secret in ("maria.keller@example.com", "4111 1111 1111 1111", "415-555-0132"):
        assert secret not in data["text"]
    assert "<EMAIL_ADDRESS_1>" in data["text"]
    out = tmp_path / "out.txt"
    out.write_text(data["text"], encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "preflight", "restore", str(out), "--vault",
                           str(vault)], capture_output=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == text
