"""Calibrate d_X for an embedding and ship the result.

    .venv/bin/python -m preflight_eval.calibrate_dx [--gguf PATH] [--seed 0] [--out DIR]

Computes the rank constant c and the slider's ε range of the default embedding (the SLM's
token embedding matrix) on resources/dx/calibration_sample.txt with a fixed seed, and
writes resources/dx/<sha256 of the GGUF>.json — the file the app loads. The method is in
preflight.core.sanitize.dx_calibration (other embeddings are calibrated by the same code
on first use). Prints the result.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from preflight.core import paths
from preflight.core.fsutil import atomic_write_text
from preflight.core.sanitize.dx_calibration import calibrate, default_sample_text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", default=None, help="GGUF file (default: the installed SLM)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder for <sha>.json (default resources/dx)")
    args = ap.parse_args(argv)
    from preflight.runtime.token_space import gguf_token_space

    space = gguf_token_space(args.gguf)
    t = time.perf_counter()
    result = calibrate(space, default_sample_text(), seed=args.seed)
    result["seconds"] = round(time.perf_counter() - t, 1)
    out_dir = Path(args.out) if args.out else paths.resource_path("dx")
    out_dir.mkdir(parents=True, exist_ok=True)
    f = out_dir / f"{space.key}.json"
    atomic_write_text(f, json.dumps(result, indent=2) + "\n")
    summary = {k: result[k] for k in ("embedding", "rank_constant", "epsilon_range",
                                      "nn_epsilon", "sample", "seconds")}
    print(json.dumps(summary, indent=2))
    print(f"written: {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
