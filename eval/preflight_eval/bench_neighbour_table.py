"""The d_X neighbour table built two ways, side by side: is faiss the better tool?

    .venv/bin/python -m preflight_eval.bench_neighbour_table [--rows 8192] [--runs 3]

The product builds each word-boundary class's verified first-K neighbour lists
(``Geometry.build_table``) from blocked float32 distance rows (one sgemm per 256
candidates) and a partial sort per row, then verifies a safe prefix in float64
(``Geometry.neighbours_from_rows``). The alternative asks faiss's exact ``IndexFlatL2``
for the same k = K + 25 nearest candidates of each pivot and hands them to the same
float64 verification, so both tables are exact and must be identical.

Both run in this process on the same ``--rows`` pivots of the largest class of the
shipped d_X space, alternating, ``--runs`` times; the script prints the medians, their
ratio, and whether the tables agree.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from preflight.app.services import build_services
from preflight.core.sanitize.dx_geometry import Geometry
from preflight.core.sanitize.dx_store import TABLE_K


def product_table(geom: Geometry, pv: np.ndarray, K: int) -> dict[int, np.ndarray]:
    """The product's path on the pivots ``pv`` (blocks of 256, as in build_table)."""
    out: dict[int, np.ndarray] = {}

    def sink(p: int, prefix: np.ndarray, full: bool) -> None:
        out[p] = prefix[:K]

    for lo in range(0, len(pv), 256):
        blk = pv[lo:lo + 256]
        D = (geom.phi[blk] * np.float32(-2.0)) @ geom.phi.T
        D += geom.sq32[None, :]
        geom.neighbours_from_rows(blk, D, [K] * len(blk), sink=sink)
    return out


def faiss_table(geom: Geometry, index, pv: np.ndarray, K: int) -> dict[int, np.ndarray]:
    """faiss's exact k-NN for the candidates, then the same float64 verification: a row
    of D holds the k found distances (minus the pivot's own ‖φ‖²) and +inf elsewhere, so
    the verification selects exactly what faiss returned."""
    out: dict[int, np.ndarray] = {}

    def sink(p: int, prefix: np.ndarray, full: bool) -> None:
        out[p] = prefix[:K]

    k = K + 25
    for lo in range(0, len(pv), 256):
        blk = pv[lo:lo + 256]
        dist, idx = index.search(geom.phi[blk], k)
        D = np.full((len(blk), geom.C), np.inf, dtype=np.float32)
        rows = np.arange(len(blk))[:, None]
        D[rows, idx] = dist - geom.sq32[blk][:, None]
        geom.neighbours_from_rows(blk, D, [K] * len(blk), sink=sink)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8192, help="pivots timed (of the largest class)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    import faiss

    dx = build_services().dx()
    label, geom = max(dx.geometries.items(), key=lambda kv: kv[1].C)
    pv = np.arange(min(args.rows, geom.C))
    print(f"class {label!r}: {geom.C} candidates × {geom.n} dims; {len(pv)} pivots; K = {TABLE_K}")
    t = time.perf_counter()
    index = faiss.IndexFlatL2(geom.n)
    index.add(geom.phi)
    index_s = time.perf_counter() - t
    mine, theirs, search_only = [], [], []
    a = b = {}
    for _ in range(args.runs):
        t = time.perf_counter()
        for lo in range(0, len(pv), 256):
            index.search(geom.phi[pv[lo:lo + 256]], TABLE_K + 25)
        search_only.append(time.perf_counter() - t)
        t = time.perf_counter()
        a = product_table(geom, pv, TABLE_K)
        mine.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = faiss_table(geom, index, pv, TABLE_K)
        theirs.append(time.perf_counter() - t)
    same = all(np.array_equal(a[p], b[p]) for p in pv.tolist())
    m, f = statistics.median(mine), statistics.median(theirs)
    print(f"product (sgemm + partial sort + float64 check): median {m:.2f} s")
    print(f"faiss IndexFlatL2 k={TABLE_K + 25} + the same check: median {f:.2f} s "
          f"(+ {index_s:.2f} s to fill the index)")
    print(f"faiss search alone (no verification): median {statistics.median(search_only):.2f} s")
    print(f"ratio faiss / product: {f / m:.2f}; faiss search alone / product: "
          f"{statistics.median(search_only) / m:.2f}; identical tables: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
