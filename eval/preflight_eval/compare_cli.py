"""The same CLI outputs before and after a change: run one fixed set of commands on two revisions.

    python -m preflight_eval.compare_cli --base b0dfb20            # b0dfb20 vs the working tree
    python -m preflight_eval.compare_cli --base HEAD~1 --head HEAD --only detect sweep

Each revision's ``app/`` and ``resources/`` are exported with ``git archive`` (the working
tree is used in place), and every command runs as ``preflight`` of that revision under its
own ``PYTHONPATH``, in a fresh ``PREFLIGHT_HOME`` at the same path for both sides, with the
same input files and no network (a new network namespace where ``unshare -n`` works, an
unreachable proxy otherwise). Commands that need a provider or the local language model's
slow passes are left out; d_X runs with a fixed ``--seed``. The revision's own folder is
replaced by ``<TREE>`` in the outputs and measured durations (``"seconds": …``) by
``<seconds>``, so only behaviour differs. Prints, per command,
"identical" or "differs" with a unified diff excerpt; exits 1 when any output differs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "resources/samples/hr-offer-email.txt"
TAB = "data/annotated/tab_test/echr_test_sample.jsonl"
ENTRY = "import sys; from preflight.cli.main import main; sys.exit(main())"
EXCERPT_LINES = 40
#: A duration the output reports (the attack's Monte Carlo time): measured, not behaviour.
_SECONDS = re.compile(r'("seconds": )-?[0-9][0-9.e+-]*')
EXCERPT_WIDTH = 160     # a d_X text is one long JSON line: show its start

#: A policy file as a company user writes one (docs/POLICIES.md).
POLICY_FILE = """\
name = "legal"
title = "Legal review"
dx = "none"
fallback = "placeholder"

[categories]
direct_identifier = "pseudonym"
secret = "redact"
confidential_attribute = "mask"
quasi_identifier = "keep"
"""

#: A company policy with ε bounds and a utility floor (docs/POLICIES.md, "Company policy").
ORG_POLICY = """\
version = 1
min_utility = 0.6

[epsilon]
min = 20
max = 80
"""

#: The user's own ε bounds (Settings → Policy), inside the calibrated range.
SETTINGS_BOUNDS = '{"policy": {"epsilon_min": 30.0, "epsilon_max": 120.0}}'


@dataclass(frozen=True)
class Case:
    """One command: its ``preflight`` arguments, commands run first in the same home, and
    whether the company policy is in force."""

    name: str
    args: tuple[str, ...]
    org_policy: bool = False
    setup: tuple[tuple[str, ...], ...] = ()
    settings: str | None = None     # the user's settings.json, if any


def cases() -> list[Case]:
    """The fixed set; ``{sample}``, ``{tab}`` and ``{policy}`` name the shared inputs."""
    out = [Case("detect", ("detect", "{sample}", "--json")),
           Case("detect-court", ("detect", "{tab}", "--json"))]
    dx = ("--epsilon", "40")     # d_X needs an ε; without one the command says so
    for preset in ("identifiers", "identifiers-dx", "everything", "dx-all", "dx-pii"):
        out.append(Case(f"sanitize-{preset}",
                        ("sanitize", "{sample}", "--policy", preset, "--seed", "7", "--json",
                         *(dx if "dx" in preset else ()))))
    for method in ("redact", "mask", "placeholder", "pseudonym", "generalize", "dx"):
        out.append(Case(f"sanitize-method-{method}",
                        ("sanitize", "{sample}", "--method", method, "--seed", "7", "--json",
                         *(dx if method == "dx" else ()))))
    out.append(Case("sanitize-dx-no-epsilon",
                    ("sanitize", "{sample}", "--policy", "dx-all", "--seed", "7", "--json")))
    out += [
        Case("sanitize-policy-file",
             ("sanitize", "{sample}", "--policy", "{policy}", "--seed", "7", "--json")),
        Case("sanitize-court", ("sanitize", "{tab}", "--seed", "7", "--json")),
        Case("sweep", ("sweep", "{sample}", "--policy", "identifiers-dx", "--seed", "7",
                       "--steps", "5", "--json")),
        Case("sweep-company", ("sweep", "{sample}", "--policy", "identifiers-dx", "--seed", "7",
                               "--steps", "5", "--json"), org_policy=True),
        Case("sweep-settings", ("sweep", "{sample}", "--policy", "identifiers-dx", "--seed", "7",
                                "--steps", "5", "--json"), settings=SETTINGS_BOUNDS),
        Case("sweep-bad-bounds", ("sweep", "{sample}", "--policy", "identifiers-dx", "--seed", "7",
                                  "--min-epsilon", "90", "--max-epsilon", "30", "--json")),
        Case("sweep-company-flags", ("sweep", "{sample}", "--policy", "identifiers-dx", "--seed",
                                     "7", "--steps", "5", "--min-epsilon", "5",
                                     "--max-epsilon", "500", "--json"), org_policy=True),
        Case("recommend-company-flags", ("recommend", "{sample}", "--policy", "identifiers",
                                         "--min-utility", "0.2", "--json"), org_policy=True),
        Case("assess-fast", ("assess", "{sample}", "--policy", "identifiers-dx", "--epsilon",
                             "40", "--seed", "7", "--fast", "--json")),
        Case("privacy", ("privacy", "{sample}", "--policy", "identifiers-dx", "--epsilon", "40",
                         "--seed", "7", "--no-attack", "--json")),
        Case("send-no-provider", ("send", "{sample}", "--yes")),
        # A provider on a closed loopback port: nothing can leave, the error says which one.
        Case("send-first-provider", ("send", "{sample}", "--yes"),
             setup=(("providers", "add", "office", "--base-url", "http://127.0.0.1:9/v1",
                     "--model", "m", "--allow-insecure-http"),)),
        # Two providers, the default one removed: which one does a send without --provider use?
        Case("send-no-default-provider", ("send", "{sample}", "--yes"),
             setup=tuple(("providers", "add", name, "--base-url", f"http://127.0.0.1:9/{name}",
                          "--model", "m", "--allow-insecure-http") for name in ("a", "b"))
             + (("providers", "remove", "a"),)),
        Case("info", ("info", "--json")),
    ]
    return out


def export_tree(repo: Path, rev: str | None, dest: Path) -> Path:
    """The revision's tree (``app/``, ``resources/``, the model manifest) in ``dest``;
    None: the working tree."""
    if rev is None:
        return repo
    dest.mkdir(parents=True)
    proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev, "app",
                           "resources", "models/manifest.toml"], capture_output=True)
    if proc.returncode:
        raise SystemExit(f"compare_cli: error: git archive {rev}: "
                         f"{proc.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=proc.stdout, check=True)
    return dest


def write_inputs(repo: Path, dest: Path) -> dict[str, str]:
    """The shared input files, taken from ``repo`` (the working tree)."""
    dest.mkdir(parents=True, exist_ok=True)
    sample = dest / "hr-offer-email.txt"
    shutil.copyfile(repo / SAMPLE, sample)
    tab = dest / "court-judgment.txt"
    tab_src = repo / TAB
    if tab_src.exists():    # the first court judgment of the annotated sample, as plain text
        first = tab_src.read_text(encoding="utf-8").splitlines()[0]
        tab.write_text(json.loads(first)["text"], encoding="utf-8")
    else:
        shutil.copyfile(sample, tab)
    policy = dest / "legal.toml"
    policy.write_text(POLICY_FILE, encoding="utf-8")
    org = dest / "org-policy.toml"
    org.write_text(ORG_POLICY, encoding="utf-8")
    return {"sample": str(sample), "tab": str(tab), "policy": str(policy), "org": str(org),
            "models": str(repo / "models")}


def _offline_prefix() -> list[str]:
    """``unshare -n`` (no network at all) where the machine allows it."""
    exe = shutil.which("unshare")
    if exe and subprocess.run([exe, "-n", "true"], capture_output=True).returncode == 0:
        return [exe, "-n"]
    return []


def run_case(tree: Path, case: Case, inputs: dict[str, str], home: Path,
             prefix: list[str], timeout: float) -> str:
    """The command's exit code, stdout and stderr, with the tree's folder made neutral.
    Both sides read the same models: ``PREFLIGHT_MODELS_DIR``, else ``inputs["models"]``."""
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if case.settings is not None:
        (home / "config").mkdir(mode=0o700)
        (home / "config" / "settings.json").write_text(case.settings, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFLIGHT_")}
    env["PREFLIGHT_MODELS_DIR"] = os.environ.get("PREFLIGHT_MODELS_DIR") or inputs["models"]
    env.update(PYTHONPATH=str(tree / "app"), PREFLIGHT_HOME=str(home),
               PREFLIGHT_ORG_POLICY=inputs["org"] if case.org_policy else str(home / "none"),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
               QT_QPA_PLATFORM="offscreen", PYTHONHASHSEED="0")
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    out = ""
    for step in (*case.setup, case.args):
        args = [a.format(**inputs) for a in step]
        try:
            proc = subprocess.run([*prefix, sys.executable, "-c", ENTRY, *args], env=env,
                                  cwd=home, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
            out += (f"$ preflight {' '.join(step)}\nexit {proc.returncode}\n--- stdout\n"
                    f"{proc.stdout}--- stderr\n{proc.stderr}")
        except subprocess.TimeoutExpired:
            out += f"$ preflight {' '.join(step)}\ntimed out after {timeout:.0f} s\n"
    out = out.replace(str(tree.resolve()), "<TREE>").replace(str(tree), "<TREE>")
    return _SECONDS.sub(r"\1<seconds>", out)


def compare(repo: Path, base: str, head: str | None, only: list[str] | None = None,
            timeout: float = 600.0, echo: Callable[[str], object] = print) -> dict[str, bool]:
    """Run every case on both revisions; True per case whose outputs are identical."""
    chosen = [c for c in cases() if not only or c.name in only]
    prefix = _offline_prefix()
    results: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="preflight-compare-") as tmp:
        work = Path(tmp)
        inputs = write_inputs(repo, work / "inputs")
        trees = {"base": export_tree(repo, base, work / "base"),
                 "head": export_tree(repo, head, work / "head")}
        echo(f"base {base} vs head {head or 'working tree'}; "
             f"{'no network (unshare -n)' if prefix else 'unreachable proxy'}")
        for case in chosen:
            a, b = (run_case(trees[s], case, inputs, work / "home", prefix, timeout)
                    for s in ("base", "head"))
            results[case.name] = a == b
            failed = sorted({line for line in (a + b).splitlines()
                             if line.startswith("exit ") and line != "exit 0"})
            note = f"  (a step ended with {' / '.join(failed)})" if failed else ""
            echo(f"{case.name:28s} {'identical' if a == b else 'differs'}{note}")
            if a != b:
                diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(),
                                                 f"{case.name} @ base", f"{case.name} @ head",
                                                 lineterm="", n=2))
                echo("\n".join("    " + (line if len(line) <= EXCERPT_WIDTH else
                                          line[:EXCERPT_WIDTH] + " …")
                                for line in diff[:EXCERPT_LINES]))
                if len(diff) > EXCERPT_LINES:
                    echo(f"    … {len(diff) - EXCERPT_LINES} more diff lines")
    same = sum(results.values())
    echo(f"{same} of {len(results)} commands identical")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="git revision before (default HEAD)")
    parser.add_argument("--head", default=None,
                        help="git revision after (default: the working tree)")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the git repository")
    parser.add_argument("--only", nargs="+", metavar="CASE", help="run these cases only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    parser.add_argument("--list", action="store_true", help="print the cases and stop")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - {c.name for c in cases()})
    if unknown:
        parser.error(f"no case named {', '.join(unknown)} (--list shows them)")
    if args.list:
        for case in cases():
            notes = [f"after: preflight {' '.join(step)}" for step in case.setup]
            notes += ["company policy"] * case.org_policy + ["settings"] * bool(case.settings)
            print(f"{case.name:28s} preflight {' '.join(case.args)}"
                  + (f"   ({'; '.join(notes)})" if notes else ""))
        return 0
    results = compare(args.repo.resolve(), args.base, args.head, args.only, args.timeout)
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
