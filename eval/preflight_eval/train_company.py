"""Train the company's utility regressors on the learning pairs the laptops pooled.

With ``share_learning_pairs = true`` in the company policy, every laptop's
``preflight audit sync`` also copies its learning pairs — feature vector, realized utility,
provider and model names; never text — into ``preflight_learning_pairs`` of the central
store (:mod:`preflight.runtime.audit_pg`). This script reads them and fits one bundle per
(provider, model) with the product's own fitting code (monotone gradient boosting and the
split-conformal band, :func:`preflight.core.utility.predictor.fit_bundle`):

    python -m preflight_eval.train_company --from postgresql://admin@db.example.com/preflight \\
        --password-env PREFLIGHT_ADMIN_PW --out company-models/

Writes, per (provider, model), ``<out>/<slug>/regressor.joblib``, its ``.sha256`` and a
``MODEL_CARD.md`` (pairs, laptops, date, held-out metrics), and prints the
``[utility_model]`` lines of the company policy that distribute it (docs/DEPLOYMENT.md).

Held out: the pairs carry no document id (no text leaves a laptop), so the split is by
*laptop* when a provider has at least :data:`MIN_LAPTOPS` of them (a laptop's documents
are then all on one side), else by pair — then one document's sends at several ε can sit
on both sides, and the card says so.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from preflight.core.fsutil import atomic_write_text, file_sha256
from preflight.core.utility.features import (
    ALL_FEATURES, BASELINE_FEATURES, FULL_MODEL_FEATURES,
)
from preflight.core.utility.fitting import BUNDLE_FORMAT, MIN_ROWS, fit_model, group_split, \
    predict_rows
from preflight.core.utility.flow import ProviderKey
from preflight.core.utility.predictor import BUNDLE_NAME, cost_metrics, fit_bundle, \
    save_bundle

MIN_LAPTOPS = 5
HELD_OUT_MODELS = {"full": FULL_MODEL_FEATURES, "ε-only baseline": BASELINE_FEATURES}


def rows_by_provider(pairs: Iterable[Mapping[str, Any]]
                     ) -> dict[ProviderKey, list[dict[str, Any]]]:
    """Stored pairs (``read_pairs``) → regressor rows per (provider, model). A pair of
    another bundle format is skipped (its features may mean something else)."""
    found: dict[ProviderKey, list[Mapping[str, Any]]] = {}
    for p in pairs:
        if int(p["bundle_format"]) == BUNDLE_FORMAT:
            found.setdefault(ProviderKey(p["provider"], p["model"]), []).append(p)
    out: dict[ProviderKey, list[dict[str, Any]]] = {}
    for key, ps in found.items():
        by_laptop = len({p["laptop"] for p in ps}) >= MIN_LAPTOPS
        rows = []
        for p in ps:
            row: dict[str, Any] = {n: math.nan for n in ALL_FEATURES}
            row.update({n: (math.nan if v is None else float(v))
                        for n, v in zip(p["feature_names"], p["features"])
                        if n in row})
            row.update(target=float(p["realized"]), variant=p["variant"], laptop=p["laptop"],
                       group=p["laptop"] if by_laptop else f"{p['laptop']}:{p['pair_id']}")
            rows.append(row)
        out[key] = rows
    return out


def held_out_metrics(rows: Sequence[Mapping[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Models fitted on the fit part of the split only, scored on its test part (plain
    rows), like ``eval_utility`` does with the data set's documents."""
    fit, _cal, test = group_split(rows)
    fit = [r for r in fit if r.get("variant", "plain") == "plain"]
    test = [r for r in test if r.get("variant", "plain") == "plain"]
    if len(fit) < MIN_ROWS or not test:
        return {}
    y = [float(r["target"]) for r in test]
    return {name: cost_metrics(y, predict_rows(fit_model(fit, feats, seed), test, feats))
            .to_json() for name, feats in HELD_OUT_MODELS.items()}


def train_provider(rows: Sequence[Mapping[str, Any]], key: ProviderKey, *, seed: int = 0,
                   source: str = "pooled learning pairs") -> dict[str, Any]:
    """One bundle for ``key`` from its pooled rows (ValueError: too few rows)."""
    laptops = len({r.get("laptop", r.get("group")) for r in rows})
    metrics = {
        "provider": {"name": key.provider, "model": key.model},
        "company": {"pairs": len(rows), "laptops": laptops,
                    "split_by": "laptop" if laptops >= MIN_LAPTOPS else "pair"},
        "held_out": held_out_metrics(rows, seed),
    }
    return fit_bundle(rows, metrics=metrics, seed=seed,
                      source=f"{source}: {len(rows)} pairs from {laptops} laptop(s)")


def write_model(bundle: Mapping[str, Any], out: Path, key: ProviderKey) -> tuple[Path, str]:
    """Bundle, ``.sha256`` and model card under ``out/<slug>/``; (path, sha256)."""
    path = out / key.slug / BUNDLE_NAME
    save_bundle(bundle, path)
    digest = file_sha256(path)
    atomic_write_text(path.with_name(BUNDLE_NAME + ".sha256"), f"{digest}  {BUNDLE_NAME}\n")
    atomic_write_text(path.with_name("MODEL_CARD.md"), model_card(bundle, key, digest))
    return path, digest


def model_card(bundle: Mapping[str, Any], key: ProviderKey, digest: str) -> str:
    m = bundle["metrics"]
    company, held = m["company"], m.get("held_out") or {}
    lines = [
        f"# Company utility regressor for {key.provider} ({key.model})",
        "",
        "Trained on the learning pairs the laptops shared (feature vectors and realized",
        "utilities only, never text) by `python -m preflight_eval.train_company`.",
        "",
        f"- Built: {bundle['created']} with scikit-learn {bundle['sklearn_version']}",
        f"- Pairs: {company['pairs']} from {company['laptops']} laptop(s); bundle format "
        f"{bundle['format']}; models: {', '.join(bundle['models'])}",
        f"- sha256 of `{BUNDLE_NAME}`: `{digest}`",
        "",
        f"## Held-out metrics (split by {company['split_by']}; fitted on the rest)",
        "",
    ]
    if company["split_by"] == "pair":
        lines += ["Fewer than 5 laptops: the split is by pair, so one document's sends can",
                  "sit on both sides and these numbers are optimistic.", ""]
    if held:
        lines += ["| model | n | R² | RMSE | Wasted $ | Wasted ε | Failed |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {name} | {v['n']} | {v['r2']} | {v['rmse']} | "
                  f"{v['wasted_money_pct']} % | {v['wasted_epsilon_pct']} % | "
                  f"{v['failed_pct']} % |" for name, v in held.items()]
    else:
        lines.append("Too few pairs for a held-out part.")
    cov = m.get("conformal", {}).get("full")
    if cov:
        lines += ["", f"- {cov['level']:.0%} conformal band ±{cov['radius']:.3f}: covers "
                  f"{cov['covered']:.1%} of {cov['test_rows']} held-out rows."]
    lines += ["", "## Distributing it", "", "In the company policy:", "", "```toml",
              *policy_lines(key, digest), "```", ""]
    return "\n".join(lines)


def policy_lines(key: ProviderKey, digest: str,
                 where: str = "https://models.example.com/preflight/") -> list[str]:
    return ["[utility_model]", f'path_or_url = "{where}{key.slug}/{BUNDLE_NAME}"',
            f'sha256 = "{digest}"', f'provider = "{key.provider}"', f'model = "{key.model}"']


def read_store(url: str, *, password_env: str | None, sslmode: str,
               sslrootcert: str | None) -> list[dict[str, Any]]:
    """Every pooled pair in the PostgreSQL store at ``url``."""
    from preflight.core.org_policy_audit import CentralAuditSettings
    from preflight.runtime.audit_pg import PgAuditSink

    settings = CentralAuditSettings(url, password_env, None, sslmode, sslrootcert)
    sink = PgAuditSink(settings, lambda: os.environ.get(password_env) if password_env
                       else None)
    try:
        return sink.read_pairs()
    finally:
        sink.close()


def main(argv: list[str] | None = None) -> int:
    from preflight.core.errors import PreflightError

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", required=True, metavar="postgresql://…",
                    help="the central store (the URL of [audit.central], an admin login)")
    ap.add_argument("--out", required=True, help="folder for the bundles and cards")
    ap.add_argument("--password-env", default=None,
                    help="environment variable holding the password (libpq's PGPASSWORD "
                         "works as well)")
    ap.add_argument("--sslmode", default="verify-full")
    ap.add_argument("--sslrootcert", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        pairs = read_store(args.source, password_env=args.password_env,
                           sslmode=args.sslmode, sslrootcert=args.sslrootcert)
    except PreflightError as err:
        print(str(err), file=sys.stderr)
        return 2
    groups = rows_by_provider(pairs)
    if not groups:
        print("The central store holds no learning pairs yet: the company policy must say "
              "share_learning_pairs = true, and laptops must have synced "
              "(`preflight audit sync`).", file=sys.stderr)
        return 2
    out, written = Path(args.out), 0
    when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    for key, rows in sorted(groups.items(), key=lambda kv: (kv[0].provider, kv[0].model)):
        try:
            bundle = train_provider(rows, key, seed=args.seed, source=f"pooled pairs ({when})")
        except ValueError as exc:
            print(f"{key.provider} ({key.model}): skipped, {exc} (has {len(rows)})")
            continue
        path, digest = write_model(bundle, out, key)
        held = bundle["metrics"]["held_out"].get("full", {})
        print(f"{key.provider} ({key.model}): {len(rows)} pairs from "
              f"{bundle['metrics']['company']['laptops']} laptop(s) → {path}\n"
              f"  held-out Failed {held.get('failed_pct', 'n/a')} %, RMSE "
              f"{held.get('rmse', 'n/a')}; sha256 {digest}")
        print("  " + "\n  ".join(policy_lines(key, digest)))
        written += 1
    return 0 if written else 2


if __name__ == "__main__":
    raise SystemExit(main())
