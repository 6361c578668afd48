"""The build helpers in installer/: icons, Debian dependency derivation, strace parsing.

Fast: they run on tiny inputs and never build a bundle.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
import sys
from pathlib import Path

from _models import unavailable
from _sandbox import non_local_connects

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def _load(relpath: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_icons_from_one_svg(tmp_path):
    make_icons = _load("installer/make_icons.py", "pf_make_icons")
    svg = tmp_path / "app.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 20 10">'
                   '<rect width="20" height="10" fill="#c00"/></svg>')
    assert make_icons.main(["--svg", str(svg), "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"

    for size in make_icons.LINUX_SIZES:
        data = (out / f"hicolor/{size}x{size}/apps/preflight.png").read_bytes()
        assert data.startswith(PNG)
        assert struct.unpack(">II", data[16:24]) == (size, size)

    ico = (out / "preflight.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind, count) == (0, 1, len(make_icons.ICO_SIZES))
    for i, size in enumerate(make_icons.ICO_SIZES):
        w, h, _, _, _, _, length, offset = struct.unpack("<BBBBHHII", ico[6 + 16 * i:22 + 16 * i])
        assert (w or 256) == size and (h or 256) == size
        assert ico[offset:offset + 8] == PNG and offset + length <= len(ico)

    icns = (out / "preflight.icns").read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    pos, kinds = 8, []
    while pos < len(icns):
        kinds.append(icns[pos:pos + 4])
        assert icns[pos + 8:pos + 16] == PNG
        pos += struct.unpack(">I", icns[pos + 4:pos + 8])[0]
    assert pos == len(icns) and b"ic10" in kinds  # 1024 px for Retina


def test_app_svg_is_found_in_resources():
    make_icons = _load("installer/make_icons.py", "pf_make_icons")
    assert make_icons.find_app_svg().suffix == ".svg"


def test_depends_come_from_the_elf_files(tmp_path):
    import zlib

    if not (shutil.which("objdump") and shutil.which("dpkg")):
        unavailable("needs objdump and dpkg (a Debian system: apt-get install binutils)")
    if not getattr(zlib, "__file__", None):
        unavailable("zlib is built into this Python (no extension module to inspect)")
    build_deb = _load("installer/linux/build_deb.py", "pf_build_deb")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    # The zlib extension module of this Python needs libz.so.1 from the system.
    shutil.copy(zlib.__file__, bundle / Path(zlib.__file__).name)
    depends, report = build_deb.compute_depends(bundle)
    assert "libz.so.1" in report["system_libraries"]
    assert "zlib1g" in depends.split(", ")
    assert re.search(r"libc6 \(>= 2\.\d+\)", depends), depends

    # Once the bundle carries libz itself, the package no longer depends on it.
    shutil.copy(report["system_libraries"]["libz.so.1"], bundle / "libz.so.1")
    depends, report = build_deb.compute_depends(bundle)
    assert "libz.so.1" not in report["system_libraries"]
    assert "zlib1g" not in depends


def test_strace_parser_flags_only_non_loopback():
    log = "\n".join([
        '12 connect(3, {sa_family=AF_INET, sin_port=htons(443), '
        'sin_addr=inet_addr("93.184.216.34")}, 16) = -1 ENETUNREACH',
        '12 connect(3, {sa_family=AF_INET, sin_port=htons(8080), '
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '12 connect(4, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2606:4700::1", &sin6_addr), sin6_scope_id=0}, 28) = -1',
        '12 connect(4, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = -1',
        '12 connect(5, {sa_family=AF_UNIX, sun_path="/run/user/0/bus"}, 110) = 0',
        '12 connect(6, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("10.255.255.53")}, 16) = -1 ENETUNREACH',
    ])
    assert non_local_connects(log) == ["93.184.216.34:443", "10.255.255.53:53",
                                       "[2606:4700::1]:443"]


def test_desktop_entry_runs_the_window():
    desktop = ROOT / "installer" / "linux" / "preflight.desktop"
    text = desktop.read_text(encoding="utf-8")
    assert re.search(r"^Exec=/usr/bin/preflight gui %f$", text, re.M)
    assert re.search(r"^Icon=preflight$", text, re.M)  # = the hicolor icons' name
    if shutil.which("desktop-file-validate"):
        import subprocess

        res = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True,
                             text=True)
        assert res.returncode == 0 and not res.stdout.strip(), res.stdout + res.stderr
