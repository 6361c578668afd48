"""Two more things the user controls that must not loosen a company rule: the audit log's
existence (deleting it, swapping it, putting back an older copy would reset the resend
check and the ε spent per document) and a provider's definition (a stored key follows
the provider's origin, never its name). Loopback servers only."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, MemoryKeyring, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.cli import main as cli  # noqa: E402
from preflight.core import paths  # noqa: E402
from preflight.core.config import ProviderSettings, Settings, save_settings  # noqa: E402
from preflight.core.send.audit import AuditLog  # noqa: E402

KEY = "sk-proj-Zq81LmXv0cTe3NbR7uYwKd2p"


def LOG() -> Path:  # noqa: N802 - reads like the path it is
    return paths.data_dir() / "audit.sqlite3"
NO_RESEND = 'allow_resend = false\nallowed_providers = ["{loop}"]\n'


def write_org(text: str) -> Path:
    path = Path(os.environ["PREFLIGHT_ORG_POLICY"])
    path.write_text(text, encoding="utf-8")
    return path


def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)          # not a tty: set-key reads one line
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(argv))
    finally:
        sys.stdin = old
    return code, out.getvalue(), err.getvalue()


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("preflight: error")]


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None:
                        FakeDetector())
    with fake_mechanisms():
        yield


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture
def no_keyring():
    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def letter(tmp_path: Path, name: str, body: str) -> Path:
    doc = tmp_path / name
    doc.write_text(body, encoding="utf-8")
    return doc


def send(doc: Path, *extra: str) -> tuple[int, str]:
    code, _out, err = run("send", str(doc), "--method", "placeholder", "--yes", "--no-learn",
                          *extra)
    return code, err


# -- the audit log the company's rules read ----------------------------------------------

def remove_log() -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(LOG()) + suffix).unlink(missing_ok=True)


def snapshot(log: Path, copy: Path) -> None:
    """A consistent copy of ``log`` as it is now (what a backup would hold)."""
    src, dst = sqlite3.connect(log), sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.close()


def replace_log() -> None:
    remove_log()
    AuditLog(LOG()).close()          # a fresh, empty, valid log


@pytest.mark.parametrize("vanish", [remove_log, replace_log], ids=["deleted", "replaced"])
def test_a_lost_audit_log_does_not_reset_the_resend_rule(server, tmp_path, no_keyring,
                                                         vanish):
    write_org(NO_RESEND.format(loop=server.url))
    save_settings(Settings(providers=[ProviderSettings("loop", server.url, "m")],
                           default_provider="loop"))
    doc = letter(tmp_path, "memo.txt", "Alice Martin asked Bob Stone for the Q3 budget.")
    assert send(doc)[0] == 0
    lost = AuditLog(LOG()).log_id
    vanish()
    code, err = send(doc)                             # the same document again
    (line,) = error_lines(err)
    assert code == 2 and lost in line and "lost_logs" in line and "Traceback" not in err
    assert len(server.requests) == 1
    # the window's red banner says the same
    from preflight.app.window_doorway import WindowDoorway

    assert lost in WindowDoorway(Settings()).org_policy.send_block_reason()
    # IT accepts the loss: the current log is the log from now on
    write_org(NO_RESEND.format(loop=server.url) + f'[audit]\nlost_logs = ["{lost}"]\n')
    assert send(doc)[0] == 0 and len(server.requests) == 2
    write_org(NO_RESEND.format(loop=server.url))
    code, err = send(doc)
    assert code == 2 and "does not allow sending it again" in err


def test_an_older_copy_of_the_log_is_refused(server, tmp_path, no_keyring):
    write_org(NO_RESEND.format(loop=server.url))
    save_settings(Settings(providers=[ProviderSettings("loop", server.url, "m")],
                           default_provider="loop"))
    first = letter(tmp_path, "a.txt", "Alice Martin asked Bob Stone for the Q3 budget.")
    second = letter(tmp_path, "b.txt", "Carol Diaz moved the board meeting to Lyon.")
    assert send(first)[0] == 0
    log = LOG()
    snapshot(log, tmp_path / "old.sqlite3")           # the log as it is now, -wal included
    assert send(second)[0] == 0
    remove_log()
    shutil.copy(tmp_path / "old.sqlite3", log)        # the copy from before `second`
    code, err = send(second)
    (line,) = error_lines(err)
    assert code == 2 and "older copy" in line and len(server.requests) == 2


def test_the_record_in_the_keyring_survives_the_data_folder(server, tmp_path,
                                                            memory_keyring):
    write_org(NO_RESEND.format(loop=server.url))
    save_settings(Settings(providers=[ProviderSettings("loop", server.url, "m")],
                           default_provider="loop"))
    doc = letter(tmp_path, "memo.txt", "Alice Martin asked Bob Stone for the Q3 budget.")
    assert send(doc)[0] == 0
    # one record of the log, in the keyring; none of it in the settings folder
    assert [s for s, _u in memory_keyring.store] == ["preflight"]
    assert not list(paths.config_dir().glob("audit-*"))
    shutil.rmtree(paths.data_dir())
    code, err = send(doc)
    assert code == 2 and "is missing" in err and len(server.requests) == 1


def test_without_a_rule_that_reads_the_log_a_new_log_is_adopted(server, tmp_path,
                                                                 no_keyring):
    save_settings(Settings(providers=[ProviderSettings("loop", server.url, "m")],
                           default_provider="loop"))
    doc = letter(tmp_path, "memo.txt", "Alice Martin asked Bob Stone for the Q3 budget.")
    assert send(doc)[0] == 0
    remove_log()
    code, _out, _err = run("send", str(doc), "--method", "placeholder", "--yes",
                           "--no-learn", "--allow-resend")
    assert code == 0 and len(server.requests) == 2


# -- keys follow the provider's origin, not its name --------------------------------------

def test_a_provider_re_added_elsewhere_does_not_take_its_key_along(tmp_path,
                                                                  memory_keyring):
    doc = letter(tmp_path, "memo.txt", "The Q3 budget is due on Friday.")
    with CaptureServer() as first, CaptureServer() as second:
        assert run("providers", "add", "acme", "--base-url", first.url, "--model", "m")[0] == 0
        assert run("providers", "set-key", "acme", stdin=KEY + "\n")[0] == 0
        assert send(doc)[0] == 0
        assert first.requests[0].headers["Authorization"] == f"Bearer {KEY}"
        code, out, _ = run("providers", "add", "acme", "--base-url", second.url,
                           "--model", "m")
        assert code == 0 and "was deleted" in out
        # a loopback server needs no key: none is sent
        assert send(doc, "--allow-resend")[0] == 0
        assert len(second.requests) == 1 and KEY.encode() not in second.requests[0].all_bytes
        # edited in the settings file directly, past `providers add`: the same
        save_settings(Settings(providers=[ProviderSettings("acme", first.url, "m")],
                               default_provider="acme"))
        assert run("providers", "set-key", "acme", stdin=KEY + "\n")[0] == 0
        save_settings(Settings(providers=[ProviderSettings("acme", second.url, "m")],
                               default_provider="acme"))
        assert send(doc, "--allow-resend")[0] == 0
        assert len(second.requests) == 2
        assert all(KEY.encode() not in r.all_bytes for r in second.requests)


def test_moving_a_provider_to_another_host_asks_for_the_key_again(tmp_path,
                                                                 memory_keyring):
    doc = letter(tmp_path, "memo.txt", "The Q3 budget is due on Friday.")
    assert run("providers", "add", "acme", "--base-url", "https://api.acme-llm.test/v1",
               "--model", "m")[0] == 0
    assert run("providers", "set-key", "acme", stdin=KEY + "\n")[0] == 0
    code, out, _ = run("providers", "add", "acme", "--base-url",
                       "https://llm.elsewhere.test/v1", "--model", "m")
    assert code == 0 and "set-key acme" in out
    code, err = send(doc)                              # refused before any connection
    (line,) = error_lines(err)
    assert code == 2 and "No API key for provider 'acme' at https://llm.elsewhere.test:443" \
        in line and KEY not in err
    assert KEY not in str(memory_keyring.store.keys())


def test_the_window_binds_a_key_to_the_address_it_was_given_for(memory_keyring):
    from preflight.app.window_doorway import WindowDoorway

    door = WindowDoorway(Settings())
    here = ProviderSettings("acme", "https://api.acme-llm.test/v1", "m")
    door.set_key(here, KEY, remember=True)
    assert door.key_source(here) == "stored in the OS keyring"
    moved = ProviderSettings("acme", "https://llm.elsewhere.test/v1", "m")
    assert door.key_source(moved) == "none set — use “Set API key…”"
