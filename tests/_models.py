"""What a test needs from the machine: the installed models, a built bundle, a tool.

Real models come only from the installed ``models/`` folder
(:func:`preflight.core.paths.models_dir`, which honours ``PREFLIGHT_MODELS_DIR``), checked
against ``models/manifest.toml`` by the model manager (sha256, as the app does). No user
override from the settings and no development copy elsewhere is ever used.

When something is missing a test must not pass silently: under CI (``CI=true``) the test
FAILS with what is missing and the fix; on a developer's machine it is skipped with the
same message (``pytest -ra`` lists it).
"""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail with it under CI, where nothing may be skipped."""
    if in_ci():
        pytest.fail(f"{reason} [CI=true: a missing prerequisite fails the test]",
                    pytrace=False)
    pytest.skip(reason)


@cache
def _statuses() -> dict:
    from preflight.core.config import Settings
    from preflight.runtime.models import ModelManager, VerifiedHashCache

    # Default settings (no user overrides) and a private hash cache: a session-scoped
    # fixture may run before the per-test PREFLIGHT_HOME exists, and must not write to
    # the user's cache folder.
    hashes = Path(tempfile.mkdtemp(prefix="preflight-test-hashes-")) / "verified.json"
    manager = ModelManager(settings=Settings(), hash_cache=VerifiedHashCache(hashes))
    return {status.role: status for status in manager.status()}


def require_model(role: str) -> Path:
    """The verified installed model of ``role``; skip (fail under CI) if it is unusable."""
    statuses = _statuses()
    if role not in statuses:
        raise KeyError(f"no model role {role!r} in models/manifest.toml: {sorted(statuses)}")
    status = statuses[role]
    if status.state != "ok":
        detail = f" ({status.detail})" if status.detail else ""
        unavailable(f"the {role} model {status.name} is {status.state} at {status.path}"
                    f"{detail}: run `preflight models install --role {role}`")
    return status.path
