"""Typed, versioned user settings in the platform config directory.

Settings are plain dataclasses serialized to ``settings.json``. Unknown keys are
ignored and missing keys take defaults, so older and newer files both load; a
``schema_version`` lets a future release migrate. Secrets never live here: API keys are
in the OS keyring (see ``preflight.core.send.keys``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preflight.core import paths
from preflight.core.errors import ConfigError

SCHEMA_VERSION = 1


@dataclass
class DetectionSettings:
    deny_list: list[str] = field(default_factory=list)     # codenames, client names: always PII
    allow_list: list[str] = field(default_factory=list)    # never flagged
    score_threshold: float = 0.35
    language: str = "en"
    deny_list_category: str = "direct_identifier"  # Category value given to deny-list hits


@dataclass
class PolicySettings:
    epsilon_min: float | None = None        # None: the calibrated range of the embedding
    epsilon_max: float | None = None
    min_utility: float = 0.5
    always_protect: list[str] = field(
        default_factory=lambda: ["EMAIL_ADDRESS", "PHONE_NUMBER", "US_SSN", "CREDIT_CARD",
                                 "IBAN_CODE", "API_KEY", "SECRET"]
    )


@dataclass
class ProviderSettings:
    name: str
    base_url: str
    model: str
    key_env: str | None = None               # env var holding the key, read at send time
    price_input_per_mtok: float = 0.0        # currency units per million input tokens
    price_output_per_mtok: float = 0.0
    api_style: str = "chat"                  # "chat" (/v1/chat/completions) or "completions"
    allow_insecure_http: bool = False        # send over plain http:// to a non-loopback host


@dataclass
class Settings:
    schema_version: int = SCHEMA_VERSION
    model_paths: dict[str, str] = field(default_factory=dict)   # role -> user-chosen local file
    detection: DetectionSettings = field(default_factory=DetectionSettings)
    policy: PolicySettings = field(default_factory=PolicySettings)
    providers: list[ProviderSettings] = field(default_factory=list)
    default_provider: str | None = None
    store_original_in_audit: bool = False
    theme: str = "system"


def _from_dict(cls: type, data: Any) -> Any:
    """Build dataclass ``cls`` from ``data``, ignoring unknown keys."""
    if not dataclasses.is_dataclass(cls) or not isinstance(data, dict):
        return data
    kwargs = {}
    hints = {f.name: f for f in dataclasses.fields(cls)}
    for name, f in hints.items():
        if name not in data:
            continue
        value = data[name]
        sub = _NESTED.get((cls.__name__, name))
        if sub is list:
            value = [_from_dict(ProviderSettings, v) for v in value]
        elif sub is not None:
            value = _from_dict(sub, value)
        kwargs[name] = value
    return cls(**kwargs)


_NESTED: dict[tuple[str, str], Any] = {
    ("Settings", "detection"): DetectionSettings,
    ("Settings", "policy"): PolicySettings,
    ("Settings", "providers"): list,
}


def settings_path() -> Path:
    return paths.config_dir() / "settings.json"


def load_settings(path: Path | None = None) -> Settings:
    path = path or settings_path()
    if not path.exists():
        return Settings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        settings = _from_dict(Settings, data)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"The settings file {path} is damaged ({exc}).",
            "Fix or delete it; Preflight then starts with default settings.",
        ) from None
    if settings.schema_version > SCHEMA_VERSION:
        raise ConfigError(
            f"The settings file {path} was written by a newer Preflight.",
            "Update Preflight or delete the file.",
        )
    settings.schema_version = SCHEMA_VERSION
    return settings


def save_settings(settings: Settings, path: Path | None = None) -> None:
    """Write atomically, so a crash never leaves a half-written file."""
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(dataclasses.asdict(settings), indent=2, ensure_ascii=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
