"""Exporting the audit log with its chain, and reading an export back to verify it.

Formats (by the file's suffix):

- ``.jsonl`` — the auditor's format: a first line ``{"preflight_audit_export": 1,
  "log_id", "head": {"seq", "hash"}, "omitted": [...]}``, then one JSON object per record
  with its values (typed) and ``chain``: the list of its events (``seq``, ``at``,
  ``kind``, ``fields`` — column → SHA-256 of the canonical value —, ``prev``, ``hash``).
  docs/DEPLOYMENT.md gives a standard-library script that verifies it without Preflight.
- ``.csv`` — one row per record, the same columns and a ``chain`` column (its events as
  JSON text); cells are read back by column type (REAL, INTEGER, text).
- ``.json`` — a list of the records, each with its ``chain`` (as before schema 4, plus
  the chain).

The payload is exported as UTF-8 text (it is JSON); ``doc_minhash`` and ``pid`` are left
out (they stay chained; an export's check skips them).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from preflight.core.errors import InputError
from preflight.core.fsutil import NotARegularFile, atomic_write_bytes, open_regular
from preflight.core.send.audit_chain import (
    INTEGER_COLUMNS, REAL_COLUMNS, ChainEvent, VerifyReport, canonical_value, verify_chain,
)
from preflight.core.send.audit_seal import limits

if TYPE_CHECKING:
    from preflight.core.send.audit import AuditLog

FORMATS = (".csv", ".jsonl", ".json")
OMITTED = ("doc_minhash", "pid")
EXPORT_VERSION = 1


def exportable(row: dict[str, Any]) -> dict[str, Any]:
    """A record as exported: payload as text, JSON columns parsed, internals left out."""
    out = {k: v for k, v in row.items() if k not in OMITTED}
    payload = out.get("payload")
    if isinstance(payload, (bytes, bytearray)):
        text = canonical_value("payload", payload)
        out["payload"] = text if isinstance(text, str) else json.dumps(text)
    for key in ("overrides", "requests"):
        if isinstance(out.get(key), str):
            try:
                out[key] = json.loads(out[key])
            except ValueError:
                pass
    return out


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"Cannot export the audit log as '{suffix or path.name}'.",
                         "Give a file name ending in .csv, .jsonl or .json.")
    return suffix


def export_log(log: "AuditLog", path: Path | str, *, overwrite: bool = False) -> int:
    """Write every record and its chain events to ``path``; returns the record count.

    ``path`` must not exist unless ``overwrite`` (the window's save dialog asked); it is
    never a link, FIFO or device. A new file is created exclusively (0600: it holds the
    payloads), a replaced one atomically.
    """
    path = Path(path)
    suffix = _check_suffix(path)
    by_record: dict[int, list[dict[str, Any]]] = {}
    for ev in log.events():
        by_record.setdefault(ev.record_id, []).append(ev.to_json())
    seq, digest = log.head()
    rows = [{**exportable(r), "chain": by_record.get(r["id"], [])} for r in log.records()]
    out = io.StringIO(newline="")
    if suffix == ".json":
        json.dump(rows, out, ensure_ascii=False, indent=2)
    elif suffix == ".jsonl":
        header = {"preflight_audit_export": EXPORT_VERSION, "log_id": log.log_id,
                  "head": {"seq": seq, "hash": digest}, "omitted": list(OMITTED)}
        for obj in (header, *rows):
            out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    else:
        _write_csv(out, rows)
    data = out.getvalue().encode("utf-8")
    try:
        if overwrite:
            atomic_write_bytes(path, data, mode=0o600)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_new(path, data)
    except NotARegularFile as exc:
        raise InputError(f"Cannot export to {path}: {exc.strerror}.", exc.hint) from None
    except FileExistsError:
        raise InputError(f"{path} already exists; Preflight does not overwrite it.",
                         "Give a new file name, or replace it on purpose (`preflight "
                         "history --export FILE --force`).", fix="export-exists") from None
    except OSError as exc:
        raise InputError(f"Cannot write {path} ({exc.strerror or exc}).",
                         "Choose a folder you may write to.") from None
    return len(rows)


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) and write ``data``; a half-written file is
    removed."""
    with open_regular(path, "xb") as fh:
        try:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        except BaseException:
            path.unlink(missing_ok=True)
            raise


def _write_csv(fh: Any, rows: list[dict[str, Any]]) -> None:
    from preflight.core.send.audit import _COLUMNS

    names = [c for c in _COLUMNS if c not in OMITTED] + ["chain"]
    writer = csv.DictWriter(fh, fieldnames=names)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (json.dumps(v, ensure_ascii=False)
                             if isinstance(v, (list, dict)) else v)
                         for k, v in row.items()})


def verify_export(path: Path | str) -> VerifyReport:
    """Check an export file (any of :data:`FORMATS`) against the chain it carries."""
    path = Path(path)
    suffix = _check_suffix(path)
    head: tuple[int, str] | None = None
    try:
        # an input the auditor names: a link is fine, a FIFO or device is refused at once
        with open_regular(path, "r", follow_symlinks=True, encoding="utf-8",
                          newline="") as fh:
            if suffix == ".csv":
                rows = [_typed(r) for r in csv.DictReader(fh)]
            elif suffix == ".json":
                rows = json.load(fh)
            else:
                lines = [json.loads(line) for line in fh if line.strip()]
                if lines and "preflight_audit_export" in lines[0]:
                    h = lines.pop(0)["head"]
                    head = (int(h["seq"]), str(h["hash"]))
                rows = lines
        events = sorted((ChainEvent.from_json(e) for r in rows for e in r["chain"]),
                        key=lambda e: e.seq)
    except NotARegularFile as exc:
        raise InputError(f"Cannot verify {path}: {exc.strerror}.",
                         "Give the path of the exported file.") from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InputError(f"{path} is not a readable Preflight audit export ({exc}).",
                         "Export it again with `preflight history --export FILE`.",
                         fix="export-again") from None
    columns = [c for c in (rows[0] if rows else {}) if c != "chain"]
    report = verify_chain(events, rows, columns=columns, expected_head=head)
    return replace(report, seal="export", cannot_detect=limits("export"))


def _typed(cell_row: dict[str, str]) -> dict[str, Any]:
    """A CSV row with each cell read back as its column's type."""
    out: dict[str, Any] = {}
    for key, cell in cell_row.items():
        if key == "chain":
            out[key] = json.loads(cell) if cell else []
        elif cell == "":
            out[key] = None
        elif key in INTEGER_COLUMNS:
            out[key] = int(cell)
        elif key in REAL_COLUMNS:
            out[key] = float(cell)
        else:
            out[key] = cell
    return out
