"""The data set's size and what it cost: rows, documents per kind, split, settings, CPU
and wall hours (summed over the rows' own ``cpu_seconds`` / ``seconds``), and the rows
each features file holds.

    python -m preflight_eval.utility_data.stats            # cloud_qwen15
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path
from typing import Any

from preflight_eval.utility_data.corpus import DATA_DIR
from preflight_eval.utility_data.shards import read_rows


def summary(data_dir: Path, cloud: str) -> dict[str, Any]:
    rows = read_rows(data_dir / f"{cloud}.jsonl.gz")
    docs = {r["doc_id"]: r.get("doc_kind", "") for r in rows}
    out: dict[str, Any] = {
        "rows": len(rows), "documents": len(docs),
        "documents_by_kind": dict(collections.Counter(docs.values())),
        "rows_by_split": dict(collections.Counter(r["split"] for r in rows)),
        "rows_by_setting": dict(collections.Counter(r["setting"]["kind"] for r in rows)),
        "cpu_hours": round(sum(float(r.get("cpu_seconds") or 0) for r in rows) / 3600, 2),
        "wall_hours": round(sum(float(r.get("seconds") or 0) for r in rows) / 3600, 2),
        "features": {},
    }
    for path in sorted(data_dir.glob(f"features-{cloud}-*.jsonl.gz")):
        feats = read_rows(path)
        out["features"][path.name] = {"rows": len(feats),
                                      "documents": len({r["doc_id"] for r in feats})}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--cloud-role", default="cloud_qwen15")
    args = ap.parse_args(argv)
    s = summary(Path(args.data), args.cloud_role)
    print(f"{s['rows']} rows over {s['documents']} documents "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(s['documents_by_kind'].items()))}); "
          f"{s['cpu_hours']:.1f} CPU hours, {s['wall_hours']:.1f} h wall")
    print("split: " + ", ".join(f"{k} {v}" for k, v in sorted(s["rows_by_split"].items())))
    print("settings: " + ", ".join(f"{k} {v}" for k, v in sorted(s["rows_by_setting"].items())))
    for name, f in s["features"].items():
        print(f"{name}: {f['rows']} rows over {f['documents']} documents")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
