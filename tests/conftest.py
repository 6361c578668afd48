"""Every test gets fresh, empty user directories: settings, audit log, vaults and caches
live under a temporary PREFLIGHT_HOME, never the user's real files. Model files are shared
(read-only) from the checkout's models/ folder."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Property tests explore new random examples on every developer run; under CI they replay
# the same derived examples, so a submission's verdict never depends on the draw (a new
# counterexample found locally becomes an explicit example instead).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("preflight-home")
    monkeypatch.setenv("PREFLIGHT_HOME", str(home))
    # Never the machine's company policy (/etc/preflight/policy.toml): none unless a test
    # writes this file.
    monkeypatch.setenv("PREFLIGHT_ORG_POLICY", str(home / "org-policy.toml"))
    # Never the machine's keyring either (every audit log keeps its seal's anchor there):
    # no keyring unless a test installs one, as on a headless CI machine.
    import keyring
    from keyring.backends import fail

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield home
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def _fresh_secret_registry():
    """Each test starts with no secret registered (keys and stored secrets are
    process-wide, and the answer guard holds back any tail that may begin one): a value
    an earlier test registered must not re-chunk this test's stream."""
    from preflight.core.send import logfilter

    with logfilter._lock:
        saved = set(logfilter._known)
        logfilter._known.clear()
    yield
    with logfilter._lock:
        logfilter._known.clear()
        logfilter._known.update(saved)
