"""Configuration and output files are what they claim: every file Preflight reads as
configuration or writes is a regular file. A symbolic link, a FIFO or a device where one
of them belongs is refused at once with a message naming it (or, for a file that only
steers or speeds things up, ignored and left alone): never followed, never waited on,
never read without a bound."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from preflight.core.config import Settings, load_settings, save_settings
from preflight.core.errors import ConfigError
from preflight.core.org_policy import load_org_policy
from preflight.core.sanitize.placeholder_memory import PlaceholderMemory, memory_path
from preflight.core.sanitize.policy import load_policy_file
from preflight.core.sanitize.vault_file import read_vault_json

ROOT = Path(__file__).resolve().parents[2]
WATCHDOG_S = 5.0    # a call still blocked on a FIFO after this is released (and fails)
QUICK_S = 4.0       # "at once", generous for a loaded machine; below WATCHDOG_S (a blocked call)

COMPANY_POLICY = """\
# Northwind Traders, deployed by IT
min_utility = 0.4
allow_overrides = false
[minimum.categories]
secret = "redact"
"""
OWN_POLICY = 'name = "board-memos"\ntitle = "Board memos"\n[types]\nPERSON = "placeholder"\n'
SETTINGS = json.dumps({"schema_version": 2, "detection": {"score_threshold": 0.35}})
VAULT = json.dumps({"schema_version": 1, "entries": []})
MEMORY = json.dumps({"schema_version": 1, "salt": "00" * 16,
                     "tokens": {"a" * 32: "<PERSON_7>"}})


@contextlib.contextmanager
def released_after(fifo: Path):
    """If the code under test blocks on ``fifo`` (an open or a write waiting for the other
    end), play the other end after WATCHDOG_S, so the test fails on its timing instead of
    hanging the suite."""
    done = threading.Event()

    def release() -> None:
        if done.wait(WATCHDOG_S):
            return
        with contextlib.suppress(OSError):      # a reader waits: a writer that closes = EOF
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        with contextlib.suppress(OSError):      # a writer waits: drain until it is done
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            while not done.wait(0.05):
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 1 << 16)
            os.close(fd)

    t = threading.Thread(target=release, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join(timeout=2 * WATCHDOG_S)


def hostile(kind: str, path: Path, decoy: str) -> Path:
    """Put a ``kind`` special file at ``path``; a link points to a regular file holding
    ``decoy`` (valid content, so following the link would "work"). Returns the decoy."""
    target = path.parent / f"decoy-{path.name}"
    target.write_text(decoy, encoding="utf-8")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(target)
    elif kind == "link to a fifo":
        fifo = path.parent / f"fifo-{path.name}"
        os.mkfifo(fifo)
        path.symlink_to(fifo)
    else:
        raise AssertionError(kind)
    return target


def timed(fn: Callable[[], object], fifo: Path) -> tuple[object, float]:
    """``fn()`` → (its result or the exception it raised, seconds)."""
    t0 = time.monotonic()
    with released_after(fifo):
        try:
            result: object = fn()
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            result = exc
    return result, time.monotonic() - t0


WORDS = {"fifo": "named pipe", "link": "symbolic link", "link to a fifo": "symbolic link"}
KINDS = tuple(WORDS)


# -- reading configuration ------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_settings_file_is_never_followed_or_waited_on(kind, tmp_path):
    path = tmp_path / "settings.json"
    hostile(kind, path, SETTINGS)
    result, took = timed(lambda: load_settings(path), path)
    assert took < QUICK_S, took
    assert isinstance(result, ConfigError) and WORDS[kind] in result.message, result
    assert str(path) in result.message


@pytest.mark.parametrize("kind", KINDS)
def test_company_policy_that_is_not_a_regular_file_fails_closed(kind, tmp_path):
    path = tmp_path / "policy.toml"
    hostile(kind, path, COMPANY_POLICY)
    org, took = timed(lambda: load_org_policy(path), path)
    assert took < QUICK_S, took
    assert org.broken, "a company policy read through a link or a pipe is not the file"
    reason = org.send_block_reason()
    assert reason is not None and WORDS[kind] in reason and str(path) in reason


@pytest.mark.parametrize("kind", KINDS)
def test_policy_file_given_with_policy_flag(kind, tmp_path):
    path = tmp_path / "board-memos.toml"
    hostile(kind, path, OWN_POLICY)
    result, took = timed(lambda: load_policy_file(path), path)
    assert took < QUICK_S, took
    assert isinstance(result, ConfigError) and WORDS[kind] in str(result), result


@pytest.mark.parametrize("kind", KINDS)
def test_vault_file_to_restore_from(kind, tmp_path):
    path = tmp_path / "quarterly-report.vault.json"
    hostile(kind, path, VAULT)
    result, took = timed(lambda: read_vault_json(path), path)
    assert took < QUICK_S, took
    assert isinstance(result, ConfigError) and WORDS[kind] in result.message, result


@pytest.mark.parametrize("kind", KINDS)
def test_placeholder_memory_is_neither_read_nor_written_through(kind, tmp_path):
    identity = "file:/home/ana/reports/supplier-review.txt"
    path = memory_path(identity, tmp_path)
    decoy = hostile(kind, path, MEMORY)
    memory, took = timed(lambda: PlaceholderMemory.open(identity, tmp_path), path)
    assert took < QUICK_S, took
    assert isinstance(memory, PlaceholderMemory) and len(memory) == 0   # decoy not read
    memory.record("placeholder", "PERSON", "ana lindqvist", "<PERSON_1>")
    memory.save()                      # kept in memory only: nothing replaces the link
    assert os.path.islink(path) or path.is_fifo()
    assert decoy.read_text(encoding="utf-8") == MEMORY


def test_model_hash_cache_is_not_trusted_through_a_link(tmp_path):
    from preflight.runtime.hashing import VerifiedHashCache

    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF weights")
    forged = json.dumps({str(model.resolve()): {"fingerprint": "fp", "sha256": "0" * 64}})
    cache_file = tmp_path / "verified-models.json"
    decoy = hostile("link", cache_file, forged)
    cache = VerifiedHashCache(cache_file)
    assert cache.get(model, "fp") is None           # the forged digest is not believed
    cache.put(model, "fp", "1" * 64)                 # a failed cache write costs speed only
    assert cache_file.is_symlink() and decoy.read_text(encoding="utf-8") == forged


# A device cannot be made without root; /dev/zero itself stands for one. Each runs in a
# child process with an address-space limit: reading it without a bound ends there in a
# MemoryError (after eating the memory) instead of in a message.
DEVICE_READERS = {
    "company policy": "from preflight.core.org_policy import load_org_policy as f\n"
                      "print(f(P).send_block_reason())",
    "settings": "from preflight.core.config import load_settings as f\nf(P)",
    "policy file": "from preflight.core.sanitize.policy import load_policy_file as f\nf(P)",
    "vault": "from preflight.core.sanitize.vault_file import read_vault_json as f\nf(P)",
}


@pytest.mark.parametrize("what", sorted(DEVICE_READERS))
def test_a_device_is_refused_before_any_byte_is_read(what, tmp_path):
    code = ("from pathlib import Path\nP = Path('/dev/zero')\ntry:\n"
            + "".join(f"    {line}\n" for line in DEVICE_READERS[what].splitlines())
            + "except Exception as exc:\n    print(exc)\n")
    limit = 1 << 30

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), OPENBLAS_NUM_THREADS="1",
               PREFLIGHT_HOME=str(tmp_path / "home"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-800:]
    assert "character device" in proc.stdout and "/dev/zero" in proc.stdout, proc.stdout
    assert took < 60, took


# -- writing --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_settings_are_not_saved_over_a_link_or_a_pipe(kind, tmp_path):
    path = tmp_path / "settings.json"
    decoy = hostile(kind, path, SETTINGS)
    result, took = timed(lambda: save_settings(Settings(), path), path)
    assert took < QUICK_S, took
    assert isinstance(result, ConfigError) and WORDS[kind] in result.message, result
    assert path.is_symlink() or path.is_fifo()              # still what it was
    assert decoy.read_text(encoding="utf-8") == SETTINGS


@pytest.mark.parametrize("sidecar", ["", "-wal", "-journal"])
def test_flow_learning_database_is_not_opened_through_a_link(sidecar, tmp_path):
    from preflight.core.utility.flow import FlowLearner

    db = tmp_path / "utility_flow.sqlite"
    decoy = hostile("link", db.with_name(db.name + sidecar), "")
    with pytest.raises(ConfigError, match="symbolic link"):
        FlowLearner(db)
    assert decoy.read_bytes() == b""                   # SQLite wrote nothing through it


def test_refitted_regressor_is_not_written_through_a_link(tmp_path):
    from preflight.core.utility.predictor import save_bundle

    bundle_path = tmp_path / "regressor.joblib"
    decoys = [hostile("link", bundle_path.with_suffix(".tmp"), "keep"),
              hostile("link", bundle_path, "keep")]
    with pytest.raises(OSError, match="symbolic link"):
        save_bundle({"format": 3, "models": {}}, bundle_path)
    assert all(d.read_text(encoding="utf-8") == "keep" for d in decoys)
    assert bundle_path.is_symlink()


def test_crash_log_is_not_appended_through_a_link(capsys):
    from preflight.cli import main as cli
    from preflight.core import paths

    log = paths.cache_dir() / "crash.log"
    decoy = hostile("link", log, "system notes\n")
    try:
        raise RuntimeError("a bug")
    except RuntimeError as exc:
        assert cli._internal_error(exc) == 70
    assert "no crash log could be written" in capsys.readouterr().err
    assert decoy.read_text(encoding="utf-8") == "system notes\n" and log.is_symlink()


def test_first_run_marker_over_a_link_is_left_alone(caplog):
    from preflight.app import first_run
    from preflight.core import paths

    marker = paths.config_dir() / first_run.MARKER
    paths.config_dir().mkdir(parents=True, exist_ok=True)
    decoy = hostile("link", marker, "not yours")
    first_run.mark_guide_seen()                        # no error for a guide
    assert marker.is_symlink() and decoy.read_text(encoding="utf-8") == "not yours"


def test_an_answer_saved_over_a_link_is_refused(tmp_path):
    from preflight.core.fsutil import NotARegularFile, atomic_write_text

    target = tmp_path / "answer.md"
    decoy = hostile("link", target, "# minutes of the board")
    with pytest.raises(NotARegularFile) as info:
        atomic_write_text(target, "The summary.")
    assert "symbolic link" in info.value.strerror        # what the window's dialog shows
    assert decoy.read_text(encoding="utf-8") == "# minutes of the board"
