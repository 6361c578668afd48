"""Where things live, in a source checkout and in a frozen (PyInstaller) bundle.

One function per kind of place; nothing else in the code builds these paths.

Environment overrides (tests and portable installs):
- ``PREFLIGHT_HOME``: put config, data and cache under this folder instead of the
  platform's user directories.
- ``PREFLIGHT_MODELS_DIR``: where model files are installed and looked up.
- ``PREFLIGHT_ORG_POLICY``: the company policy file (see :func:`org_policy_path`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

from preflight.core.errors import ConfigError

APP_NAME = "Preflight"


def install_root() -> Path:
    """The folder that holds ``resources/`` and ``models/``.

    Frozen: PyInstaller's extraction folder. Source: the repository root (two levels
    above the ``preflight`` package, which lives in ``app/``).
    """
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        return Path(frozen_root)
    return Path(__file__).resolve().parents[3]


def resource_path(*parts: str) -> Path:
    """A file shipped with the app under ``resources/``."""
    return install_root().joinpath("resources", *parts)


def models_dir() -> Path:
    override = os.environ.get("PREFLIGHT_MODELS_DIR")
    return Path(override) if override else install_root() / "models"


def manifest_path() -> Path:
    return install_root() / "models" / "manifest.toml"


def _home_override() -> Path | None:
    home = os.environ.get("PREFLIGHT_HOME")
    return Path(home) if home else None


def _ensure_dir(path: Path, what: str) -> Path:
    """Create ``path`` (owner-only) if needed; a clear ConfigError if that is impossible."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if isinstance(exc, FileExistsError):
            reason = "a file of that name is in the way"
        raise ConfigError(
            f"Preflight cannot create its {what} folder {path} ({reason}).",
            "Make the parent folder writable, or set PREFLIGHT_HOME to a writable folder.",
        ) from None
    if not path.is_dir():
        raise ConfigError(f"Preflight's {what} folder {path} is not a folder.",
                          "Move that file away, or set PREFLIGHT_HOME to another folder.")
    return path


def config_dir() -> Path:
    home = _home_override()
    path = home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME, False))
    return _ensure_dir(path, "config")


def data_dir() -> Path:
    """User data: audit log, vaults, learning-on-the-flow history."""
    home = _home_override()
    path = home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME, False))
    return _ensure_dir(path, "data")


def audit_log_path() -> Path:
    """The audit log (SQLite) in the data folder."""
    return data_dir() / "audit.sqlite3"


def cache_dir() -> Path:
    """Rebuildable caches (per-embedding neighbour tables, verified-hash stamps)."""
    home = _home_override()
    path = home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME, False))
    return _ensure_dir(path, "cache")


def org_policy_path() -> Path:
    """The company policy file an administrator deploys (``PREFLIGHT_ORG_POLICY``
    overrides): /etc/preflight on Linux, %ProgramData%\\Preflight on Windows,
    /Library/Application Support/Preflight on macOS. Never created by Preflight."""
    override = os.environ.get("PREFLIGHT_ORG_POLICY")
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = os.environ.get("ProgramData") or r"C:\ProgramData"
        return Path(base) / APP_NAME / "policy.toml"
    if sys.platform == "darwin":
        return Path("/Library/Application Support") / APP_NAME / "policy.toml"
    return Path("/etc/preflight/policy.toml")
