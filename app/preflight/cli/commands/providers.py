"""`preflight providers add|list|remove|set-default|set-key`: the cloud endpoints Preflight
may send to (only those the company policy allows, when it sets an allow-list).

Settings hold the endpoint, model, prices and the *name* of an environment variable;
the key itself goes to the OS keyring (``set-key`` reads it with getpass, never from the
command line, where it would land in the shell history), bound to the provider's address
(scheme, host, port): a provider re-added at another address loses the key stored for the
old one and needs ``set-key`` again.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from preflight.core.errors import ConfigError, InputError
from preflight.core.config import CONTEXT_TOKENS_DEFAULT, CONTEXT_TOKENS_RANGE


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "providers", help="add, list or remove cloud LLM providers; store their API keys",
        description="Manage OpenAI-compatible providers (OpenAI, Mistral, Gemini's OpenAI "
                    "endpoint, Azure deployments, local llama.cpp/vLLM/Ollama servers).",
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    add = sub.add_parser("add", help="add or replace a provider")
    add.add_argument("name")
    add.add_argument("--base-url", required=True,
                     help="OpenAI-style base URL, e.g. https://api.openai.com/v1")
    add.add_argument("--model", required=True, help="model (or Azure deployment) name")
    add.add_argument("--key-env", metavar="VAR",
                     help="environment variable holding the key (read at send time)")
    add.add_argument("--price-in", type=float, default=0.0,
                     help="price per million input tokens")
    add.add_argument("--price-out", type=float, default=0.0,
                     help="price per million output tokens")
    add.add_argument("--api-style", choices=("chat", "completions"), default="chat",
                     help="chat (/chat/completions) or completions (/completions, base models)")
    add.add_argument("--allow-insecure-http", action="store_true",
                     help="allow a plain http:// base URL on another machine (the document "
                          "and key then cross the network unencrypted); loopback needs no flag")
    add.add_argument("--proxy", metavar="URL",
                     help="send through this proxy (https providers only; no proxy from "
                          "the environment is ever used), e.g. http://proxy.corp:3128")
    add.add_argument("--context-tokens", type=int, default=CONTEXT_TOKENS_DEFAULT,
                     metavar="N", help="the model's context window in tokens (default "
                     f"{CONTEXT_TOKENS_DEFAULT:,}, assumed when the model's is not known)")
    add.add_argument("--default", action="store_true", help="make it the default provider")
    add.set_defaults(handler=_add)

    lst = sub.add_parser("list", help="list providers and where their key comes from")
    lst.add_argument("--json", action="store_true", help="machine-readable output")
    lst.set_defaults(handler=_list)

    rm = sub.add_parser("remove", help="remove a provider and its stored key")
    rm.add_argument("name")
    rm.set_defaults(handler=_remove)

    sd = sub.add_parser("set-default", help="make a provider the default")
    sd.add_argument("name")
    sd.set_defaults(handler=_set_default)

    sk = sub.add_parser("set-key", help="store the provider's API key in the OS keyring")
    sk.add_argument("name")
    sk.set_defaults(handler=_set_key)


def _add(args: argparse.Namespace) -> int:
    from preflight.core.config import ProviderSettings, load_settings, save_settings
    from preflight.core.send.providers import create_client

    if args.price_in < 0 or args.price_out < 0:
        raise InputError("Prices cannot be negative.", "Give prices per million tokens.")
    if args.key_env and not args.key_env.replace("_", "").isalnum():
        raise InputError(f"'{args.key_env}' is not an environment variable name.",
                         "Give the variable's name, e.g. OPENAI_API_KEY — never the key.")
    provider = ProviderSettings(
        name=args.name, base_url=args.base_url.strip(), model=args.model,
        key_env=args.key_env, price_input_per_mtok=args.price_in,
        price_output_per_mtok=args.price_out, api_style=args.api_style,
        allow_insecure_http=args.allow_insecure_http,
        proxy=(args.proxy or "").strip() or None, context_tokens=args.context_tokens,
    )
    low, high = CONTEXT_TOKENS_RANGE
    if not low <= args.context_tokens <= high:
        raise InputError(f"A context window of {args.context_tokens} tokens is not possible.",
                         f"Give the model's window, between {low:,} and {high:,} tokens.")
    from preflight.core.send.keys import KeyStore, key_account, show_origin

    create_client(provider).url()  # validates the URL and style before saving
    _org_allows(provider.base_url)
    settings = load_settings()
    old = next((p for p in settings.providers if p.name == args.name), None)
    settings.providers = [p for p in settings.providers if p.name != args.name] + [provider]
    if args.default or not settings.default_provider:
        settings.default_provider = args.name
    save_settings(settings)
    print(f"{'Replaced' if old else 'Added'} provider '{args.name}'"
          f"{' (default)' if settings.default_provider == args.name else ''}.")
    moved = old is not None and key_account(old) != key_account(provider)
    if moved and KeyStore().delete(key_account(old)):
        # a key is bound to the address it was given for: never sent to the new one
        print(f"The key stored for {show_origin(old)} was deleted: it is never sent to "
              f"{show_origin(provider)}.")
    if not args.key_env and (old is None or moved):
        print(f"Store its API key with: preflight providers set-key {args.name}")
    return 0


def _org_allows(base_url: str) -> None:
    """Refuse an address outside the company policy's allow-list."""
    from preflight.core.org_policy import load_org_policy

    org = load_org_policy()
    if not org.broken:       # a broken policy blocks sending, not the local settings
        org.check_provider(base_url)


def _set_default(args: argparse.Namespace) -> int:
    from preflight.core.config import load_settings, save_settings

    settings = load_settings()
    chosen = next((p for p in settings.providers if p.name == args.name), None)
    if chosen is None:
        raise ConfigError(f"No provider named '{args.name}'.",
                          "See the names with: preflight providers list")
    _org_allows(chosen.base_url)
    settings.default_provider = args.name
    save_settings(settings)
    print(f"'{args.name}' is now the default provider.")
    return 0


def _key_source(provider, keystore) -> str:  # type: ignore[no-untyped-def]
    from preflight.core.send.keys import SessionKeyStore, resolve_key

    try:
        return resolve_key(provider, keystore, SessionKeyStore()).source
    except ConfigError:
        return "missing"


def _list(args: argparse.Namespace) -> int:
    from preflight.cli.main import print_json
    from preflight.core.config import load_settings
    from preflight.core.send.keys import KeyStore

    from preflight.core.org_policy import load_org_policy

    settings = load_settings()
    org = load_org_policy()
    keystore = KeyStore()
    status = keystore.status()
    rows = [{
        "name": p.name, "base_url": p.base_url, "model": p.model, "api_style": p.api_style,
        "key_env": p.key_env, "key": _key_source(p, keystore),
        "price_input_per_mtok": p.price_input_per_mtok,
        "price_output_per_mtok": p.price_output_per_mtok,
        "context_tokens": p.context_tokens,
        "default": p.name == settings.default_provider,
        "allow_insecure_http": p.allow_insecure_http, "proxy": p.proxy,
        "allowed_by_organization": org.provider_allowed(p.base_url),
    } for p in settings.providers]
    if args.json:
        print_json({"providers": rows, "keyring": {"available": status.available,
                                                   "backend": status.backend,
                                                   "reason": status.reason}})
        return 0
    if not rows:
        print("No providers. Add one: preflight providers add NAME --base-url URL --model M")
    for r in rows:
        print(f"{'*' if r['default'] else ' '} {r['name']}: {r['model']} at {r['base_url']} "
              f"({r['api_style']}); key: {r['key']}; price in/out per Mtok: "
              f"{r['price_input_per_mtok']:g}/{r['price_output_per_mtok']:g}; "
              f"context window {r['context_tokens']:,} tokens"
              f"{'; plain HTTP allowed' if r['allow_insecure_http'] else ''}"
              f"{'; through proxy ' + r['proxy'] if r['proxy'] else ''}"
              f"{'' if r['allowed_by_organization'] else '; NOT ALLOWED by your organization'}")
    if not status.available:
        print(f"Note: no OS keyring here ({status.reason}); use --key-env or the window's "
              "session-only key.")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from preflight.core.config import load_settings, save_settings
    from preflight.core.send.keys import KeyStore

    settings = load_settings()
    if not any(p.name == args.name for p in settings.providers):
        raise ConfigError(f"No provider named '{args.name}'.",
                          "See the names with: preflight providers list")
    from preflight.core.send.keys import key_account

    gone = [p for p in settings.providers if p.name == args.name]
    settings.providers = [p for p in settings.providers if p.name != args.name]
    if settings.default_provider == args.name:
        settings.default_provider = settings.providers[0].name if settings.providers else None
    save_settings(settings)
    store = KeyStore()
    key_gone = any([store.delete(a) for a in [*map(key_account, gone), args.name]])
    print(f"Removed provider '{args.name}'{' and its stored key' if key_gone else ''}.")
    return 0


def _set_key(args: argparse.Namespace) -> int:
    from preflight.core.config import load_settings
    from preflight.core.send.keys import KeyStore, key_account, show_origin

    provider = next((p for p in load_settings().providers if p.name == args.name), None)
    if provider is None:
        raise ConfigError(f"No provider named '{args.name}'.",
                          f"Add it first: preflight providers add {args.name} --base-url URL "
                          "--model M")
    store = KeyStore()
    status = store.status()
    if not status.available:
        raise ConfigError(
            f"No OS keyring is available here ({status.reason}), so the key cannot be "
            "remembered.",
            f"Put the key in an environment variable and name it: preflight providers add "
            f"{args.name} ... --key-env VAR (the window can also hold a key for one session). "
            "Preflight never writes keys to a file.",
        )
    if sys.stdin is None:                    # started with stdin closed (0<&-)
        raise ConfigError("Standard input is closed, so no key can be read.",
                          f"Run it in a terminal, or pipe the key in: ... | preflight "
                          f"providers set-key {args.name}")
    if not sys.stdin.isatty():
        key = sys.stdin.readline().strip()   # piped from a password manager
    else:
        key = getpass.getpass(f"API key for {args.name} (not echoed): ")
    store.set(key_account(provider), key)
    store.delete(args.name)          # a key stored under the name alone is never used
    print(f"Stored the key for '{args.name}' at {show_origin(provider)} in the OS keyring "
          f"({status.backend}); it is sent to that address only.")
    return 0
