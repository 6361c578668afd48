"""return_freed_memory: glibc's heap is trimmed after a big model is dropped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from preflight.runtime.heap import return_freed_memory

_CHILD = r"""
import ctypes, sys
sys.path[:0] = {path!r}
from preflight.runtime.heap import return_freed_memory

def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
big = libc.malloc(16 << 20)          # a big buffer freed: glibc raises its
libc.free(big)                       # mmap threshold to 32 MiB from here on
blocks = sorted(libc.malloc(2 << 20) for _ in range(101))   # now served from the heap
for b in blocks:
    ctypes.memset(b, 1, 2 << 20)
for b in blocks[:-1]:                # the highest block pins the heap top, so plain
    libc.free(b)                     # free() cannot give the 200 MB back
before = rss_mb()
assert return_freed_memory()
print(before - rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_freed_heap_memory_goes_back_to_the_os():
    code = _CHILD.format(path=sys.path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert float(out) > 150                # of the 200 MB freed into the heap


def test_is_a_no_op_without_glibc(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert return_freed_memory() is False
