"""Measure the built bundle: size on disk and start-up times (medians).

    python installer/bench_bundle.py [--bundle dist/preflight] [--runs 5] [--drop-caches]
                                     [--json build/installer-bench.json]

Start-up of the frozen executable, each a fresh process, with PREFLIGHT_HOME in a
temporary folder and the bundled models:
    version   `preflight --version`     (bootloader + Python + the CLI)
    info      `preflight info --json`   (all subsystems report, models hash-checked)
    gui       `preflight -v gui` offscreen: launch until the window reports itself shown
              (its "window shown" log line); the process is then terminated
The first run of each is also reported separately: with --drop-caches (root) the page
cache is dropped before it, so it is a true cold start from disk; without it the first run
merely follows earlier runs. Later runs are warm; their median is printed.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "version": ["--version"],
    "info": ["info", "--json"],
    "gui": ["-v", "gui"],
}
WINDOW_SHOWN = "window shown"  # logged by preflight.qt.qt_app.run at INFO level


def tree_size(path: Path) -> tuple[int, int]:
    """(bytes, files) of a folder, symlinks not followed."""
    total = files = 0
    for p in path.rglob("*"):
        if p.is_file() and not p.is_symlink():
            total += p.stat().st_size
            files += 1
    return total, files


def _drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def _time_window(cmd: list[str], env: dict, cwd: Path) -> float:
    """Seconds from launch to the window's "window shown" log line."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if WINDOW_SHOWN in line:
                return time.perf_counter() - start
        raise SystemExit(f"the window never reported itself shown (exit {proc.wait()})")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def time_command(exe: Path, args: list[str], home: Path) -> float:
    env = dict(os.environ, PREFLIGHT_HOME=str(home), QT_QPA_PLATFORM="offscreen",
               PREFLIGHT_GUI_SMOKE="120")  # safety net: the window closes itself
    env.pop("PREFLIGHT_MODELS_DIR", None)
    if "gui" in args:
        return _time_window([str(exe), *args], env, home)
    start = time.perf_counter()
    res = subprocess.run([str(exe), *args], env=env, cwd=home, capture_output=True,
                         timeout=600)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"`preflight {' '.join(args)}` failed ({res.returncode}): "
                         f"{res.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "preflight")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--drop-caches", action="store_true",
                        help="drop the page cache before each first run (needs root)")
    parser.add_argument("--only", nargs="*", choices=sorted(COMMANDS), default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.bundle = args.bundle.resolve()
    exe = args.bundle / ("preflight.exe" if sys.platform == "win32" else "preflight")
    if not exe.exists():
        raise SystemExit(f"no bundle at {args.bundle}: run installer/build_linux.sh first")

    size, files = tree_size(args.bundle)
    internal = args.bundle / "_internal"
    models_size, _ = tree_size(internal / "models") if (internal / "models").exists() else (0, 0)
    result: dict = {"bundle": str(args.bundle), "bundle_bytes": size, "files": files,
                    "models_bytes": models_size, "runs": args.runs, "start": {}}
    with tempfile.TemporaryDirectory(prefix="preflight-bench-") as tmp:
        home = Path(tmp)
        for name in args.only or COMMANDS:
            dropped = _drop_caches() if args.drop_caches else False
            first = time_command(exe, COMMANDS[name], home)
            warm = [time_command(exe, COMMANDS[name], home) for _ in range(args.runs)]
            result["start"][name] = {
                "first_s": round(first, 2), "first_after_drop_caches": dropped,
                "median_warm_s": round(statistics.median(warm), 2),
                "warm_s": [round(t, 2) for t in warm],
            }
    print(f"bundle: {size / 2**20:.0f} MiB in {files} files "
          f"(models {models_size / 2**20:.0f} MiB) at {args.bundle}")
    for name, r in result["start"].items():
        first_kind = "cold (page cache dropped)" if r["first_after_drop_caches"] else "first"
        print(f"start {name:<8} median of {args.runs} warm runs {r['median_warm_s']:6.2f} s;"
              f"  {first_kind} {r['first_s']:6.2f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
