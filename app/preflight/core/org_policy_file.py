"""Reading a company policy file: strict TOML validation whose errors name the line.

:func:`parse_org_policy` turns the file's text into the plain values an
:class:`~preflight.core.org_policy.OrgPolicy` holds, or raises a :class:`ConfigError` that
names the file and the line: tomllib gives the line of a syntax error; for a wrong value
:func:`line_of` finds the line of its key in the text (tables, dotted keys, inline tables
and multi-line arrays included).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from preflight.core.assessor_endpoint import AssessorEndpoint, parse_endpoint
from preflight.core.errors import ConfigError
from preflight.core.org_policy_audit import CentralAuditSettings, parse_central, split_url
from preflight.core.org_policy_learning import CompanyModelSettings, parse_model, parse_share
from preflight.core.sanitize.policy import Action
from preflight.core.types import Category

ORG_HINT = "Sending is disabled until it is fixed; ask your IT administrator."

_TOP_KEYS = ("version", "default_policy", "min_utility", "allowed_providers",
             "allow_overrides", "allow_resend", "epsilon", "minimum",
             "max_document_epsilon", "audit", "share_learning_pairs", "utility_model",
             "assessor", "detection", "allow_degraded_detection")
_EPSILON_KEYS = ("min", "max")
_MINIMUM_KEYS = ("types", "categories")
_ACTIONS = ", ".join(a.value for a in Action)
_CATEGORIES = ", ".join(c.value for c in Category)


@dataclass(frozen=True)
class OrgRules:
    """What a valid company policy file sets (None / empty: not set)."""

    types: Mapping[str, Action]
    categories: Mapping[Category, Action]
    allowed_providers: tuple[str, ...] | None
    epsilon_min: float | None
    epsilon_max: float | None
    min_utility: float | None
    allow_overrides: bool
    allow_resend: bool
    default_policy: str | None
    max_document_epsilon: float | None = None   # cap on a document's summed ε (ledger)
    central_audit: CentralAuditSettings | None = None   # [audit.central]
    share_learning_pairs: bool = False                   # pooled learning (off by default)
    utility_model: CompanyModelSettings | None = None    # [utility_model]
    assessor: AssessorEndpoint | None = None   # [assessor]: the company-hosted assessor
    max_score_threshold: float | None = None   # [detection]: highest threshold, guarded types
    allow_degraded_detection: bool | None = None   # None: as allow_overrides
    lost_logs: tuple[str, ...] = ()             # [audit]: audit logs IT accepts as lost


class _Bad(ValueError):
    def __init__(self, path: tuple[str, ...], problem: str, value: Any = None) -> None:
        super().__init__(problem)
        self.path, self.problem, self.value = path, problem, value


def invalid(where: str, line: int | None, problem: str) -> ConfigError:
    at = f"line {line}: " if line else ""
    return ConfigError(f"Your organization's policy file {where} is invalid ({at}{problem}).",
                       ORG_HINT)


def parse_org_policy(text: str, where: str) -> OrgRules:
    """The rules in ``text`` (the file ``where``); a ConfigError naming file and line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Python 3.11's error has no lineno attribute: the line is in its message.
        msg = str(exc)
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)", msg)
        line = getattr(exc, "lineno", None) or (int(m.group(1)) if m else None)
        if m:
            msg = f"{msg[:m.start()]} at column {m.group(2)}{msg[m.end():]}"
        elif "(at end of document)" in msg:
            line = line or max(1, len(text.splitlines()))
            msg = msg.replace(" (at end of document)", " at the end of the file")
        raise invalid(where, line, f"not valid TOML: {msg}") from None
    except RecursionError:
        raise invalid(where, None, "not valid TOML: arrays or tables nested too deeply") \
            from None
    try:
        return _rules(data)
    except _Bad as bad:
        raise invalid(where, line_of(text, bad.path, bad.value), bad.problem) from None


def _rules(data: Mapping[str, Any]) -> OrgRules:
    _known(data, (), _TOP_KEYS)
    version = data.get("version", 1)
    if isinstance(version, bool) or version != 1:
        raise _Bad(("version",), f"'version' must be 1 (found {version!r})")
    eps = _table(data, "epsilon")
    _known(eps, ("epsilon",), _EPSILON_KEYS)
    lo, hi = _positive(eps, "min"), _positive(eps, "max")
    if lo is not None and hi is not None and lo >= hi:
        raise _Bad(("epsilon", "min"), f"epsilon.min ({lo:g}) must be below epsilon.max "
                   f"({hi:g})")
    minimum = _table(data, "minimum")
    _known(minimum, ("minimum",), _MINIMUM_KEYS)
    types = {}
    for key, value in _table(minimum, "types", ("minimum",)).items():
        if not re.fullmatch(r"[A-Z][A-Z0-9_]{1,40}", key):
            raise _Bad(("minimum", "types", key), f"'{key}' must be an entity type in "
                       "capitals, e.g. PERSON")
        types[key] = _action(("minimum", "types", key), value)
    categories = {}
    for key, value in _table(minimum, "categories", ("minimum",)).items():
        try:
            cat = Category(key)
        except ValueError:
            raise _Bad(("minimum", "categories", key),
                       f"'{key}' is not a category ({_CATEGORIES})") from None
        categories[cat] = _action(("minimum", "categories", key), value)
    util = data.get("min_utility")
    if util is not None and (not _number(util) or not -1.0 <= util <= 1.0):
        raise _Bad(("min_utility",), f"'min_utility' must be a number from -1 to 1 "
                   f"(found {util!r})")
    name = data.get("default_policy")
    if name is not None and (not isinstance(name, str)
                             or not re.fullmatch(r"[\w.-]{1,64}", name)):
        raise _Bad(("default_policy",), "'default_policy' must be a policy name (1-64 "
                   "letters, digits, '.', '-' or '_')")
    cap = data.get("max_document_epsilon")
    if cap is not None and (not _number(cap) or not 0 < cap < float("inf")):
        raise _Bad(("max_document_epsilon",), "'max_document_epsilon' must be a positive "
                   f"number (found {cap!r})")
    audit = _table(data, "audit")
    _known(audit, ("audit",), ("central", "lost_logs"))
    detection = _table(data, "detection")
    _known(detection, ("detection",), ("max_score_threshold",))
    threshold = detection.get("max_score_threshold")
    if threshold is not None and (not _number(threshold) or not 0 <= threshold <= 1):
        raise _Bad(("detection", "max_score_threshold"), "'detection.max_score_threshold' "
                   f"must be a number from 0 to 1 (found {threshold!r})")
    central = (parse_central(_table(audit, "central", ("audit",)), _Bad)
               if "central" in audit else None)
    share = parse_share(data, _Bad)
    if share and central is None:
        raise _Bad(("share_learning_pairs",), "'share_learning_pairs' needs the central "
                   "store it shares to: add [audit.central]")
    company_model = (parse_model(_table(data, "utility_model"), _Bad)
                     if "utility_model" in data else None)
    assessor = (parse_endpoint(_table(data, "assessor"), _Bad, url_problem)
                if "assessor" in data else None)
    return OrgRules(
        max_document_epsilon=None if cap is None else float(cap), central_audit=central,
        share_learning_pairs=share, utility_model=company_model, assessor=assessor,
        types=types, categories=categories, allowed_providers=_providers(data),
        epsilon_min=lo, epsilon_max=hi, min_utility=None if util is None else float(util),
        allow_overrides=_flag(data, "allow_overrides"),
        allow_resend=_flag(data, "allow_resend"), default_policy=name,
        max_score_threshold=None if threshold is None else float(threshold),
        allow_degraded_detection=(_flag(data, "allow_degraded_detection")
                                  if "allow_degraded_detection" in data else None),
        lost_logs=_log_ids(audit.get("lost_logs", [])))


def describe_rules(r: OrgRules, minimum: Mapping[str, Action],
                   degraded_ok: bool) -> dict[str, Any]:
    """What a valid file sets, for `preflight info --json` and the audit record."""
    sets: dict[str, Any] = {}
    if minimum:
        sets["minimum"] = {k: a.value for k, a in minimum.items()}
    if r.allowed_providers is not None:
        sets["allowed_providers"] = list(r.allowed_providers)
    if r.epsilon_min is not None or r.epsilon_max is not None:
        sets["epsilon"] = {"min": r.epsilon_min, "max": r.epsilon_max}
    if r.max_document_epsilon is not None:
        sets["max_document_epsilon"] = r.max_document_epsilon
    if r.min_utility is not None:
        sets["min_utility"] = r.min_utility
    sets["allow_overrides"] = r.allow_overrides
    sets["allow_degraded_detection"] = degraded_ok
    sets["allow_resend"] = r.allow_resend
    if r.max_score_threshold is not None:
        sets["detection"] = {"max_score_threshold": r.max_score_threshold}
    if r.lost_logs:
        sets["audit_lost_logs"] = list(r.lost_logs)
    if r.default_policy:
        sets["default_policy"] = r.default_policy
    for key, value in (("audit_central", r.central_audit), ("utility_model", r.utility_model),
                       ("assessor", r.assessor)):
        if value is not None:
            sets[key] = value.describe()
    if r.share_learning_pairs:
        sets["share_learning_pairs"] = True
    return sets


def _known(table: Mapping[str, Any], path: tuple[str, ...], keys: tuple[str, ...]) -> None:
    for key in table:
        if key not in keys:
            where = ".".join(path + (key,))
            raise _Bad(path + (key,), f"'{where}' is not a company policy key (known"
                       f"{' in ' + '.'.join(path) if path else ''}: {', '.join(keys)})")


def _table(data: Mapping[str, Any], key: str, path: tuple[str, ...] = ()) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise _Bad(path + (key,), f"'{'.'.join(path + (key,))}' must be a table")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _positive(eps: Mapping[str, Any], key: str) -> float | None:
    value = eps.get(key)
    if value is None:
        return None
    if not _number(value) or not 0 < value < float("inf"):
        raise _Bad(("epsilon", key), f"'epsilon.{key}' must be a positive number "
                   f"(found {value!r})")
    return float(value)


def _action(path: tuple[str, ...], value: Any) -> Action:
    try:
        return Action(value)
    except ValueError:
        raise _Bad(path, f"'{path[-1]}' must be one of {_ACTIONS} (found {value!r})") from None


def _flag(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise _Bad((key,), f"'{key}' must be true or false (found {value!r})")
    return value


def _providers(data: Mapping[str, Any]) -> tuple[str, ...] | None:
    value = data.get("allowed_providers")
    if value is None:
        return None
    if not isinstance(value, list):
        raise _Bad(("allowed_providers",), "'allowed_providers' must be a list of base URLs")
    out = []
    for item in value:
        problem = url_problem(item) if isinstance(item, str) else "is not text"
        if problem:
            raise _Bad(("allowed_providers",), f"allowed_providers entry {item!r} {problem}",
                       item)
        out.append(item.strip())
    return tuple(out)


def _log_ids(value: Any) -> tuple[str, ...]:
    """``audit.lost_logs``: the ids of audit logs IT accepts as lost (see
    :mod:`preflight.core.send.audit_presence`)."""
    if not isinstance(value, list) or not all(
            isinstance(v, str) and re.fullmatch(r"[0-9a-fA-F-]{8,64}", v) for v in value):
        raise _Bad(("audit", "lost_logs"), "'audit.lost_logs' must be a list of audit log "
                   "ids (as `preflight audit status` and the refusal name them)")
    return tuple(v.lower() for v in value)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an allowed provider prefix (None: it can)."""
    parts = split_url(url)
    if parts is None:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http(s) URL with a host, e.g. https://api.openai.com/v1"
    if parts.query or parts.fragment or parts.username or parts.password:
        return "must not contain a query, a fragment or credentials"
    # the HTTP client resolves "/v1/../x": a prefix check must see the path it will send
    if any(unquote(seg) in (".", "..") for seg in parts.path.split("/")):
        return "must not contain '.' or '..' path segments"
    return None


def _origin(url: str) -> tuple[str, str, int | None, list[str]]:
    p = urlsplit(url.strip())
    port = p.port or {"http": 80, "https": 443}.get(p.scheme)
    return p.scheme.lower(), (p.hostname or "").lower(), port, [s for s in p.path.split("/")
                                                                 if s]


def under_prefix(base_url: str, prefix: str) -> bool:
    """Whether ``base_url`` is ``prefix`` or below it (same scheme, host and port; the
    prefix's path segments first) — never a look-alike host such as ``api.x.com.evil``."""
    if url_problem(base_url):
        return False
    scheme, host, port, segs = _origin(base_url)
    pscheme, phost, pport, psegs = _origin(prefix)
    return (scheme, host, port) == (pscheme, phost, pport) and segs[:len(psegs)] == psegs


# -- finding the line of a key -----------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|"""
                  r"""[A-Za-z0-9_-]+))*)\s*=""")


def _split_key(key: str) -> tuple[str, ...]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', key)
    return tuple(a or b or c for a, b, c in parts)


def line_of(text: str, path: tuple[str, ...], value: Any = None) -> int | None:
    """The 1-based line where ``path`` (or the nearest enclosing key or table) is written;
    with ``value``, the line at or after it that quotes that text (an array's element)."""
    table: tuple[str, ...] = ()
    best, best_len = None, 0
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        head = _HEADER.match(line)
        if head:
            table = _split_key(head.group(1))
            full = table
        else:
            m = _KEY.match(line)
            if not m:
                continue
            full = table + _split_key(m.group(1))
        common = len(full) if path[:len(full)] == full else 0
        if common > best_len:
            best, best_len = n, common
            if common == len(path):
                break
    if best is not None and isinstance(value, str):
        for n in range(best, len(lines) + 1):
            if value in lines[n - 1]:
                return n
    return best
