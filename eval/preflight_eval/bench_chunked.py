"""Planning a chunked summary of a 0.9 MB document, as the window and `send --long
chunked` do before the confirmation. Prints medians and, with ``--against``, the ratio.

    python -m preflight_eval.bench_chunked [--runs 3] [--chars 900000] [--context 32000]
        [--profile FILE.html] [--tab echr_dev_sample.jsonl] [--against OTHER_CHECKOUT]

The document is real text (never generated words): the TAB dev judgments
(``shared/data/tab/``, or ``--tab``), then the licences of /usr/share/common-licenses and package
copyright files, paragraphs kept, until ``--chars``. Real services: the detector
(Presidio + spaCy), the default policy, the tokenizer; the provider is a loopback URL
with a ``--context`` token window (nothing is sent: planning only). Timed: the whole
document's detection and sanitization once (reported apart), then
:func:`~preflight.core.send.chunked.prepare_chunked` (split, per-part plan, re-scan and
the whole-document check) ``--runs`` times. ``--profile`` writes a pyinstrument report
of one planning run (pyinstrument is not a dependency: install it beside). ``--against``:
another checkout plans in a second process, the two in turn (one load for both); the
ratio is this checkout's median over the other's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SOURCES = (Path("/usr/share/common-licenses"), Path("/usr/share/doc"))


def _texts(tab: Path):
    if tab.is_file():
        for line in tab.read_text(encoding="utf-8").splitlines():
            yield json.loads(line)["text"]
    for folder in SOURCES:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.suffix not in (".gz", ".html"):
                if path.parent == folder or path.name == "copyright":
                    try:
                        yield path.read_text(encoding="utf-8")
                    except (UnicodeDecodeError, OSError):
                        continue


def long_text(chars: int, tab: Path | None = None) -> str:
    """``chars`` characters or more of real text (see the module docstring)."""
    from preflight_eval.bench_detect import _default_tab

    out, size = [], 0
    for text in _texts(tab or _default_tab()):
        text = text.strip()
        if text:
            out.append(text)
            size += len(text) + 2
        if size >= chars:
            return "\n\n".join(out)
    raise SystemExit(f"only {size} characters of real text on this machine")


def _setup(args):
    """The document, its detections and sanitization, and the planning call."""
    from preflight.app.services import build_services
    from preflight.core.config import ProviderSettings, Settings
    from preflight.core.send.chunked import prepare_chunked
    from preflight.core.tasks import SUMMARIZE

    text = long_text(args.chars, args.tab)
    provider = ProviderSettings("loop", "http://127.0.0.1:9/v1", "m",
                                context_tokens=args.context)
    services = build_services(Settings(providers=[provider], default_provider="loop"))
    session = services.send_session()
    t = time.perf_counter()
    spans = services.detector().detect(text)
    detect_s = time.perf_counter() - t
    sanitized, vault = services.sanitize(services.policy("identifiers"), text, spans)
    head = (f"document: {len(text):,} characters, {len(spans):,} spans; "
            f"detection {detect_s:.1f} s (once)")
    # each planning starts where a send starts: the detector has read the document, not
    # yet the payload (a later run would find the payload's units and paragraphs cached)
    caches = (services.detector()._units, services.detector()._entities)
    seen = [OrderedDict(cache._items) for cache in caches]

    def plan():
        for cache, items in zip(caches, seen):
            cache._items = OrderedDict(items)
        return prepare_chunked(session, text, sanitized, spans, SUMMARIZE, "loop",
                               vault=vault)

    return head, plan


def _timed(plan) -> tuple[float, str]:
    t = time.perf_counter()
    chunked = plan()
    return (time.perf_counter() - t,
            f"{len(chunked.parts)} parts, {len(chunked.blocking)} blocking findings")


def _serve(args) -> None:
    """A worker of ``--against``: set up, then plan once per line read."""
    head, plan = _setup(args)
    print(json.dumps({"head": head}), flush=True)
    for _ in sys.stdin:
        seconds, what = _timed(plan)
        print(json.dumps({"seconds": seconds, "what": what}), flush=True)


def _worker(root: Path, args) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root / "app"), str(Path(__file__).resolve().parents[1])]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serve", "--chars",
           str(args.chars), "--context", str(args.context)]
    if args.tab is not None:
        cmd += ["--tab", str(args.tab)]
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)


def _against(args) -> None:
    """Both checkouts in turn, one planning each per round: they share the load."""
    here = Path(__file__).resolve().parents[2]
    sides = {"before": _worker(args.against.resolve(), args), "after": _worker(here, args)}
    times: dict[str, list[float]] = {k: [] for k in sides}
    for name, proc in sides.items():
        print(f"{name}: {json.loads(proc.stdout.readline())['head']}")
    what = {}
    for _ in range(args.runs):
        for name, proc in sides.items():
            proc.stdin.write("plan\n")
            proc.stdin.flush()
            got = json.loads(proc.stdout.readline())
            times[name].append(got["seconds"])
            what[name] = got["what"]
    for proc in sides.values():
        proc.stdin.close()
        proc.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    for name in sides:
        print(f"{name}: prepare_chunked {what[name]}; median {med[name]:.1f} s over "
              f"{args.runs} runs ({', '.join(f'{x:.1f}' for x in times[name])})")
    print(f"ratio after / before: {med['after'] / med['before']:.2f}; load "
          f"{os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chars", type=int, default=900_000)
    ap.add_argument("--context", type=int, default=32_000)
    ap.add_argument("--profile", type=Path, default=None)
    ap.add_argument("--tab", type=Path, default=None,
                    help="the TAB sample (default: shared/data/tab/ beside the checkout)")
    ap.add_argument("--against", type=Path, default=None,
                    help="another checkout (e.g. `git worktree add /tmp/base main`): both "
                         "plan in turn, and the ratio is printed")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ.setdefault("PREFLIGHT_HOME", tempfile.mkdtemp(prefix="bench-chunked-"))
    if args.serve:
        return _serve(args)
    if args.against is not None:
        return _against(args)
    head, plan = _setup(args)
    print(head)
    if args.profile is not None:
        from pyinstrument import Profiler

        with Profiler() as prof:
            plan()
        args.profile.write_text(prof.output_html())
        print(prof.output_text(unicode=False, color=False, show_all=False)[:12000])
    times, what = [], ""
    for _ in range(args.runs):
        seconds, what = _timed(plan)
        times.append(seconds)
    if times:
        print(f"prepare_chunked: {what}; median {statistics.median(times):.1f} s over "
              f"{args.runs} runs ({', '.join(f'{x:.1f}' for x in times)}); load "
              f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
