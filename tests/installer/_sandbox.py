"""Run a built Preflight executable with no network and record every connect() it tries.

Two independent guards, each used when this machine allows it:
- ``unshare -n`` (root): the process runs in a network namespace with no interface but a
  downed loopback, so nothing can leave even if the code tried;
- ``strace -f -e trace=connect``: every connect() of the process tree is logged, and
  :func:`non_local_connects` lists those aimed at anything but loopback (AF_UNIX sockets,
  e.g. D-Bus for the keyring, are local by construction).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_INET = re.compile(r'connect\(\d+, \{sa_family=AF_INET, sin_port=htons\((\d+)\), '
                   r'sin_addr=inet_addr\("([\d.]+)"\)')
_INET6 = re.compile(r'connect\(\d+, \{sa_family=AF_INET6, sin6_port=htons\((\d+)\),.*?'
                    r'inet_pton\(AF_INET6, "([0-9a-fA-F:.]+)"')


def _works(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def can_unshare_net() -> bool:
    return shutil.which("unshare") is not None and _works(["unshare", "-n", "true"])


def _strace_base() -> list[str]:
    # Not --seccomp-bpf (faster): combined with `unshare -n` it made the frozen app crash
    # with SIGSEGV on the xcb platform here (strace 6.1), while each alone worked.
    return ["strace", "-f", "-qq", "-e", "trace=connect", "-e", "signal=none"]


def can_strace() -> bool:
    return shutil.which("strace") is not None and _works([*_strace_base(), "-o", os.devnull,
                                                          "true"])


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    connects: tuple[str, ...]  # "addr:port" of every non-loopback INET connect attempt
    isolated: tuple[str, ...]  # which guards were active


def non_local_connects(strace_log: str) -> list[str]:
    """INET/INET6 connect() targets in an strace log that are not loopback."""
    found = []
    for port, addr in _INET.findall(strace_log):
        if not addr.startswith("127."):
            found.append(f"{addr}:{port}")
    for port, addr in _INET6.findall(strace_log):
        if addr not in ("::1", "::ffff:127.0.0.1") and not addr.startswith("::ffff:127."):
            found.append(f"[{addr}]:{port}")
    return found


def run_offline(argv: list[str], *, env: dict[str, str], cwd: Path, log_dir: Path,
                stdin: str | None = None, timeout: float = 600) -> Run:
    """Run ``argv`` under every available guard; never raises on a non-zero exit."""
    prefix: list[str] = []
    guards: list[str] = []
    log = log_dir / f"strace-{len(list(log_dir.glob('strace-*')))}.log"
    if can_unshare_net():
        prefix += ["unshare", "-n"]
        guards.append("unshare -n")
    if can_strace():
        prefix += [*_strace_base(), "-o", str(log)]
        guards.append("strace connect")
    res = subprocess.run([*prefix, *argv], input=stdin, env=env, cwd=cwd, text=True,
                         capture_output=True, timeout=timeout)
    trace = log.read_text(errors="replace") if log.exists() else ""
    return Run(res.returncode, res.stdout, res.stderr, tuple(non_local_connects(trace)),
               tuple(guards))
