"""Row files of the utility data set: one gzip member per row survives a kill mid-write."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from preflight_eval.utility_data.shards import ShardWriter, read_rows, valid_length


def test_rows_round_trip_and_file_is_plain_gzip(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl.gz"
    w = ShardWriter(path)
    for i in range(5):
        w.append({"i": i, "text": "é" * i})
    assert [r["i"] for r in read_rows(path)] == list(range(5))
    # a multi-member gzip file is one valid gzip stream for any reader
    assert gzip.decompress(path.read_bytes()).decode().count("\n") == 5


def test_torn_last_member_is_ignored_then_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl.gz"
    w = ShardWriter(path)
    w.append({"i": 0})
    w.append({"i": 1})
    good = path.stat().st_size
    member = gzip.compress(b'{"i": 2}\n')
    with path.open("ab") as fh:
        fh.write(member[: len(member) // 2])      # killed in the middle of row 2
    assert [r["i"] for r in read_rows(path)] == [0, 1]
    assert valid_length(path) == good
    w2 = ShardWriter(path)
    assert w2.repaired_bytes == len(member) // 2
    w2.append({"i": 2})
    assert [r["i"] for r in read_rows(path)] == [0, 1, 2]


_WRITER = """
import sys
from preflight_eval.utility_data.shards import ShardWriter
w = ShardWriter(sys.argv[1])
i = int(sys.argv[2])
while True:
    w.append({"i": i, "pad": "x" * 20000})
    i += 1
"""


def test_kill_minus_9_mid_write_loses_at_most_the_row_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl.gz"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    start = 0
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(start)], env=env)
        deadline = time.monotonic() + 60
        while (not path.exists() or len(read_rows(path)) < start + 3) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rows = read_rows(path)
        assert [r["i"] for r in rows] == list(range(len(rows)))   # complete, in order
        start = len(rows)
        ShardWriter(path)    # repairs a torn tail, if the kill left one
        assert valid_length(path) == path.stat().st_size
    assert len(read_rows(path)) >= 9


def test_stats_sum_the_rows_own_costs(tmp_path) -> None:  # noqa: ANN001
    from preflight_eval.utility_data.shards import ShardWriter
    from preflight_eval.utility_data.stats import main, summary

    w = ShardWriter(tmp_path / "cloud_x.jsonl.gz")
    for i, kind in enumerate(("original", "dx", "dx", "placeholder")):
        w.append({"doc_id": f"memo:{i // 2}", "doc_kind": "business", "split": "train",
                  "setting": {"kind": kind}, "cpu_seconds": 1800, "seconds": 3600})
    ShardWriter(tmp_path / "features-cloud_x-slm.jsonl.gz").append({"doc_id": "memo:0"})
    s = summary(tmp_path, "cloud_x")
    assert (s["rows"], s["documents"], s["cpu_hours"], s["wall_hours"]) == (4, 2, 2.0, 4.0)
    assert s["rows_by_setting"] == {"original": 1, "dx": 2, "placeholder": 1}
    assert s["features"] == {"features-cloud_x-slm.jsonl.gz": {"rows": 1, "documents": 1}}
    assert main(["--data", str(tmp_path), "--cloud-role", "cloud_x"]) == 0
