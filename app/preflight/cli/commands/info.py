"""`preflight info`: version, models, folders and what each subsystem reports about itself.

Other modules add sections by appending ``(name, fn)`` to :data:`SECTIONS`; ``fn()``
returns a JSON-serializable dict. A section that fails shows ``{"error": "..."}``: info
is what people run when something is broken, so it must never fail itself.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
from typing import Any, Callable

from preflight import __version__
from preflight.core import paths
from preflight.core.errors import PreflightError

log = logging.getLogger(__name__)


def _services() -> Any:
    """The services over the user's settings; over the defaults when the settings file is
    damaged (its own section reports that), so the other sections still report."""
    from preflight.app.services import build_services
    from preflight.core.config import Settings

    try:
        return build_services()
    except PreflightError:
        return build_services(Settings())


def _dx() -> dict:
    return _services().dx().describe()   # loads the token space only now


def _settings() -> dict:
    """Where the settings are and whether they load (a broken file is reported, not hidden)."""
    from preflight.core.config import load_settings, settings_path

    path = settings_path()
    load_settings(path)            # raises ConfigError naming the bad key
    return {"file": str(path), "status": "ok" if path.exists() else "defaults (no file)"}


def _org_policy() -> dict:
    """The company policy: where it is looked for, its sha256 and what it sets (a broken
    file, or an audit log its rules cannot trust, is reported with the reason sending is
    disabled), and what it changes in the user's own settings."""
    from preflight.app.company_limits import limits_on_settings

    services = _services()
    org = services.org_policy()
    out = org.describe()
    limits = limits_on_settings(org, services.settings)
    if limits:
        out["limits_on_your_settings"] = limits
    return out


def _policy() -> dict:
    """The policy commands use when given none, and the others there are."""
    services = _services()
    active = services.policy()
    return {"active": active.name, "title": active.title, "dx": active.dx.value,
            "raised_by_organization": {k: list(v) for k, v in active.raised.items()},
            "available": services.policy_names()}


def _assessor_slm() -> dict:
    """The utility assessor's local SLM: chosen in the settings, used, and why they differ
    (a missing chosen model falls back to the default). d_X never follows this choice."""
    services = _services()
    choice = services.slm_choice()
    out = {"chosen": services.settings.assessor_slm, "used": choice.role,
           "model": choice.name}
    if choice.warning:
        out["warning"] = choice.warning
    return out


def _utility_model() -> dict:
    """The utility model the predictions use: shipped, the company's, or the company's
    refused (wrong sha256, unreachable) with the reason — never a silent fallback."""
    from preflight.app.ops_status import utility_model_status

    return utility_model_status(_services()).to_json()


SECTIONS: list[tuple[str, Callable[[], dict]]] = [
    ("settings", _settings),
    ("policy", _policy),
    ("org_policy", _org_policy),
    ("assessor_slm", _assessor_slm),
    ("utility_model", _utility_model),
    ("dx", _dx),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "info", help="show version, models, folders and settings in effect",
        description="Show the version, the state of every model, the folders Preflight "
                    "uses and what each subsystem reports about itself.",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _models() -> list[dict[str, Any]]:
    return [
        {"role": s.role, "name": s.name, "file": str(s.path), "sha256": s.sha256,
         "status": s.state, "licence": s.licence}
        for s in _services().models.status()
    ]


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except PreflightError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - diagnostics must survive any broken part
        log.debug("info section failed", exc_info=True)
        return {"error": f"{type(exc).__name__}: {exc}"}


def _paths() -> dict[str, str]:
    return {
        "config": str(paths.config_dir()),
        "data": str(paths.data_dir()),
        "cache": str(paths.cache_dir()),
        "models": str(paths.models_dir()),
    }


def collect() -> dict[str, Any]:
    """Everything `preflight info` shows, as one JSON-serializable dict."""
    info: dict[str, Any] = {
        "version": __version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(terse=True),
        "models": _safe(_models),
        "paths": _safe(_paths),
    }
    for name, fn in list(SECTIONS):
        info[name] = _jsonable(_safe(fn))
    return info


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def run(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json

    info = collect()
    broken = info.get("settings")
    if isinstance(broken, dict) and "error" in broken:
        print(f"preflight: warning: settings: {broken['error']}", file=sys.stderr)
    org = info.get("org_policy")
    if isinstance(org, dict) and org.get("status") == "invalid":
        print(f"preflight: warning: {org.get('error')}", file=sys.stderr)
    if isinstance(org, dict) and org.get("audit_log"):
        print(f"preflight: warning: {org['audit_log']}", file=sys.stderr)
    for line in (org.get("limits_on_your_settings") or []) if isinstance(org, dict) else []:
        print(f"preflight: note: {line}", file=sys.stderr)
    slm = info.get("assessor_slm")
    if isinstance(slm, dict) and slm.get("warning"):
        print(f"preflight: warning: {slm['warning']}", file=sys.stderr)
    utility = info.get("utility_model")
    if isinstance(utility, dict) and utility.get("source") == "refused":
        print(f"preflight: warning: {utility['line']}", file=sys.stderr)
    if args.json:
        print_json(info)
        return 0
    out = sys.stdout
    out.write(f"Preflight {info['version']}  ({info['python']}, {info['platform']})\n")
    if isinstance(utility, dict) and "line" in utility:
        out.write(utility["line"] + "\n")
    out.write("\n")
    models = info["models"]
    if isinstance(models, dict):  # the error form
        out.write(f"Models: {models.get('error')}\n")
    else:
        rows = [(m["role"], m["status"], m["name"], m["licence"]) for m in models]
        head = ("ROLE", "STATUS", "MODEL", "LICENCE")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
        out.write("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip() + "\n")
        for row in rows:
            out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    out.write("\nFolders:\n")
    for key, value in (info["paths"].items() if "error" not in info["paths"]
                       else [("error", info["paths"]["error"])]):
        out.write(f"  {key:<7} {value}\n")
    for name, _ in SECTIONS:
        if name not in info:
            continue
        out.write(f"\n{name}:\n")
        value = info[name]
        if isinstance(value, dict):
            for key, item in value.items():
                text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
                out.write(f"  {key}: {text}\n")
        else:
            out.write(f"  {json.dumps(value, ensure_ascii=False)}\n")
    return 0
