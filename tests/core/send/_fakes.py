"""Fakes for the send path's collaborators (detector, embedder, flow learner, restorer,
keyring backend). Product code never uses these."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Sequence

from keyring.backend import KeyringBackend

from preflight.core.sanitize.base import SanitizeParams, register
from preflight.core.types import apply_replacements, Category, DxReport, SanitizedText, SanitizeReport, Span

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
SECRET = re.compile(r"\bsk-[A-Za-z0-9]{16,}")
PHONE = re.compile(r"\+?\d[\d -]{7,}\d")


class FakeDetector:
    """Emails, phones, sk- keys and a fixed list of names; counts its calls."""

    def __init__(self, names: Sequence[str] = ("Alice Martin", "Bob Stone", "Carol Diaz"),
                 cities: Sequence[str] = ("Lyon",)) -> None:
        self.names = list(names)
        self.cities = list(cities)
        self.calls = 0
        self.warnings: list[str] = []   # the Detector port: non-empty means degraded

    def detect(self, text: str) -> list[Span]:
        self.calls += 1
        found: list[Span] = []
        for rx, typ, cat in ((EMAIL, "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER),
                             (SECRET, "API_KEY", Category.SECRET),
                             (PHONE, "PHONE_NUMBER", Category.DIRECT_IDENTIFIER)):
            for m in rx.finditer(text):
                found.append(Span(m.start(), m.end(), typ, cat, 0.9, "fake", f"{typ} pattern"))
        for values, typ, cat in ((self.names, "PERSON", Category.DIRECT_IDENTIFIER),
                                 (self.cities, "LOCATION", Category.QUASI_IDENTIFIER)):
            for value in values:
                for m in re.finditer(re.escape(value), text):
                    found.append(Span(m.start(), m.end(), typ, cat, 0.85, "fake", f"known {typ}"))
        found.sort(key=lambda s: (s.start, -s.end))
        out: list[Span] = []
        for s in found:
            if out and s.start < out[-1].end:
                continue
            out.append(s)
        return out


class FakeVault:
    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.back: dict[str, str] = {}

    def placeholder(self, value: str, typ: str) -> str:
        if value not in self.forward:
            n = sum(1 for k in self.back if k.startswith(f"<{typ}_")) + 1
            token = f"<{typ}_{n}>"
            self.forward[value] = token
            self.back[token] = value
        return self.forward[value]


class FakeRestorer:
    """Holds back a possible partial ``<...`` at the end, like the real StreamRestorer."""

    def __init__(self, vault: FakeVault | None) -> None:
        self.back = vault.back if vault else {}
        self.pending = ""

    def _restore(self, text: str) -> str:
        for k, v in self.back.items():
            text = text.replace(k, v)
        return text

    def feed(self, chunk: str) -> str:
        self.pending += chunk
        cut = self.pending.rfind("<")
        if cut != -1 and ">" not in self.pending[cut:]:
            out, self.pending = self.pending[:cut], self.pending[cut:]
        else:
            out, self.pending = self.pending, ""
        return self._restore(out)

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return self._restore(out)


class FakePlaceholder:
    """Placeholder operator stand-in (registered as "fake-placeholder")."""

    name = "fake-placeholder"

    def __init__(self, vault: FakeVault | None = None) -> None:
        self.vault = vault or FakeVault()

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        reps = [(s.start, s.end, self.vault.placeholder(text[s.start:s.end], s.type), s.type)
                for s in spans]
        out, changes = apply_replacements(text, reps)
        return SanitizedText(out, self.name, changes)


class FakeSurrogate:
    """Replaces each span by a fixed realistic-looking surrogate (like pseudonym)."""

    name = "fake-surrogate"

    def __init__(self) -> None:
        self.vault = None

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        surrogate = {"PERSON": "Carol Diaz", "EMAIL_ADDRESS": "x9@example.org"}
        reps = [(s.start, s.end, surrogate.get(s.type, "[X]"), s.type) for s in spans]
        out, changes = apply_replacements(text, reps)
        return SanitizedText(out, self.name, changes)


class Identity:
    name = "fake-identity"

    def sanitize(self, text: str, spans: Sequence[Span], params: SanitizeParams) -> SanitizedText:
        return SanitizedText(text, self.name, (), SanitizeReport(
            dx=DxReport(params.epsilon) if params.epsilon is not None else None))


FAKE_MECHANISMS = {"fake-placeholder": FakePlaceholder, "fake-surrogate": FakeSurrogate,
                   "fake-identity": Identity}


@contextmanager
def fake_mechanisms():
    """Register the fake mechanisms for one test, then restore the registry exactly (the
    registry is global: a fake left behind would show up in other tests' method lists)."""
    from preflight.core.sanitize import base

    from preflight.app.services import Services
    from preflight.core.sanitize.policy import Policy

    base.mechanism_names()  # built-ins first, so the snapshot holds them
    saved = dict(base._REGISTRY)
    for name, factory in FAKE_MECHANISMS.items():
        register(name)(factory)
    # The faces choose policies (`--policy fake-identity`): a fake's name stands for a
    # policy of that name that the fake mechanism carries out.
    real_policy, real_mechanism = Services.policy, Services.mechanism

    def policy(self, name=None):
        if name in FAKE_MECHANISMS:
            return Policy(name=name, title=name, source="test fake")
        return real_policy(self, name)

    def mechanism(self, name, **collaborators):
        fake = getattr(name, "name", name)
        if fake in FAKE_MECHANISMS:
            return FAKE_MECHANISMS[fake]()
        return real_mechanism(self, name, **collaborators)

    Services.policy, Services.mechanism = policy, mechanism
    try:
        yield
    finally:
        Services.policy, Services.mechanism = real_policy, real_mechanism
        base._REGISTRY.clear()
        base._REGISTRY.update(saved)


class FakeEmbedder:
    def __init__(self, value: float = 0.75, fail: bool = False) -> None:
        self.value = value
        self.fail = fail
        self.calls: list[tuple[str, str]] = []

    def similarity(self, a: str, b: str) -> float:
        self.calls.append((a, b))
        if self.fail:
            raise RuntimeError("model missing")
        return self.value


class FakeFlow:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.records: list[tuple[dict, float, dict]] = []

    def record(self, features: dict, realized_utility: float, meta: dict) -> None:
        if self.fail:
            raise RuntimeError("not ready")
        self.records.append((features, realized_utility, meta))


class FakeCounter:
    method = "estimate: characters / 4"

    def count(self, text: str) -> Any:
        from preflight.core.send.cost import TokenCount, estimate_tokens

        return TokenCount(estimate_tokens(text), self.method)


class MemoryKeyring(KeyringBackend):
    """keyring backend holding passwords in a dict (tests never touch the real keyring)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        from keyring.errors import PasswordDeleteError

        if (service, username) not in self.store:
            raise PasswordDeleteError("missing")
        del self.store[(service, username)]
