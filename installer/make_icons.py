"""Render the app icon (an SVG in resources/icons/) for every packaging format.

    python installer/make_icons.py [--out build/icons]

Writes, from the one SVG:
    hicolor/scalable/apps/preflight.svg and hicolor/<N>x<N>/apps/preflight.png  (Linux)
    preflight.ico   (Windows: PNG-compressed entries 16..256)
    preflight.icns  (macOS: PNG entries 16..1024)
Rendering uses Qt's SVG renderer from the build environment (no Inkscape, ImageMagick or
iconutil needed), so all three formats come from the same pixels on any build machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINUX_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns element types holding PNG data, by pixel size (macOS 10.7+ reads PNG in all of them).
ICNS_TYPES = ((b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256),
              (b"ic09", 512), (b"ic10", 1024), (b"ic11", 32), (b"ic12", 64), (b"ic13", 512),
              (b"ic14", 1024))


def find_app_svg(icons_dir: Path | None = None) -> Path:
    """The app icon: resources/icons/preflight.svg, else app*.svg, else the only SVG there."""
    icons_dir = icons_dir or ROOT / "resources" / "icons"
    for name in ("preflight.svg", "app.svg", "app_icon.svg", "icon.svg"):
        if (icons_dir / name).is_file():
            return icons_dir / name
    svgs = sorted(icons_dir.glob("*.svg"))
    named = [p for p in svgs if "app" in p.stem or "preflight" in p.stem]
    if named or len(svgs) == 1:
        return (named or svgs)[0]
    raise SystemExit(f"no app icon SVG found in {icons_dir} (expected preflight.svg)")


def render_png(svg: Path, size: int) -> bytes:
    """PNG bytes of the SVG rendered into a transparent size x size square."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer
    from PySide6.QtWidgets import QApplication

    # A QApplication (not the lighter QGuiApplication): Qt allows one application object
    # per process, and a widget app running in the same process later needs the full one.
    _app = QApplication.instance() or QApplication([sys.argv[0]])  # noqa: F841
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    # Keep the aspect ratio: centre a non-square drawing in the square.
    view = renderer.viewBoxF()
    scale = size / max(view.width(), view.height(), 1e-9)
    w, h = view.width() * scale, view.height() * scale
    renderer.render(painter, QRectF((size - w) / 2, (size - h) / 2, w, h))
    painter.end()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    buf.close()
    return bytes(data)


def write_ico(pngs: dict[int, bytes], path: Path) -> None:
    """A multi-size .ico whose entries are PNG streams (Windows Vista and later)."""
    sizes = [s for s in ICO_SIZES if s in pngs]
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for s in sizes:
        blob = pngs[s]
        dim = 0 if s >= 256 else s  # 0 means 256 in the ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(blob), offset)
        offset += len(blob)
        blobs += blob
    path.write_bytes(header + entries + blobs)


def write_icns(pngs: dict[int, bytes], path: Path) -> None:
    """An .icns made of PNG elements."""
    body = b"".join(
        kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size] for kind, size in ICNS_TYPES
    )
    path.write_bytes(b"icns" + struct.pack(">I", 8 + len(body)) + body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "icons")
    parser.add_argument("--svg", type=Path, default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    svg = args.svg or find_app_svg()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    pngs = {s: render_png(svg, s) for s in sorted(set(LINUX_SIZES + ICO_SIZES + (1024,)))}
    scalable = out / "hicolor" / "scalable" / "apps"
    scalable.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(svg, scalable / "preflight.svg")
    for s in LINUX_SIZES:
        d = out / "hicolor" / f"{s}x{s}" / "apps"
        d.mkdir(parents=True, exist_ok=True)
        (d / "preflight.png").write_bytes(pngs[s])
    write_ico(pngs, out / "preflight.ico")
    write_icns(pngs, out / "preflight.icns")
    print(f"icons from {svg.relative_to(ROOT) if svg.is_relative_to(ROOT) else svg} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
