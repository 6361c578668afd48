"""The real pinned models in the checkout's models/ folder (missing → fails in CI)."""

from __future__ import annotations

import pytest
from _models import unavailable

from preflight.core import paths
from preflight.runtime.models import ModelManager, load_manifest

pytestmark = pytest.mark.slow


def _installed_roles() -> list[str]:
    manifest = load_manifest()
    return [m.role for m in manifest.models if (paths.models_dir() / m.file).exists()]


def test_installed_models_verify_and_a_second_install_is_a_no_op():
    roles = _installed_roles()
    defaults = [m.role for m in load_manifest().models if not m.optional]
    if not set(defaults) <= set(roles):
        unavailable(f"default models missing ({sorted(set(defaults) - set(roles))}): run "
                    "`preflight models install`")
    manager = ModelManager()           # real manifest, real models/, empty hash cache
    results = manager.install(roles=roles)
    assert [(r.role, r.action) for r in results] == [(r, "already ok") for r in roles]
    for role in roles:
        assert manager.path(role) == paths.models_dir() / manager.spec(role).file
    # the verification was recorded: a new manager answers from the cache
    states = {s.role: s.state for s in ModelManager().status()}
    assert all(states[r] == "ok" for r in roles)
