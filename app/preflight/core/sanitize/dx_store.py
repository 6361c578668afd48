"""What d_X keeps on disk per embedding: the neighbour table, the calibration and the
annoy index of the approximate research flag.

Everything is named by the token space's ``key`` (the sha256 of its source file), under
``models_dir()/derived/dx/<key>`` (installed beside the models, shared by every user) or
``cache_dir()/dx/<key>`` (built on first use). Writes are atomic
(:mod:`preflight.core.fsutil`): a reader sees the old file or the new one.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from pathlib import Path
from typing import Callable

import numpy as np

from preflight.core import paths
from preflight.core.errors import ConfigError
from preflight.core.fsutil import atomic_write_bytes, atomic_write_text
from preflight.core.ports import Progress, TokenSpace
from preflight.core.sanitize.dx_geometry import Geometry

log = logging.getLogger(__name__)

TABLE_K = 64      # neighbour-table depth: covers the rank step's draws in the calibrated range
ANNOY_TREES = 50  # the annoy index of the approximate research flag (default search_k)


def _space_cache(space: TokenSpace) -> Path:
    return paths.cache_dir() / "dx" / space.key


def _table_name(space: TokenSpace) -> str:
    # The candidate set is part of the name: a changed vocabulary filter must never reuse
    # a table whose rows refer to other tokens.
    cand = hashlib.sha256(np.asarray(space.candidate_ids, dtype=np.int64).tobytes())
    return f"neighbours_k{TABLE_K}_{cand.hexdigest()[:12]}.npz"


def installed_table_path(space: TokenSpace) -> Path:
    """Where `preflight models install` puts the table, beside the models (shipped in the
    installer's bundle, shared by every user and test run)."""
    return paths.models_dir() / "derived" / "dx" / space.key / _table_name(space)


def cached_table_path(space: TokenSpace) -> Path:
    """The per-user cache copy, built on first use when the install has none."""
    return _space_cache(space) / _table_name(space)


def load_table(space: TokenSpace, geom: Geometry) -> bool:
    """Give ``geom`` the stored table (installed first, then cached); False if none."""
    for f in (installed_table_path(space), cached_table_path(space)):
        if not f.is_file():
            continue
        try:
            with np.load(f, allow_pickle=False) as z:
                geom.set_table(z["table"], z["table_len"])
            return True
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unreadable neighbour table %s: %s", f, exc)
    return False


def build_table(space: TokenSpace, geom: Geometry, progress: Progress | None = None,
                cancel=None, dest: Path | None = None) -> Path:
    """Build (once) and store the first-K neighbour lists of the whole vocabulary, so
    preparing a document needs no neighbour search (~a minute on 2 cores).

    ``dest`` defaults to the per-user cache; the model installer passes
    :func:`installed_table_path`."""
    f = dest or cached_table_path(space)
    if f.is_file() and (geom.table is not None or load_table(space, geom)):
        return f
    if dest is None and installed_table_path(space).is_file() and geom.table is not None:
        return installed_table_path(space)
    table, tlen = geom.build_table(TABLE_K, progress=progress, cancel=cancel)
    dtype = np.uint16 if geom.C < 2 ** 16 else np.int32
    buf = io.BytesIO()
    np.savez(buf, table=table.astype(dtype), table_len=tlen.astype(np.int32))
    atomic_write_bytes(f, buf.getvalue())
    geom.set_table(table.astype(dtype), tlen)
    return f


def load_calibration(space: TokenSpace, compute: Callable[[], dict] | None) -> dict:
    """The calibrated (rank constant, ε range) of a space: shipped in resources/dx/ for
    the default embedding, else ``compute()`` once and cached under cache_dir()."""
    shipped = paths.resource_path("dx", f"{space.key}.json")
    cached = _space_cache(space) / "calibration.json"
    for f in (shipped, cached):
        if f.is_file():
            try:
                return json.loads(f.read_text("utf-8"))
            except (OSError, ValueError):
                log.warning("ignoring unreadable calibration %s", f)
    if compute is None:
        raise ConfigError(
            f"No d_X calibration for the embedding {space.name}.",
            "Run `python -m preflight_eval.calibrate_dx` to compute it.",
        )
    log.info("calibrating d_X for %s (first use)", space.name)
    result = compute()
    atomic_write_text(cached, json.dumps(result, indent=2))
    return result


def annoy_index(space: TokenSpace, geom: Geometry):
    """Annoy index over the candidate embeddings (built once, cached on disk)."""
    from annoy import AnnoyIndex

    f = _space_cache(space) / f"annoy_{ANNOY_TREES}.ann"
    idx = AnnoyIndex(geom.n, "euclidean")
    if f.is_file():
        idx.load(str(f))
        return idx
    for j in range(geom.C):
        idx.add_item(j, geom.phi[j])
    idx.set_seed(0)
    idx.build(ANNOY_TREES, n_jobs=1)   # one job: deterministic, and the threaded build can hang
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f".{f.name}.tmp")   # annoy writes only to a path: rename it into place
    idx.save(str(tmp))
    tmp.replace(f)
    idx.unload()
    idx = AnnoyIndex(geom.n, "euclidean")
    idx.load(str(f))
    return idx
