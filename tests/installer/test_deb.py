"""The Debian package: contents, metadata, maintainer scripts, and a real install.

Needs dist/preflight_<version>_<arch>.deb from `installer/build_linux.sh`; skipped (saying
so) without one, and failed under CI (CI=true), where .ci/run builds it first. The install
test changes the system (dpkg -i, then dpkg --purge), so it runs only as root with
PREFLIGHT_TEST_DEB_INSTALL=1 (`installer/build_linux.sh --test` sets it) and never when a
`preflight` package is already installed (under CI=true each of these fails instead) --
unless this test installed it itself in a run that was killed before its purge: it leaves
a marker file for exactly as long as its own install lives, and finishes that purge first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from _models import unavailable
from _sandbox import run_offline

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
SAMPLE = "Call Jane Miller at +1 212 555 0100 or write to jane.miller@example.com.\n"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deb() -> Path:
    if shutil.which("dpkg-deb") is None:
        unavailable("dpkg-deb is not available (not a Debian system)")
    debs = sorted((ROOT / "dist").glob(f"preflight_{VERSION}_*.deb"))
    if not debs:
        unavailable(f"no dist/preflight_{VERSION}_*.deb: build it with installer/build_linux.sh")
    return debs[-1]


def _field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_control_fields(deb):
    assert _field(deb, "Package") == "preflight"
    assert _field(deb, "Version") == VERSION
    depends = _field(deb, "Depends")
    # Computed from the bundle's ELF files: the C library with a minimum version, and the
    # system libraries PyInstaller never bundles (X11 connection, OpenGL/EGL drivers).
    assert re.search(r"\blibc6 \(>= 2\.\d+\)", depends), depends
    for package in ("libxcb1", "libgl1", "libegl1"):
        assert package in depends.split(", "), depends
    assert int(_field(deb, "Installed-Size")) > 100_000  # KiB: runtime + models


def test_layout(deb):
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                             check=True).stdout
    assert re.search(r"^-rwxr-xr-x root/root .* \./opt/preflight/preflight$", listing, re.M)
    link = r"^lrwxrwxrwx root/root .* \./usr/bin/preflight -> /opt/preflight/preflight$"
    assert re.search(link, listing, re.M)
    assert "./usr/share/applications/preflight.desktop" in listing
    assert "./usr/share/icons/hicolor/scalable/apps/preflight.svg" in listing
    assert "./usr/share/icons/hicolor/256x256/apps/preflight.png" in listing
    for model in ("models/slm/SmolLM2-135M-Instruct.Q4_1.gguf",
                  "models/slm/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",     # the assessor's
                  "models/similarity/all-mpnet-base-v2/model.safetensors",
                  "models/ner/en_core_web_sm-3.8.0/meta.json", "models/manifest.toml"):
        assert f"./opt/preflight/_internal/{model}" in listing, model
    assert "models/cloud/" not in listing  # the optional stand-in cloud model is not shipped
    # Trimmed: torch's C++ tests and headers, Qt WebEngine/QML.
    assert "torch/test/" not in listing and "torch/include/" not in listing
    assert "QtWebEngine" not in listing and "/Qt/qml/" not in listing
    # Evaluation code and its tools are not shipped (faiss: the neighbour-table benchmark;
    # only its few-KB dist-info metadata may come along with transformers' version table)
    for eval_only in ("preflight_eval", "/faiss/", "faiss_cpu.libs", "libfaiss", "annoy"):
        assert eval_only not in listing, eval_only
    writable = [line for line in listing.splitlines() if re.match(r"^.{5}w|^.{8}w", line)
                and not line.startswith("l")]
    assert not writable, writable[:3]  # nothing group- or world-writable


def test_desktop_entry(deb, tmp_path):
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path)], check=True)
    desktop = (tmp_path / "usr/share/applications/preflight.desktop").read_text()
    assert re.search(r"^Exec=/usr/bin/preflight gui( %f)?$", desktop, re.M)
    assert re.search(r"^Icon=preflight$", desktop, re.M)
    if shutil.which("desktop-file-validate"):
        res = subprocess.run(["desktop-file-validate", str(tmp_path / "usr/share/applications/"
                                                           "preflight.desktop")],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


def test_maintainer_scripts_leave_user_data_and_keys_alone(deb, tmp_path):
    control = tmp_path / "DEBIAN"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(control)], check=True)
    for name in ("postinst", "prerm", "postrm"):
        script = (control / name).read_text()
        code = "\n".join(ln for ln in script.splitlines() if not ln.lstrip().startswith("#"))
        code = re.sub(r'"[^"]*"', '""', code)  # messages may name things; commands may not
        assert script.startswith("#!/bin/sh"), name
        # Never interactive, never in users' homes or keyrings, never deleting files itself.
        for forbidden in (r"\bread\b", r"\bdebconf\b", r"\$HOME", r"/home/", r"/root",
                          r"\.local/share", r"\.config", r"keyring", r"secret-tool",
                          r"\brm\b", r"\bfind\b.*-delete"):
            assert not re.search(forbidden, code), f"{name} contains {forbidden!r}"
        subprocess.run(["sh", "-n", str(control / name)], check=True)


def _installed_version() -> str | None:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "preflight"],
                         capture_output=True, text=True)
    return res.stdout.split()[-1] if "install ok installed" in res.stdout else None


# Present only between this test's `dpkg -i` and its `dpkg --purge` (root-owned, outside /tmp
# so a reboot in between still finds it).
OWN_INSTALL = Path("/var/tmp/preflight-deb-test.installed")


def _purge_own_leftover() -> None:
    """An install this test made and never purged (the run was killed) is its to remove."""
    if _installed_version() and OWN_INSTALL.exists():
        res = subprocess.run(["dpkg", "--purge", "preflight"], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        OWN_INSTALL.unlink()


def test_install_run_offline_and_purge_keeps_user_data(deb, tmp_path):
    if os.environ.get("PREFLIGHT_TEST_DEB_INSTALL") != "1":
        unavailable("changes the system: run with PREFLIGHT_TEST_DEB_INSTALL=1 as root "
                    "(installer/build_linux.sh --test does)")
    if os.geteuid() != 0:
        unavailable("installing a .deb needs root")
    _purge_own_leftover()
    if _installed_version():
        unavailable("a preflight package is already installed here; not touching it "
                    "(dpkg --purge preflight first)")

    OWN_INSTALL.write_text(f"{deb}\n")
    res = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True)
    if not _installed_version():
        OWN_INSTALL.unlink()
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        assert _installed_version() == VERSION
        assert os.path.realpath("/usr/bin/preflight") == "/opt/preflight/preflight"

        home = tmp_path / "user"
        env = {k: v for k, v in os.environ.items()
               if k not in ("PREFLIGHT_MODELS_DIR", "PREFLIGHT_HOME", "VIRTUAL_ENV")}
        env.update(HOME=str(home), QT_QPA_PLATFORM="offscreen", PREFLIGHT_GUI_SMOKE="15",
                   XDG_CONFIG_HOME=str(home / ".config"),
                   XDG_DATA_HOME=str(home / ".local/share"), XDG_CACHE_HOME=str(home / ".cache"))
        env["PATH"] = "/usr/bin:/bin"  # the installed command, not the checkout's venv
        logs = tmp_path / "logs"
        logs.mkdir()

        def run(*args: str, stdin: str | None = None):
            r = run_offline(["preflight", *args], env=env, cwd=tmp_path, log_dir=logs,
                            stdin=stdin)
            assert r.isolated, "the installed command ran under no network guard"
            assert not r.connects, f"network connection attempted: {r.connects}"
            assert r.returncode == 0, f"preflight {' '.join(args)}: {r.stderr[-3000:]}"
            return r

        assert run("--version").stdout.strip() == f"preflight {VERSION}"
        info = json.loads(run("info", "--json").stdout)
        assert "/opt/preflight/_internal" in json.dumps(info)
        out = run("sanitize", "-", "--method", "redact", "--json", stdin=SAMPLE).stdout
        assert "jane.miller@example.com" not in out
        run("gui")  # the .desktop entry's command: window up, closes itself after 15 s

        # What the user made while using the app: must survive removal and purge.
        user_files = [p for p in home.rglob("*") if p.is_file()]
        marker = home / ".local/share/Preflight/audit-marker.txt"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("audit log stand-in")
        user_files.append(marker)
    finally:
        res = subprocess.run(["dpkg", "--purge", "preflight"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    OWN_INSTALL.unlink(missing_ok=True)
    assert "forget-keys" in res.stderr  # prerm tells where keys and data stay
    assert not Path("/opt/preflight").exists()
    assert not os.path.lexists("/usr/bin/preflight")
    assert not Path("/usr/share/applications/preflight.desktop").exists()
    for path in user_files:
        assert path.exists(), f"{path} was removed with the package"
