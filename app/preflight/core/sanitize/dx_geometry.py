"""The candidate vocabulary's geometry for exact d_X: canonical distances and verified
neighbour lists (see :mod:`preflight.core.sanitize.dx_engine` for what "exact" means).

One :class:`Geometry` per token space, owned by its :class:`~preflight.core.sanitize.dx.
DxMechanism`: it memoizes neighbour lists across documents (thread-safe) and may hold the
whole-vocabulary neighbour table loaded from disk.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from preflight.core.errors import Cancelled

U32 = 2.0 ** -24          # unit roundoff, float32
REL64 = 1e-10             # generous relative error bound for float64 evaluations


class Geometry:
    """Arrays derived from a token space, shared by every preparation on it."""

    def __init__(self, matrix: np.ndarray, candidate_ids: np.ndarray) -> None:
        self.matrix = matrix                                    # (V, n) float32
        self.cand = np.asarray(candidate_ids, dtype=np.int64)   # (C,) sorted ids
        if self.cand.size == 0:
            raise ValueError("empty candidate vocabulary")
        self.phi = np.ascontiguousarray(matrix[self.cand], dtype=np.float32)  # (C, n)
        self.C, self.n = self.phi.shape
        self.sq64 = np.empty(self.C, dtype=np.float64)
        for lo in range(0, self.C, 4096):
            blk = self.phi[lo:lo + 4096].astype(np.float64)
            self.sq64[lo:lo + 4096] = (blk * blk).sum(axis=1)
        self.sq32 = self.sq64.astype(np.float32)
        self.norm = np.sqrt(self.sq64)
        self.nmax = float(self.norm.max())
        self.sqmax = float(self.sq64.max())
        self.index_of = np.full(matrix.shape[0], -1, dtype=np.int64)
        self.index_of[self.cand] = np.arange(self.C)
        # error bound of a float32 dot product of length n (Higham's gamma_n)
        self.gamma32 = self.n * U32 / (1 - self.n * U32)
        self._nb: dict[int, np.ndarray] = {}     # pivot -> verified canonical order prefix
        self._nb_full: set[int] = set()
        self._lock = threading.Lock()
        # optional whole-vocabulary table: row p = first table_len[p] entries of
        # full_ranking(p) (see build_table); lookups fall back to the memo above
        self.table: np.ndarray | None = None
        self.table_len: np.ndarray | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._strings: list[str] | None = None

    def pool(self) -> ThreadPoolExecutor:
        """Two worker threads for the envelope's dense stage (numpy releases the GIL
        there, so both cores work); created on first use, owned by this geometry."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1),
                                                thread_name_prefix="dx-dense")
            return self._pool

    def candidate_strings(self, piece: Callable[[int], bytes]) -> list[str]:
        """The text of every candidate (index order), decoded once per geometry."""
        with self._lock:
            if self._strings is None:
                self._strings = [piece(int(i)).decode("utf-8") for i in self.cand]
            return self._strings

    # ----- canonical distances (the single source of truth for both paths)

    def canon_sqdist(self, rows: np.ndarray, point64: np.ndarray) -> np.ndarray:
        """‖φ(rows) − point‖² in float64, row by row (shape-independent results)."""
        d = self.phi[rows].astype(np.float64)
        d -= point64
        np.square(d, out=d)
        return d.sum(axis=1)

    def full_ranking(self, pivot: int) -> np.ndarray:
        """All candidates ordered by canonical distance to the pivot (pivot first,
        ties by lowest index)."""
        point = self.phi[pivot].astype(np.float64)
        d = np.empty(self.C, dtype=np.float64)
        for lo in range(0, self.C, 4096):
            d[lo:lo + 4096] = self.canon_sqdist(np.arange(lo, min(lo + 4096, self.C)), point)
        idx = np.arange(self.C)
        return np.lexsort((idx, d, idx != pivot))

    # ----- neighbour lists (fast path)

    def kth(self, pivot: int, k: int) -> int:
        """Entry ``k`` of :meth:`full_ranking` (table, memo, or computed now)."""
        if k == 0:
            return pivot
        if self.table is not None and k < self.table_len[pivot]:
            return int(self.table[pivot, k])
        nb = self._nb.get(pivot)
        if nb is None or len(nb) <= k:
            nb = self.neighbours(pivot, k + 1)
        return int(nb[k])

    def neighbours(self, pivot: int, depth: int) -> np.ndarray:
        """The first ``depth`` entries of :meth:`full_ranking` (memoized)."""
        if self.table is not None and self.table_len[pivot] >= depth:
            return self.table[pivot, : self.table_len[pivot]].astype(np.int64)
        with self._lock:
            have = self._nb.get(pivot)
            if have is not None and (len(have) >= depth or pivot in self._nb_full):
                return have
        self.ensure_neighbours({pivot: depth})
        with self._lock:
            return self._nb[pivot]

    def missing(self, need: dict[int, int]) -> list[tuple[int, int]]:
        """(pivot, depth) pairs of ``need`` not yet memoized deep enough."""
        tl = self.table_len
        with self._lock:
            return [
                (p, d) for p, d in need.items()
                if d > 1 and p not in self._nb_full and len(self._nb.get(p, ())) < d
                and (tl is None or tl[p] < d)
            ]

    def ensure_neighbours(self, need: dict[int, int]) -> None:
        """Make verified neighbour prefixes of at least the given depths available."""
        todo = self.missing(need)
        if not todo:
            return
        todo.sort(key=lambda t: t[1])
        for lo in range(0, len(todo), 256):   # big row blocks keep the sgemm efficient
            chunk = todo[lo:lo + 256]
            pv = np.asarray([p for p, _ in chunk], dtype=np.int64)
            D = (self.phi[pv] * np.float32(-2.0)) @ self.phi.T      # float32 sgemm
            D += self.sq32[None, :]
            self.neighbours_from_rows(pv, D, [d for _, d in chunk], row_sq=self.sq32[pv])

    def neighbours_from_rows(
        self, pv: np.ndarray, D: np.ndarray, depths: list[int], row_sq: np.ndarray | None = None,
        sink=None,
    ) -> None:
        """Select verified neighbour prefixes from float32 rows ``D[r] ≈ ‖φ(z)‖² −
        2φ(z)·φ(pv[r])`` (the pivot's own ‖φ‖² may be left out: it shifts a row
        uniformly; ``row_sq`` adds it for the error bound only)."""
        C = self.C
        stride = 8
        store = sink or self._store
        for r, (p, d) in enumerate(zip(pv.tolist(), depths)):
            m = d + 24
            if m >= C - 1:
                store(p, self.full_ranking(p), full=True)
                continue
            row = D[r]
            # threshold from a strided subsample, so only a short list is partitioned
            sample = row[::stride]
            q = min(len(sample) - 1, (m + 1) // stride + 4 + (m + 1) // (2 * stride))
            thr = np.partition(sample, q)[q]
            sel = np.flatnonzero(row <= thr)
            if len(sel) <= m:
                sel = np.argpartition(row, m)[: m + 1]
            else:
                sel = sel[np.argpartition(row[sel], m)[: m + 1]]
            vals = row[sel]
            cut = int(np.argmax(vals))
            tau = float(vals[cut])            # every non-selected z has row value >= tau
            sel = np.delete(sel, cut)
            if not (sel == p).any():      # the pivot must lead its own list
                store(p, self.full_ranking(p), full=True)
                continue
            point = self.phi[p].astype(np.float64)
            dd = self.canon_sqdist(sel, point)
            order = np.lexsort((sel, dd, sel != p))
            # a non-selected z has true distance >= tau + ‖φ(p)‖² - eta32; canonical
            # values differ from true ones by at most delta: keep the safe prefix.
            eta32 = (
                4 * self.gamma32 * self.norm[p] * self.nmax
                + 8 * U32 * (self.sq64[p] + self.sqmax + 2 * self.norm[p] * self.nmax)
                + 1e-12
            )
            delta = REL64 * (self.norm[p] + self.nmax) ** 2 + 1e-300
            bound = tau + self.sq64[p] - eta32 - 2 * delta
            safe = int(np.searchsorted(dd[order], bound, side="left"))
            prefix = sel[order[: max(safe, 1)]]   # position 0 is the pivot (distance 0)
            if len(prefix) < d:
                store(p, self.full_ranking(p), full=True)
            else:
                store(p, prefix, full=False)

    def build_table(self, K: int = 64, progress=None, cancel=None) -> tuple[np.ndarray, np.ndarray]:
        """Verified first-K neighbour lists of every candidate (one-time, ~C/1000 sgemms)."""
        table = np.zeros((self.C, K), dtype=np.int32)
        tlen = np.zeros(self.C, dtype=np.int32)

        def sink(p: int, prefix: np.ndarray, full: bool) -> None:
            n = min(K, len(prefix))
            table[p, :n] = prefix[:n]
            tlen[p] = n

        blk = 256
        for lo in range(0, self.C, blk):
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            pv = np.arange(lo, min(lo + blk, self.C))
            D = (self.phi[pv] * np.float32(-2.0)) @ self.phi.T
            D += self.sq32[None, :]
            self.neighbours_from_rows(pv, D, [K] * len(pv), sink=sink)
            if progress is not None:
                progress(min(1.0, (lo + blk) / self.C), "neighbour table")
        return table, tlen

    def set_table(self, table: np.ndarray, tlen: np.ndarray) -> None:
        if table.shape[0] != self.C or tlen.shape[0] != self.C:
            raise ValueError("neighbour table does not match the vocabulary")
        self.table, self.table_len = table, tlen

    def _store(self, p: int, prefix: np.ndarray, full: bool) -> None:
        with self._lock:
            have = self._nb.get(p)
            if have is None or len(prefix) > len(have):
                self._nb[p] = prefix
            if full:
                self._nb_full.add(p)
