"""The CLI never shows a traceback: bad input gives one line on stderr and a non-zero exit;
odd but valid text gives correct output with offsets into the exact input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # spawns the CLI, which loads spaCy


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "preflight", *args],
        input=stdin, capture_output=True, timeout=300,
    )


def assert_clean_failure(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("preflight: error:"), err
    return lines[0]


@pytest.mark.parametrize("command", [["detect", "--json"], ["sanitize", "--method", "placeholder", "--json"]])
@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", "binary"),
        (b"caf\xe9", "UTF-8"),
        (b"a" * 5_000_000, "MB"),
    ],
)
def test_bad_bytes_on_stdin(command, payload, needle) -> None:
    line = assert_clean_failure(run_cli(*command, "-", stdin=payload))
    assert needle in line


def test_directory_and_missing_file(tmp_path) -> None:
    assert "folder" in assert_clean_failure(run_cli("detect", str(tmp_path), "--json"))
    assert "does not exist" in assert_clean_failure(
        run_cli("sanitize", str(tmp_path / "x.txt"), "--method", "redact", "--json"))


def test_empty_input_gives_empty_results() -> None:
    proc = run_cli("detect", "-", "--json", stdin=b"")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["entities"] == []
    proc = run_cli("sanitize", "-", "--method", "placeholder", "--json", stdin=b"")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == ""


def test_crlf_emoji_and_mixed_scripts_keep_exact_offsets() -> None:
    text = ("Hi \U0001F600 team,\r\nPlease mail jane.doe@example.com or call "
            "+1 415-555-0132.\r\n\u6771\u4eac office: \u0645\u0631\u062d\u0628\u0627\r\n")
    proc = run_cli("detect", "-", "--json", stdin=text.encode())
    assert proc.returncode == 0, proc.stderr
    ents = json.loads(proc.stdout)["entities"]
    values = {text[e["start"]:e["end"]] for e in ents}
    assert "jane.doe@example.com" in values
    assert any("415-555-0132" in v for v in values)
    proc = run_cli("sanitize", "-", "--method", "placeholder", "--json", stdin=text.encode())
    out = json.loads(proc.stdout)
    assert "jane.doe@example.com" not in out["text"]
    assert "\r\n" in out["text"] and "\U0001F600" in out["text"]
    for ch in out["changes"]:
        assert text[ch["source_start"]:ch["source_end"]] in values


def test_unknown_method_is_a_clean_error() -> None:
    proc = run_cli("sanitize", "-", "--method", "nope", "--json", stdin=b"hello")
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "Traceback" not in err
