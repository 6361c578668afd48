"""A throwaway PostgreSQL cluster on loopback for tests (initdb/pg_ctl in a temp dir).

The binaries come from PATH or the Debian layout (/usr/lib/postgresql/*/bin). PostgreSQL
refuses to run as root, so as root the cluster is made and run as the unprivileged
``postgres`` (or ``nobody``) user through ``runuser``, in a directory that user owns.
Without binaries the tests skip and say why — except in CI (``CI=true``), where setup.sh
must have installed them, so they fail instead.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

PASSWORD = "s3cret-audit-pw"
USER = "preflight_audit"


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def require_postgres() -> tuple[str, str]:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    reason = ("PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
              "apt-get install postgresql (setup.sh does it)")
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self) -> None:
        self.initdb, self.pg_ctl = require_postgres()
        self.as_user: list[str] = []
        self.dir = Path(tempfile.mkdtemp(prefix="preflight-pg-"))
        if os.geteuid() == 0:
            name = next((n for n in ("postgres", "nobody") if _has_user(n)), None)
            if name is None or not shutil.which("runuser"):
                pytest.skip("running as root without a 'postgres' user or runuser: "
                            "PostgreSQL refuses to run as root")
            os.chown(self.dir, pwd.getpwnam(name).pw_uid, -1)
            self.as_user = ["runuser", "-u", name, "--"]
        self.port = _free_port()
        self.data = self.dir / "data"
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_user:
            os.chown(pwfile, pwd.getpwnam(self.as_user[2]).pw_uid, -1)
        self._run(self.initdb, "-D", str(self.data), "-U", USER, "-E", "UTF8",
                  "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={pwfile}")
        pwfile.unlink()
        self.start()

    def _run(self, *cmd: str) -> None:
        subprocess.run([*self.as_user, *cmd], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.dir / "log"), "-w",
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1",
                  "start")

    def kill(self) -> None:
        """Stop at once, as a crash would (no clean shutdown of open sessions)."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{db}"

    def close(self) -> None:
        try:
            self.kill()
        except subprocess.CalledProcessError:
            pass                            # already stopped
        shutil.rmtree(self.dir, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
