"""Where things live, in a source checkout and in a frozen (PyInstaller) bundle.

One function per kind of place; nothing else in the code builds these paths.

Environment overrides (tests and portable installs):
- ``PREFLIGHT_HOME``: put config, data and cache under this folder instead of the
  platform's user directories.
- ``PREFLIGHT_MODELS_DIR``: where model files are installed and looked up.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

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


def config_dir() -> Path:
    home = _home_override()
    path = home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME, False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """User data: audit log, vaults, learning-on-the-flow history."""
    home = _home_override()
    path = home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME, False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Rebuildable caches (per-embedding neighbour tables, verified-hash stamps)."""
    home = _home_override()
    path = home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME, False))
    path.mkdir(parents=True, exist_ok=True)
    return path
