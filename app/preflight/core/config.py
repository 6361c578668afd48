"""Typed, versioned user settings in the platform config directory.

Settings are plain dataclasses serialized to ``settings.json``. Unknown keys are
ignored and missing keys take defaults, so older and newer files both load; a
``schema_version`` lets a future release migrate. Secrets never live here: API keys are
in the OS keyring (see ``preflight.core.send.keys``).

The company policy (:mod:`preflight.core.org_policy`) may set a minimum utility: a lower
``policy.min_utility`` in the file is raised to it when loaded (the file is not rewritten;
Preflight keeps working) and refused when saved (the user asked for something the company
does not allow, so they are told).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union, get_args, get_origin, get_type_hints

from preflight.core import paths
from preflight.core.assessor_endpoint import URL_RULE
from preflight.core.errors import ConfigError, PreflightError
from preflight.core.fsutil import NotARegularFile, atomic_write_text, read_regular
from preflight.core.org_policy import OrgPolicy, load_org_policy
from preflight.core.pii.deny_store import DenyEntry
from preflight.core.pii.floor import DEFAULT_SCORE_THRESHOLD
from preflight.core.tasks import ANSWER_MAX_TOKENS, ANSWER_TOKENS_RANGE
from preflight.core.org_policy_file import url_problem
from preflight.core.utility.defaults import default_min_utility
from preflight.core.utility.slm_roles import ASSESSOR_SLMS

#: 2: the assessor's default SLM became Qwen2.5-Coder-0.5B. A version-1 file names
#: ``assessor_slm: "slm"`` because SmolLM2 was the default then (every key is written),
#: not because the user chose it: such a file follows the new default when loaded.
#: 3: the deny-list is saved as keyed hashes (``detection.deny_entries``); an older
#: Preflight would ignore them and let those values pass, so it refuses the file.
SCHEMA_VERSION = 3

log = logging.getLogger(__name__)

#: A provider whose context window the user has not given: 8,192 tokens, the smallest
#: window of the OpenAI-compatible models people commonly serve themselves (Llama 2 era
#: 4k models aside), so a long document is split rather than cut off by the server.
CONTEXT_TOKENS_DEFAULT = 8192
CONTEXT_TOKENS_RANGE = (1024, 10_000_000)


@dataclass
class DetectionSettings:
    # Values in clear, held in memory only (the CLI's --deny, one document's): never
    # saved; an older file's are moved into deny_entries when it is loaded.
    deny_list: list[str] = field(default_factory=list)
    # The saved deny-list (codenames, clients, missed secrets): keyed hashes, no value.
    deny_entries: list[DenyEntry] = field(default_factory=list)
    allow_list: list[str] = field(default_factory=list)    # never flagged
    score_threshold: float = DEFAULT_SCORE_THRESHOLD
    language: str = "en"
    deny_list_category: str = "direct_identifier"  # Category value given to deny-list hits


@dataclass
class SavedPolicy:
    """A named policy the user saved (the keys of a policy file; see docs/POLICIES.md)."""

    name: str
    title: str = ""
    description: str = ""
    dx: str = "none"
    epsilon: float | None = None
    fallback: str = "placeholder"
    categories: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)


@dataclass
class PolicySettings:
    epsilon_min: float | None = None        # None: the calibrated range of the embedding
    epsilon_max: float | None = None
    # Derived from the utility data (a stated share of the unsanitized utility), see
    # preflight.core.utility.defaults and docs/UTILITY.md.
    min_utility: float = field(default_factory=default_min_utility)
    active: str = "identifiers"             # the policy new documents start with
    saved: list[SavedPolicy] = field(default_factory=list)


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
    proxy: str | None = None                 # the only proxy used (https only; core.send.route)
    # the model's context window in tokens (request + answer must fit); a file without it
    # loads with the stated default for a provider of unknown size (core.send.chunked)
    context_tokens: int = CONTEXT_TOKENS_DEFAULT


@dataclass
class AssessorEndpointSettings:
    """An assessor server named by the user (the company policy's wins; see
    :mod:`preflight.core.assessor_endpoint`). It never receives the original document:
    only the company policy can mark a server ``internal`` (an ``internal`` key in an
    older file is ignored)."""

    url: str
    model: str = ""


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
    assessor_slm: str = ASSESSOR_SLMS[0]    # manifest role of the assessor's local SLM
    answer_max_tokens: int = ANSWER_MAX_TOKENS  # longest answer (cloud and local), tokens
    assessor_endpoint: AssessorEndpointSettings | None = None   # None: in-process only


class _Invalid(ValueError):
    """One bad value: ``key`` is its dotted path in the file."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key} {problem}")


_THEMES = ("system", "light", "dark")
_API_STYLES = ("chat", "completions")
_CATEGORIES = ("direct_identifier", "quasi_identifier", "confidential_attribute", "secret")
# Checks beyond the type: key -> (predicate, what the value must be).
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "detection.score_threshold": (lambda v: 0.0 <= v <= 1.0, "must be between 0 and 1"),
    "detection.deny_list_category": (lambda v: v in _CATEGORIES,
                                     f"must be one of {', '.join(_CATEGORIES)}"),
    "detection.language": (lambda v: bool(v.strip()), "must not be empty"),
    "deny_entries.digest": (lambda v: bool(re.fullmatch(r"[0-9a-f]{32}", v)),
                            "must be 32 hexadecimal digits"),
    "deny_entries.lengths": (lambda v: bool(v) and all(n > 0 for n in v),
                             "must list positive word lengths"),
    "deny_entries.kind": (lambda v: v in ("secret", "term"), "must be secret or term"),
    "policy.epsilon_min": (lambda v: v is None or v > 0, "must be positive (or null)"),
    "policy.epsilon_max": (lambda v: v is None or v > 0, "must be positive (or null)"),
    "policy.min_utility": (lambda v: -1.0 <= v <= 1.0, "must be between -1 and 1"),
    "policy.active": (lambda v: bool(v.strip()), "must name a policy"),
    "providers.api_style": (lambda v: v in _API_STYLES, f"must be one of {', '.join(_API_STYLES)}"),
    "providers.price_input_per_mtok": (lambda v: v >= 0, "must not be negative"),
    "providers.price_output_per_mtok": (lambda v: v >= 0, "must not be negative"),
    "providers.context_tokens": (lambda v: CONTEXT_TOKENS_RANGE[0] <= v <= CONTEXT_TOKENS_RANGE[1],
                                 f"must be between {CONTEXT_TOKENS_RANGE[0]} and "
                                 f"{CONTEXT_TOKENS_RANGE[1]}"),
    "theme": (lambda v: v in _THEMES, f"must be one of {', '.join(_THEMES)}"),
    "assessor_slm": (lambda v: v in ASSESSOR_SLMS, f"must be one of {', '.join(ASSESSOR_SLMS)}"),
    "assessor_endpoint.url": (lambda v: url_problem(v) is None, URL_RULE),
    "schema_version": (lambda v: v >= 1, "must be 1 or more"),
    "answer_max_tokens": (lambda v: ANSWER_TOKENS_RANGE[0] <= v <= ANSWER_TOKENS_RANGE[1],
                          f"must be between {ANSWER_TOKENS_RANGE[0]} and "
                          f"{ANSWER_TOKENS_RANGE[1]}"),
}


def _type_name(tp: Any) -> str:
    return {float: "a number", int: "a whole number", str: "text", bool: "true or false",
            }.get(tp, getattr(tp, "__name__", str(tp)))


def _check(key: str, tp: Any, value: Any) -> Any:
    """``value`` converted to the annotation ``tp``, or :class:`_Invalid` naming ``key``."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check(key, inner, value)
    if dataclasses.is_dataclass(tp):
        return _from_dict(tp, value, key + ".")
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(key, f"must be a list (found {_found(value)})")
        return [_check(f"{key}[{i}]", args[0], v) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _Invalid(key, f"must be an object (found {_found(value)})")
        return {_check(key, args[0], k): _check(f"{key}.{k}", args[1], v)
                for k, v in value.items()}
    ok = isinstance(value, tp) and not (tp is not bool and isinstance(value, bool))
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if tp is float and ok and value != value:
        ok = False                                       # NaN passes every range check
    if not ok:
        raise _Invalid(key, f"must be {_type_name(tp)} (found {_found(value)})")
    return value


def _found(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _from_dict(cls: type, data: Any, prefix: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``: unknown keys ignored, every value checked."""
    if not isinstance(data, dict):
        raise _Invalid(prefix.rstrip(".") or "the file", f"must be an object (found {_found(data)})")
    hints = get_type_hints(cls)
    kwargs = {}
    rule_prefix = {ProviderSettings: "providers.", DenyEntry: "deny_entries."}.get(cls, prefix)
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _Invalid(prefix + f.name, "is missing")
            continue
        key = prefix + f.name
        value = _check(key, hints[f.name], data[f.name])
        rule = _RULES.get(rule_prefix + f.name)
        if rule is not None and not rule[0](value):
            raise _Invalid(key, f"{rule[1]} (found {_found(value)})")
        kwargs[f.name] = value
    return cls(**kwargs)


def settings_path() -> Path:
    return paths.config_dir() / "settings.json"


MAX_SETTINGS_BYTES = 4_000_000
_FIX = "Fix or delete the file; Preflight then starts with default settings."


def load_settings(path: Path | None = None, *, org: OrgPolicy | None = None) -> Settings:
    """The settings in ``path`` (default: the user's), checked value by value.

    A missing file gives the defaults; anything wrong (not JSON, a value of the wrong type
    or out of range, a folder or a FIFO where the file should be) is a ConfigError naming
    the file and the key. ``org`` is the company policy (None: read from its file).
    """
    path = path or settings_path()
    try:
        raw = read_regular(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return Settings()
    except NotARegularFile as exc:
        fix = ("Move or delete that folder; Preflight then starts with default settings."
               if exc.kind == "a folder" else
               f"{exc.hint} (Without it Preflight starts with default settings.)")
        raise ConfigError(f"The settings path {path} is {exc.kind}, not a file Preflight "
                          "reads settings from.", fix) from None
    except OSError as exc:
        raise ConfigError(f"The settings file {path} cannot be read ({exc.strerror}).",
                          _FIX) from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ConfigError(f"The settings file {path} is larger than "
                          f"{MAX_SETTINGS_BYTES // 1_000_000} MB; no settings file is.", _FIX)
    try:
        data = json.loads(raw.decode("utf-8"))
        settings = _from_dict(Settings, data)
    except PreflightError:
        raise
    except _Invalid as exc:
        raise ConfigError(f"{path.name}: {exc}.", _FIX) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"The settings file {path} is damaged ({exc}).", _FIX) from None
    if settings.schema_version > SCHEMA_VERSION:
        raise ConfigError(
            f"The settings file {path} was written by a newer Preflight.",
            "Update Preflight or delete the file.",
        )
    pol = settings.policy
    if pol.epsilon_min is not None and pol.epsilon_max is not None \
            and pol.epsilon_min > pol.epsilon_max:
        raise ConfigError(f"{path.name}: policy.epsilon_min must not exceed "
                          f"policy.epsilon_max (found {pol.epsilon_min:g} > "
                          f"{pol.epsilon_max:g}).", _FIX)
    if settings.schema_version < 2 and settings.assessor_slm == "slm":
        settings.assessor_slm = ASSESSOR_SLMS[0]
    settings.schema_version = SCHEMA_VERSION
    if settings.detection.deny_list:
        _migrate_deny_list(settings, path)
    pol.min_utility = _org(org).clamp_min_utility(pol.min_utility)
    return settings


def _migrate_deny_list(settings: Settings, path: Path) -> None:
    """An older file's deny-list values in clear become keyed hashes, and the file is
    rewritten at once so they leave the disk (else at the next save). The file's own
    values are written back as they were: nothing the company clamps is saved here."""
    from preflight.core.pii.deny_store import migrate

    det = settings.detection
    migrate(det.deny_list, det.deny_entries)
    try:
        save_settings(settings, path, org=OrgPolicy.none())
    except PreflightError as exc:
        log.warning("the deny-list was hashed but the settings file could not be "
                    "rewritten yet: %s", exc.message)


def _org(org: OrgPolicy | None) -> OrgPolicy:
    return org if org is not None else load_org_policy()


def save_settings(settings: Settings, path: Path | None = None, *,
                  org: OrgPolicy | None = None) -> None:
    """Write atomically, so a crash never leaves a half-written file. A minimum utility
    below the company's (``org``; None: read from its file) is refused."""
    _org(org).check_min_utility(settings.policy.min_utility)
    path = path or settings_path()
    data = dataclasses.asdict(settings)
    del data["detection"]["deny_list"]      # values in clear are never written
    payload = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        atomic_write_text(path, payload, mode=0o600)
    except NotARegularFile as exc:
        raise ConfigError(f"The settings cannot be saved to {path}: {exc.strerror}.",
                          exc.hint) from None
    except OSError as exc:
        raise ConfigError(
            f"The settings cannot be saved to {path} ({exc.strerror or exc}).",
            "Make the config folder writable, or set PREFLIGHT_HOME to a writable folder.",
        ) from None
