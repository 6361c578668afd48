"""The audit database is what it claims: a symbolic link, FIFO, device or hard link as
``audit.sqlite3`` (or as the ``-wal``/``-shm``/``-journal`` SQLite opens beside it) is
refused before anything is opened, and no file but the log's own ever has its mode
changed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from preflight.core.errors import ConfigError
from preflight.core.send.audit import AuditLog, Fingerprint

ROOT = Path(__file__).resolve().parents[3]
posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX file kinds")


def _victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    """Someone else's file, readable by all: it must stay exactly as it is."""
    victim = tmp_path / "elsewhere" / name
    victim.parent.mkdir()
    victim.write_bytes(b"shared notes of the finance team\n")
    victim.chmod(0o644)
    return victim


def _untouched(victim: Path) -> None:
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert victim.read_bytes() == b"shared notes of the finance team\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == [victim.name]


@posix_only
def test_a_symlinked_log_is_refused_and_its_target_untouched(tmp_path):
    victim = _victim(tmp_path)
    log = tmp_path / "profile" / "audit.sqlite3"
    log.parent.mkdir()
    log.symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"):
        AuditLog(log)
    _untouched(victim)


@posix_only
@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_symlinked_companion_file_is_refused(tmp_path, suffix):
    victim = _victim(tmp_path)
    log = tmp_path / "profile" / "audit.sqlite3"
    log.parent.mkdir()
    log.with_name(log.name + suffix).symlink_to(victim)
    with pytest.raises(ConfigError, match="symbolic link"):
        AuditLog(log)
    _untouched(victim)
    assert not log.exists()          # nothing was created either


@posix_only
def test_a_hard_linked_log_is_refused_and_its_other_name_untouched(tmp_path):
    victim = _victim(tmp_path)
    log = tmp_path / "profile" / "audit.sqlite3"
    log.parent.mkdir()
    os.link(victim, log)
    with pytest.raises(ConfigError, match="hard-linked"):
        AuditLog(log)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a device node needs root")
def test_a_device_node_as_the_log_keeps_its_mode(tmp_path):
    node = tmp_path / "audit.sqlite3"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))   # a /dev/null twin
    except PermissionError:
        pytest.skip("this container may not make device nodes")
    node.chmod(0o666)                                              # past the umask
    with pytest.raises(ConfigError, match="device"):
        AuditLog(node)
    assert stat.S_IMODE(node.lstat().st_mode) == 0o666


_OPEN_FIFO = """
import sys
from preflight.core.errors import ConfigError
from preflight.core.send.audit import AuditLog
try:
    AuditLog(sys.argv[1])
except ConfigError as err:
    print(err)
"""


@posix_only
def test_a_fifo_as_the_log_is_refused_at_once(tmp_path):
    fifo = tmp_path / "audit.sqlite3"
    os.mkfifo(fifo, 0o644)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "app"), PREFLIGHT_HOME=str(tmp_path / "h"))
    start = time.monotonic()
    try:
        out = subprocess.run([sys.executable, "-c", _OPEN_FIFO, str(fifo)], env=env,
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("opening a FIFO as the audit log hangs")
    assert "FIFO" in out.stdout, out.stderr
    assert time.monotonic() - start < 20
    assert stat.S_IMODE(fifo.lstat().st_mode) == 0o644


@posix_only
def test_the_log_and_its_wal_are_private(tmp_path):
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.begin(kind="send", status="sending", fingerprint=Fingerprint.of("memo"), payload=b"{}")
    for path in tmp_path.glob("audit.sqlite3*"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_verify_of_a_symlinked_copy_is_refused(tmp_path):
    real = tmp_path / "real.sqlite3"
    AuditLog(real).close()
    link = tmp_path / "copy.sqlite3"
    try:
        link.symlink_to(real)
    except OSError:
        pytest.skip("no symbolic links here")
    with pytest.raises(ConfigError, match="symbolic link"):
        AuditLog.verify_file(link)
