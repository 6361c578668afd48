"""`preflight forget-keys`: delete the API keys Preflight stored in the OS keyring.

Uninstalling the app (a .deb, an .exe uninstaller, dragging the .app to the bin) cannot
reach a user's keyring: package scripts run as root, without the user's session. This
command is what a user runs *before* uninstalling to leave no key behind. It never
touches settings, vaults or the audit log; it tells where they are so the user can keep
or delete them knowingly.
"""

from __future__ import annotations

import argparse

from preflight.core import paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "forget-keys",
        help="delete the API keys stored in the OS keyring (run before uninstalling)",
        description="Delete the API key of every configured provider (and of any provider "
                    "named with --provider) from the OS keyring. Settings, vaults and the "
                    "audit log are kept; their folders are printed.",
    )
    parser.add_argument(
        "--provider", action="append", default=[], metavar="NAME",
        help="also forget the key of a provider that is no longer configured (repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true",
                        help="only list the keys that would be deleted")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(handler=run)


def _provider_accounts(extra: list[str]) -> dict[str, list[str]]:
    """Provider name → its keyring accounts: the key bound to its current address (see
    :func:`~preflight.core.send.keys.key_account`) and one stored under the name alone."""
    from preflight.core.config import load_settings
    from preflight.core.send.keys import key_account

    out: dict[str, list[str]] = {}
    for p in load_settings().providers:           # configured first, no duplicates
        out.setdefault(p.name, []).append(key_account(p))
    for name in [*out, *extra]:
        out.setdefault(name, []).append(name)
    return out


def run(args: argparse.Namespace) -> int:
    from preflight.core.send.keys import KeyStore

    store = KeyStore()
    status = store.status()
    accounts = _provider_accounts(args.provider)
    names = list(accounts)
    forgotten: list[str] = []
    absent: list[str] = []
    if status.available:
        for name, held in accounts.items():
            if args.dry_run:
                found = any(store.get(a) for a in held)
            else:
                found = any([store.delete(a) for a in held])   # every one, not the first
            (forgotten if found else absent).append(name)
    kept = {"config": str(paths.config_dir()), "data (audit log, vaults)": str(paths.data_dir()),
            "cache": str(paths.cache_dir())}
    if args.json:
        from preflight.cli.main import print_json

        print_json({
            "keyring": {"available": status.available, "backend": status.backend,
                        "reason": status.reason},
            "dry_run": args.dry_run,
            "forgotten" if not args.dry_run else "would_forget": forgotten,
            "not_stored": absent,
            "kept_folders": kept,
        })
        return 0
    if not status.available:
        print(f"No OS keyring is in use here ({status.reason}): Preflight cannot have stored "
              "a key in it, so there is nothing to forget.")
    elif not names:
        print("No provider is configured, so no key is stored. (Name one with --provider.)")
    else:
        verb = "Would delete" if args.dry_run else "Deleted"
        print(f"{verb} the key of: {', '.join(forgotten) or 'none'}")
        if absent:
            print(f"No key stored for: {', '.join(absent)}")
    print("Kept (delete them yourself if you want them gone, the audit log included):")
    for what, where in kept.items():
        print(f"  {what}: {where}")
    return 0
