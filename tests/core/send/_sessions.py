"""A send session wired with the fakes of :mod:`_fakes` for one provider (shared by the
session tests and tests/adversarial)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _fakes import FakeCounter, FakeDetector, FakeEmbedder, FakeFlow, FakeRestorer, FakeVault
from preflight.core.config import ProviderSettings, Settings
from preflight.core.sanitize.base import SanitizeParams
from preflight.core.send.audit import AuditLog
from preflight.core.send.providers import RetryPolicy, Timeouts, create_client
from preflight.core.send.session import SendSession
from preflight.core.tasks import SUMMARIZE

DOC = ("Alice Martin (alice.martin@corp.example, +33 6 12 34 56 78) asked Bob Stone in Lyon "
       "to review the Q3 budget before Friday. Alice Martin will present it.")


def session_for(provider: ProviderSettings, tmp_path: Path, *, detector: Any = None,
                retry: RetryPolicy = RetryPolicy(attempts=1),
                timeouts: Timeouts = Timeouts(connect=2, read=5), **kw: Any) -> SendSession:
    settings = Settings(providers=[provider], default_provider=provider.name)
    return SendSession(
        settings, detector=detector or FakeDetector(),
        audit=AuditLog(tmp_path / "audit.sqlite3"), token_counter=FakeCounter(),
        embedder=FakeEmbedder(), flow=FakeFlow(), restorer_factory=FakeRestorer,
        client_factory=lambda p: create_client(p, retry=retry, timeouts=timeouts,
                                               sleep=lambda s: None),
        environ={"PF_TEST_KEY": "sk-test-secret-0123456789abcdef"}, **kw,
    )


def placeholder_plan(session: SendSession, text: str = DOC, seed: int = 1) -> Any:
    return session.prepare_send(text, None, "fake-placeholder", SanitizeParams(seed=seed),
                                SUMMARIZE, vault=FakeVault())
