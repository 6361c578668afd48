"""Policies: which action each kind of detected value gets, and whether d_X covers the rest.

A :class:`Policy` maps every entity type to an :class:`Action` (keep, generalize,
pseudonym, placeholder, mask, redact, delete) — explicitly per type, else by the type's
category — and says where d_X noise applies: nowhere, on the text outside the protected
spans (the hybrid), on the whole text (the research setting) or on the detected spans
only. Policies are plain data: the presets below, the user's named policies in the
settings, or a TOML file (``--policy FILE``); :mod:`.policy_apply` carries them out.

Dates are split before the lookup: a DATE_TIME that names no calendar date ("today",
"Friday", "this week") is the pseudo-type ``RELATIVE_DATE``, a year or month without a day
("1959", "March 1980") is ``PARTIAL_DATE``, and an age written as a date ("26-year-old")
is ``AGE`` — so a policy can keep what names no day and generalize what does.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping

from preflight.core.errors import ConfigError
from preflight.core.fsutil import NotARegularFile, read_regular
from preflight.core.sanitize.generalize import find_year, month_name_match
from preflight.core.types import Category, PolicySummary, Span

#: A policy is a page of TOML; anything larger is not one (and is never read whole).
MAX_POLICY_FILE_BYTES = 1_000_000


class Action(str, Enum):
    KEEP = "keep"
    GENERALIZE = "generalize"
    PSEUDONYM = "pseudonym"
    PLACEHOLDER = "placeholder"
    MASK = "mask"
    REDACT = "redact"
    DELETE = "delete"


#: How much of a value an action lets through, from most (0) to least. A company policy's
#: minimum action is met by any action at least as strict.
STRICTNESS: dict[Action, int] = {
    Action.KEEP: 0, Action.GENERALIZE: 1, Action.PSEUDONYM: 2, Action.PLACEHOLDER: 2,
    Action.MASK: 2, Action.REDACT: 3, Action.DELETE: 3,
}

ACTION_TEXT: dict[Action, str] = {
    Action.KEEP: "kept as written",
    Action.GENERALIZE: "generalized (a coarser value)",
    Action.PSEUDONYM: "replaced by a realistic stand-in",
    Action.PLACEHOLDER: "replaced by a numbered placeholder",
    Action.MASK: "masked with *",
    Action.REDACT: "replaced by [REDACTED]",
    Action.DELETE: "deleted",
}


def at_least(action: Action, minimum: Action) -> bool:
    """Whether ``action`` hides at least as much as ``minimum``."""
    return STRICTNESS[action] >= STRICTNESS[minimum]


class DxScope(str, Enum):
    NONE = "none"        # no noise: only the protected spans change
    REST = "rest"        # ε-d_X on every token outside the protected spans (hybrid)
    ALL = "all"          # ε-d_X on every token of the text (research setting)
    SPANS = "spans"      # ε-d_X on the detected spans only (classic `dx --scope pii`)


RELATIVE_DATE = "RELATIVE_DATE"
PARTIAL_DATE = "PARTIAL_DATE"
_AGE_RE = re.compile(r"\b\d{1,3}\s*-?\s*(?:years?|yrs?)\s*-?\s*old\b|\baged?\s+\d{1,3}\b",
                     re.IGNORECASE)
_NUMERIC_DATE_RE = re.compile(r"\b\d{1,4}\s*[-/.]\s*\d{1,2}\s*[-/.]\s*\d{1,4}\b")
_DAY_RE = re.compile(r"(?<![\d,.])\d{1,2}(?:st|nd|rd|th)?\b(?![.,]?\d)", re.IGNORECASE)


def effective_type(span: Span, value: str) -> str:
    """The type a policy looks up. DATE_TIME is split by how much it pins down: a day
    ("12 March 1980", "3/12/80") stays DATE_TIME; a year or a month without a day ("1959",
    "March 1980") is PARTIAL_DATE; no calendar date at all ("Friday", "this week") is
    RELATIVE_DATE; an age written as a date ("26-year-old") is AGE."""
    if span.type != "DATE_TIME":
        return span.type
    if _AGE_RE.search(value):
        return "AGE"
    if _NUMERIC_DATE_RE.search(value):
        return "DATE_TIME"
    month = month_name_match(value)
    if month and _DAY_RE.search(value):
        return "DATE_TIME"
    if month or find_year(value) is not None:
        return PARTIAL_DATE
    return RELATIVE_DATE


@dataclass(frozen=True)
class Policy:
    """One named policy. ``by_type`` wins over ``by_category``; ``fallback`` covers a
    category the policy does not mention."""

    name: str
    title: str
    description: str = ""
    by_type: Mapping[str, Action] = field(default_factory=dict)
    by_category: Mapping[Category, Action] = field(default_factory=dict)
    fallback: Action = Action.PLACEHOLDER
    dx: DxScope = DxScope.NONE
    epsilon: float | None = None          # the ε the policy starts at (d_X scopes only)
    source: str = "preset"                # "preset", "settings" or the file it came from
    # what a company policy raised: type or category -> (was, now); shown with the policy
    raised: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def action_for(self, span: Span, value: str) -> Action:
        if self.dx in (DxScope.ALL, DxScope.SPANS):
            return Action.KEEP            # d_X is the only change to the text
        etype = effective_type(span, value)
        if etype in self.by_type:
            return self.by_type[etype]
        if etype in (RELATIVE_DATE, PARTIAL_DATE) and "DATE_TIME" in self.by_type:
            return self.by_type["DATE_TIME"]
        return self.by_category.get(span.category, self.fallback)

    def protected(self, text: str, spans: Iterable[Span]) -> list[tuple[Span, Action]]:
        """The spans this policy changes, each with its action."""
        out = []
        for s in spans:
            action = self.action_for(s, text[s.start:s.end])
            if action is not Action.KEEP:
                out.append((s, action))
        return out

    @property
    def uses_dx(self) -> bool:
        return self.dx is not DxScope.NONE

    def with_actions(self, changes: Mapping[str, Action]) -> "Policy":
        """A copy with some types' actions changed (the window's legend)."""
        merged = dict(self.by_type)
        merged.update(changes)
        return replace(self, by_type=merged)

    def summary(self) -> PolicySummary:
        """What every output says about the policy that produced it."""
        return PolicySummary(
            name=self.name, title=self.title, source=self.source,
            by_type={t: a.value for t, a in sorted(self.by_type.items())},
            by_category={c.value: a.value for c, a in self.by_category.items()},
            fallback=self.fallback.value, dx=self.dx.value,
            raised={k: tuple(v) for k, v in self.raised.items()})

    def describe(self) -> dict[str, Any]:
        """:meth:`summary` as JSON."""
        return self.summary().to_json()

    def to_toml(self) -> str:
        """The policy as a file ``load_policy_file`` reads back."""
        lines = [f'name = "{self.name}"', f'title = "{_esc(self.title)}"']
        if self.description:
            lines.append(f'description = "{_esc(self.description)}"')
        lines.append(f'dx = "{self.dx.value}"')
        if self.epsilon is not None:
            lines.append(f"epsilon = {self.epsilon:g}")
        lines.append(f'fallback = "{self.fallback.value}"')
        lines.append("")
        lines.append("[categories]")
        lines += [f'{c.value} = "{a.value}"' for c, a in self.by_category.items()]
        lines.append("")
        lines.append("[types]")
        lines += [f'{t} = "{a.value}"' for t, a in sorted(self.by_type.items())]
        return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


D, Q, C, S = (Category.DIRECT_IDENTIFIER, Category.QUASI_IDENTIFIER,
              Category.CONFIDENTIAL_ATTRIBUTE, Category.SECRET)

_IDENTIFIER_TYPES: dict[str, Action] = {
    "DATE_OF_BIRTH": Action.GENERALIZE,
    "DATE_TIME": Action.GENERALIZE,
    "AGE": Action.GENERALIZE,
    RELATIVE_DATE: Action.KEEP,
    PARTIAL_DATE: Action.KEEP,
    "NRP": Action.KEEP,
    "LOCATION": Action.KEEP,
    "ORGANIZATION": Action.KEEP,
    "URL": Action.KEEP,        # mostly file and host names; an e-mail is its own type
    "IP_ADDRESS": Action.PLACEHOLDER,
    "MAC_ADDRESS": Action.PLACEHOLDER,
    "UUID": Action.PLACEHOLDER,
}
_IDENTIFIER_CATEGORIES = {D: Action.PLACEHOLDER, S: Action.PLACEHOLDER,
                          C: Action.PLACEHOLDER, Q: Action.KEEP}

DEFAULT_POLICY = "identifiers"


def _classic(action: Action) -> Policy:
    return Policy(
        name=action.value, title=f"Everything detected → {action.value}",
        description=f"Every detected value is {ACTION_TEXT[action]}.",
        fallback=action)


def _presets() -> dict[str, Policy]:
    presets = [
        Policy(
            name="identifiers", title="Protect identifiers",
            description="Names, contact details, account numbers, secrets and health or "
                        "payment details become placeholders; full dates, birth dates and "
                        "ages are generalized; years, relative dates, places, organizations, "
                        "nationalities and web addresses stay as written (unless on the "
                        "deny-list).",
            by_type=_IDENTIFIER_TYPES, by_category=_IDENTIFIER_CATEGORIES,
            fallback=Action.PLACEHOLDER),
        Policy(
            name="identifiers-dx", title="Protect identifiers + d_X",
            description="As 'Protect identifiers', plus ε-d_X noise on every other token.",
            by_type=_IDENTIFIER_TYPES, by_category=_IDENTIFIER_CATEGORIES,
            fallback=Action.PLACEHOLDER, dx=DxScope.REST),
        Policy(
            name="everything", title="Everything detected",
            description="Every detected value becomes a numbered placeholder.",
            fallback=Action.PLACEHOLDER),
        Policy(
            name="dx-all", title="d_X on the whole text",
            description="The research setting: ε-d_X noise on every token, no placeholders.",
            fallback=Action.KEEP, dx=DxScope.ALL),
        Policy(
            name="dx-pii", title="d_X on the detected values",
            description="ε-d_X noise on the tokens of the detected values only; the rest is "
                        "sent as written.",
            fallback=Action.KEEP, dx=DxScope.SPANS),
    ]
    presets += [_classic(a) for a in (Action.PLACEHOLDER, Action.PSEUDONYM,
                                      Action.GENERALIZE, Action.MASK, Action.REDACT,
                                      Action.DELETE)]
    return {p.name: p for p in presets}


PRESETS: dict[str, Policy] = _presets()

#: ``--method`` names and the preset each stands for (``dx`` depends on ``--scope``).
METHOD_PRESETS = {"dx": "dx-all", "placeholder": "placeholder", "pseudonym": "pseudonym",
                  "generalize": "generalize", "mask": "mask", "redact": "redact",
                  "delete": "delete"}


def preset_for_method(method: str, scope: str = "all") -> str:
    if method == "dx":
        return "dx-pii" if scope == "pii" else "dx-all"
    try:
        return METHOD_PRESETS[method]
    except KeyError:
        raise ConfigError(f"Unknown sanitization method '{method}'.",
                          f"Choose one of: {', '.join(METHOD_PRESETS)}.") from None


# -- reading policies ------------------------------------------------------------------

_KNOWN_KEYS = {"name", "title", "description", "dx", "epsilon", "fallback", "categories",
               "types"}


def policy_from_mapping(data: Mapping[str, Any], where: str, *,
                        default_name: str = "custom") -> Policy:
    """A policy from parsed TOML/JSON; :class:`ConfigError` names ``where`` and the key."""
    def bad(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{where}: '{key}' {problem}.",
                           "Fix the policy file (see docs/POLICIES.md for its keys).")

    unknown = set(data) - _KNOWN_KEYS
    if unknown:
        raise bad(sorted(unknown)[0], "is not a policy key "
                  f"(known: {', '.join(sorted(_KNOWN_KEYS))})")

    def action(key: str, value: Any) -> Action:
        try:
            return Action(value)
        except ValueError:
            raise bad(key, f"must be one of {', '.join(a.value for a in Action)}, "
                           f"not {value!r}") from None

    def text(key: str, default: str) -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            raise bad(key, "must be text")
        return value

    name = text("name", default_name).strip()
    if not name or not re.fullmatch(r"[\w.-]{1,64}", name):
        raise bad("name", "must be 1-64 letters, digits, '.', '-' or '_'")
    try:
        dx = DxScope(data.get("dx", "none"))
    except ValueError:
        raise bad("dx", f"must be one of {', '.join(s.value for s in DxScope)}") from None
    eps = data.get("epsilon")
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, (int, float))
                            or not eps > 0):
        raise bad("epsilon", "must be a positive number")
    cats = data.get("categories", {})
    types = data.get("types", {})
    if not isinstance(cats, Mapping):
        raise bad("categories", "must be a table")
    if not isinstance(types, Mapping):
        raise bad("types", "must be a table")
    by_category = {}
    for key, value in cats.items():
        try:
            cat = Category(key)
        except ValueError:
            raise bad(f"categories.{key}", "is not a category (direct_identifier, "
                      "quasi_identifier, confidential_attribute, secret)") from None
        by_category[cat] = action(f"categories.{key}", value)
    by_type = {}
    for key, value in types.items():
        if not re.fullmatch(r"[A-Z][A-Z0-9_]{1,40}", str(key)):
            raise bad(f"types.{key}", "must be an entity type in capitals, e.g. PERSON")
        by_type[str(key)] = action(f"types.{key}", value)
    return Policy(name=name, title=text("title", name), description=text("description", ""),
                  by_type=by_type, by_category=by_category,
                  fallback=action("fallback", data.get("fallback", "placeholder")),
                  dx=dx, epsilon=float(eps) if eps is not None else None, source=where)


def load_policy_file(path: Path | str) -> Policy:
    """A policy from a TOML file; errors name the file and the line."""
    p = Path(path)
    try:
        raw = read_regular(p, MAX_POLICY_FILE_BYTES)
    except NotARegularFile as exc:
        raise ConfigError(f"Cannot read the policy file {p}: {exc.strerror}.",
                          exc.hint) from None
    except OSError as exc:
        raise ConfigError(f"Cannot read the policy file {p}: {exc.strerror or exc}.",
                          "Check the path and its permissions.") from None
    if len(raw) > MAX_POLICY_FILE_BYTES:
        raise ConfigError(f"The policy file {p} is larger than 1 MB; no policy is.",
                          "Check that you gave the policy file.")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"The policy file {p} is not UTF-8 text.",
                          "Save it as UTF-8.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The policy file {p} is not valid TOML: {exc}.",
                          "Fix the line it names.") from None
    except RecursionError:
        raise ConfigError(f"The policy file {p} is not valid TOML: it nests arrays or "
                          "tables too deeply.", "Check that this is the policy file.") from None
    return policy_from_mapping(data, str(p), default_name=p.stem)


def policy_names(saved: Iterable[Policy] = ()) -> list[str]:
    return list(PRESETS) + [p.name for p in saved if p.name not in PRESETS]


def find_policy(name_or_file: str, saved: Iterable[Policy] = ()) -> Policy:
    """A preset, a saved policy by name, or a TOML file by path."""
    if name_or_file in PRESETS:              # a saved policy cannot shadow a preset
        return PRESETS[name_or_file]
    saved = list(saved)
    for p in saved:
        if p.name == name_or_file:
            return p
    path = Path(name_or_file)
    if name_or_file.endswith(".toml") or path.is_file():
        return load_policy_file(path)
    raise ConfigError(f"Unknown policy '{name_or_file}'.",
                      f"Use one of: {', '.join(policy_names(saved))} — or a .toml file.")
