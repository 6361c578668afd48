"""What d_X keeps on disk per embedding: the neighbour tables (one per word-boundary
class of :mod:`.dx_classes`, all in one file) and the calibration.

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
from preflight.core.fsutil import (
    atomic_write_bytes, atomic_write_text, open_regular, read_regular,
)
from preflight.core.ports import Progress, TokenSpace
from preflight.core.sanitize.dx_classes import BoundaryClasses
from preflight.core.sanitize.dx_geometry import Geometry

log = logging.getLogger(__name__)

TABLE_K = 64      # neighbour-table depth: covers the rank step's draws in the calibrated range
MAX_CALIBRATION_BYTES = 1_000_000   # a few numbers; a larger file is not a calibration


def _space_cache(space: TokenSpace) -> Path:
    return paths.cache_dir() / "dx" / space.key


def _table_name(space: TokenSpace, classes: BoundaryClasses) -> str:
    # The candidate sets are part of the name: a changed vocabulary filter must never reuse
    # a table whose rows refer to other tokens. Word-boundary classes have a name of
    # their own ("wb1"), so the unrestricted whole-vocabulary table is never loaded for
    # a class (nor the reverse).
    if not classes.restricted:
        cand = hashlib.sha256(np.asarray(space.candidate_ids, dtype=np.int64).tobytes())
        return f"neighbours_k{TABLE_K}_{cand.hexdigest()[:12]}.npz"
    h = hashlib.sha256()
    for lab in classes.labels:
        h.update(lab.encode() + b"\0" + classes.members[lab].astype(np.int64).tobytes())
    return f"neighbours_wb1_k{TABLE_K}_{h.hexdigest()[:12]}.npz"


def _keys(classes: BoundaryClasses, label: str) -> tuple[str, str]:
    if not classes.restricted:
        return "table", "table_len"
    return f"class_{label}_table", f"class_{label}_table_len"


def installed_table_path(space: TokenSpace, classes: BoundaryClasses) -> Path:
    """Where `preflight models install` puts the tables (one file, one table per class),
    beside the models (shipped in the installer's bundle, shared by every user)."""
    return paths.models_dir() / "derived" / "dx" / space.key / _table_name(space, classes)


def cached_table_path(space: TokenSpace, classes: BoundaryClasses) -> Path:
    """The per-user cache copy, built on first use when the install has none."""
    return _space_cache(space) / _table_name(space, classes)


def load_tables(space: TokenSpace, classes: BoundaryClasses,
                geoms: dict[str, Geometry]) -> bool:
    """Give every class geometry its stored table (installed first, then cached)."""
    installed = installed_table_path(space, classes)
    for f in (installed, cached_table_path(space, classes)):
        if not f.is_file():
            continue
        try:
            # the per-user cache is never read through a link (the installed copy may be
            # one: the models folder can be shared); a FIFO swapped in is refused at once
            with open_regular(f, "rb", follow_symlinks=f == installed) as fh, \
                    np.load(fh, allow_pickle=False) as z:
                loaded = {lab: (z[_keys(classes, lab)[0]], z[_keys(classes, lab)[1]])
                          for lab in classes.labels}
            for lab, (table, tlen) in loaded.items():
                geoms[lab].set_table(table, tlen)
            return True
        except (OSError, ValueError, KeyError) as exc:
            log.warning("ignoring unreadable neighbour table %s: %s", f, exc)
    return False


def build_tables(space: TokenSpace, classes: BoundaryClasses, geoms: dict[str, Geometry],
                 progress: Progress | None = None, cancel=None,
                 dest: Path | None = None) -> Path:
    """Build (once) and store the first-K neighbour lists of every class, so preparing
    a document needs no neighbour search (~a minute on 2 cores).

    ``dest`` defaults to the per-user cache; the model installer passes
    :func:`installed_table_path`."""
    f = dest or cached_table_path(space, classes)
    have = all(g.table is not None for g in geoms.values())
    if f.is_file() and (have or load_tables(space, classes, geoms)):
        return f
    if dest is None and installed_table_path(space, classes).is_file() and have:
        return installed_table_path(space, classes)
    total = sum(g.C for g in geoms.values())
    arrays: dict[str, np.ndarray] = {}
    built: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    done = 0
    for lab in classes.labels:
        geom = geoms[lab]

        def part(x: float, msg: str, base: int = done, size: int = geom.C) -> None:
            if progress is not None:
                progress(min(1.0, (base + x * size) / total), msg)

        table, tlen = geom.build_table(TABLE_K, progress=part, cancel=cancel)
        dtype = np.uint16 if geom.C < 2 ** 16 else np.int32
        built[lab] = (table.astype(dtype), tlen.astype(np.int32))
        tk, lk = _keys(classes, lab)
        arrays[tk], arrays[lk] = built[lab]
        done += geom.C
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(f, buf.getvalue())
    for lab, (table, tlen) in built.items():
        geoms[lab].set_table(table, tlen)
    return f


def load_calibration(space: TokenSpace, compute: Callable[[], dict] | None) -> dict:
    """The calibrated (rank constant, ε range) of a space: shipped in resources/dx/ for
    the default embedding, else ``compute()`` once and cached under cache_dir()."""
    shipped = paths.resource_path("dx", f"{space.key}.json")
    cached = _space_cache(space) / "calibration.json"
    for f in (shipped, cached):
        if f.is_file():
            try:
                return json.loads(read_regular(f, MAX_CALIBRATION_BYTES,
                                               follow_symlinks=f == shipped))
            except (OSError, ValueError, RecursionError):
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
