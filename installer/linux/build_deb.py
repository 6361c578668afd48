"""Wrap the one-folder bundle (dist/preflight) into a Debian package.

    python installer/linux/build_deb.py [--bundle dist/preflight] [--out dist]
                                        [--compression zstd|xz|gzip]

Package layout:
    /opt/preflight/...                             the bundle (executable + _internal/)
    /usr/bin/preflight -> /opt/preflight/preflight
    /usr/share/applications/preflight.desktop      runs `preflight gui`
    /usr/share/icons/hicolor/{N}x{N},scalable/apps/preflight.{png,svg}
    /usr/share/doc/preflight/{copyright,README.Debian,changelog.Debian.gz}

Depends: is computed from the bundle itself, like dpkg-shlibdeps: every shared library an
ELF file of the bundle needs and the bundle does not carry is looked up with ldconfig and
`dpkg -S`; libc6 and libstdc++6 get the minimum versions the symbol references demand.
The maintainer scripts (installer/linux/debian/) never touch users' files or keyrings.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# GLIBCXX_3.4.N -> first GCC (and Debian libstdc++6 version) that provides it.
GLIBCXX_TO_GCC = {30: "12", 29: "11", 28: "10", 26: "9", 25: "8", 24: "7", 22: "6", 21: "5"}
# Needed by Qt's xcb platform plugin at run time although no ELF file names them all
# (dlopened or pulled in only by some plugins): the list in setup.sh, as packages.
RUNTIME_ALTERNATIVES = {"libglib2.0-0": "libglib2.0-0 | libglib2.0-0t64"}


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_requirements(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """(NEEDED sonames, {soname: version names referenced}) of one ELF file."""
    out = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True).stdout
    needed = set(re.findall(r"^\s+NEEDED\s+(\S+)", out, re.M))
    versions: dict[str, set[str]] = {}
    current = None
    in_refs = False
    for line in out.splitlines():
        if line.startswith("Version References:"):
            in_refs = True
            continue
        if in_refs:
            m = re.match(r"\s+required from (\S+):", line)
            if m:
                current = m.group(1)
                versions.setdefault(current, set())
            elif current and line.strip():
                versions[current].add(line.split()[-1])
            elif not line.strip():
                in_refs = False
    return needed, versions


def _ldconfig_map() -> dict[str, str]:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"\s+(\S+) \(([^)]*)\) => (\S+)", line)
        if m and ("x86-64" in m.group(2) or "64bit" in m.group(2) or "aarch64" in m.group(2)):
            found.setdefault(m.group(1), m.group(3))
    return found


def _owner_package(lib_path: str) -> str | None:
    candidates = [lib_path, os.path.realpath(lib_path)]
    # merged /usr: dpkg knows the path the package shipped (/lib/... or /usr/lib/...).
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for p in candidates:
        res = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if res.returncode == 0 and res.stdout:
            return res.stdout.split(":", 1)[0].strip()
    return None


def _max_version(names: set[str], prefix: str) -> tuple[int, ...] | None:
    best = None
    for n in names:
        if n.startswith(prefix):
            try:
                v = tuple(int(x) for x in n[len(prefix):].split("."))
            except ValueError:
                continue
            best = v if best is None or v > best else best
    return best


def _files_named(bundle: Path, soname: str) -> list[str]:
    return [str(p.relative_to(bundle)) for p in bundle.rglob(soname)
            if p.is_file() and not p.is_symlink()]


def compute_depends(bundle: Path) -> tuple[str, dict]:
    """The Depends: field for ``bundle`` and a report of how it was derived."""
    carried = {p.name for p in bundle.rglob("*") if p.is_file() or p.is_symlink()}
    needed_from_system: dict[str, set[str]] = {}
    version_refs: dict[str, set[str]] = {}
    users_in_bundle: dict[str, set[str]] = {}  # carried soname -> files that need it
    for path in bundle.rglob("*"):
        if path.is_symlink() or not path.is_file() or not is_elf(path):
            continue
        rel = str(path.relative_to(bundle))
        needed, versions = elf_requirements(path)
        for soname in needed - carried:
            needed_from_system.setdefault(soname, set()).add(rel)
        for soname in needed & carried:
            users_in_bundle.setdefault(soname, set()).add(rel)
        for soname, names in versions.items():
            version_refs.setdefault(soname, set()).update(names)
    # Files loaded only on demand by Qt: its plugins, and libraries only they need (e.g.
    # libQt6WaylandClient for the Wayland plugin). Qt skips a plugin it cannot load.
    on_demand = {rel for users in needed_from_system.values() for rel in users
                 if "/plugins/" in rel}
    on_demand |= {rel for users in users_in_bundle.values() for rel in users
                  if "/plugins/" in rel}
    changed = True
    while changed:
        changed = False
        for soname, users in users_in_bundle.items():
            if users <= on_demand:
                for rel in _files_named(bundle, soname):
                    if rel not in on_demand:
                        on_demand.add(rel)
                        changed = True
    ldmap = _ldconfig_map()
    packages: dict[str, str] = {}
    unresolved = []
    for soname in sorted(needed_from_system):
        lib = ldmap.get(soname)
        pkg = _owner_package(lib) if lib else None
        if pkg is None:
            unresolved.append(soname)
            continue
        pkg = pkg.split(":")[0]
        packages.setdefault(pkg, soname)
    # Qt loads its plugins on demand and skips one whose libraries are missing (the GTK
    # theme plugin on a machine without GTK): those needs are optional, not dependencies.
    optional = [s for s in unresolved if needed_from_system[s] <= on_demand]
    unresolved = [s for s in unresolved if s not in optional]
    if unresolved:
        users = {s: sorted(needed_from_system[s])[:3] for s in unresolved}
        raise SystemExit(
            "These libraries are needed by the bundle but are neither in it nor installed "
            f"from a Debian package here: {users}. Install them (setup.sh lists the Qt ones) "
            "and rebuild."
        )
    depends = []
    glibc = _max_version(set().union(*version_refs.values()) if version_refs else set(),
                         "GLIBC_")
    glibcxx = _max_version(version_refs.get("libstdc++.so.6", set()), "GLIBCXX_")
    for pkg in sorted(packages):
        if pkg == "libc6" and glibc:
            depends.append(f"libc6 (>= {'.'.join(map(str, glibc))})")
        elif pkg == "libstdc++6" and glibcxx and glibcxx[:2] == (3, 4):
            gcc = GLIBCXX_TO_GCC.get(glibcxx[2]) if len(glibcxx) > 2 else None
            depends.append(f"libstdc++6 (>= {gcc})" if gcc else pkg)
        else:
            depends.append(RUNTIME_ALTERNATIVES.get(pkg, pkg))
    report = {"system_libraries": {s: packages_for for s, packages_for in
                                   ((s, ldmap.get(s)) for s in sorted(needed_from_system))},
              "optional_plugin_libraries": {s: sorted(needed_from_system[s])
                                            for s in optional},
              "glibc": ".".join(map(str, glibc or ())),
              "glibcxx": ".".join(map(str, glibcxx or ()))}
    return ", ".join(depends), report


def _render_control(version: str, arch: str, installed_kib: int, depends: str) -> str:
    text = (HERE / "debian" / "control.in").read_text(encoding="utf-8")
    for key, value in {"VERSION": version, "ARCH": arch, "INSTALLED_SIZE": str(installed_kib),
                       "DEPENDS": depends}.items():
        text = text.replace(f"@{key}@", value)
    return text


def _copy_tree(src: Path, dest: Path) -> None:
    """Hard-link when possible (the bundle is ~2 GB), copy otherwise."""
    try:
        subprocess.run(["cp", "-al", str(src), str(dest)], check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        shutil.copytree(src, dest, symlinks=True)


def _normalize_modes(tree: Path) -> None:
    """0755 for folders and executables, 0644 for everything else; nothing group/world-writable."""
    for path in [tree, *tree.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        if path.is_dir() or mode & 0o111:
            path.chmod(0o755)
        else:
            path.chmod(0o644)


def build(bundle: Path, out: Path, icons: Path, compression: str) -> dict:
    started = time.perf_counter()
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"]
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                          text=True, check=True).stdout.strip()
    if not (bundle / "preflight").is_file():
        raise SystemExit(f"no bundle at {bundle}: build it first (installer/build_linux.sh)")
    stage = ROOT / "build" / "deb" / f"preflight_{version}_{arch}"
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "opt").mkdir(parents=True)
    _copy_tree(bundle, stage / "opt" / "preflight")

    usr = stage / "usr"
    (usr / "bin").mkdir(parents=True)
    os.symlink("/opt/preflight/preflight", usr / "bin" / "preflight")
    apps = usr / "share" / "applications"
    apps.mkdir(parents=True)
    shutil.copyfile(HERE / "preflight.desktop", apps / "preflight.desktop")
    if not (icons / "hicolor").is_dir():
        raise SystemExit(f"no icons in {icons}: run installer/make_icons.py first")
    shutil.copytree(icons / "hicolor", usr / "share" / "icons" / "hicolor")
    doc = usr / "share" / "doc" / "preflight"
    doc.mkdir(parents=True)
    shutil.copyfile(HERE / "debian" / "copyright", doc / "copyright")
    shutil.copyfile(HERE / "debian" / "README.Debian", doc / "README.Debian")
    changelog = (f"preflight ({version}) unstable; urgency=medium\n\n"
                 f"  * Release {version}.\n\n"
                 " -- Preflight maintainers <preflight@localhost>  "
                 f"{time.strftime('%a, %d %b %Y %H:%M:%S +0000', time.gmtime())}\n")
    with gzip.GzipFile(doc / "changelog.Debian.gz", "wb", compresslevel=9, mtime=0) as fh:
        fh.write(changelog.encode())
    _normalize_modes(stage)

    depends, dep_report = compute_depends(stage / "opt" / "preflight")
    installed_kib = sum(
        (p.lstat().st_size + 1023) // 1024 for p in stage.rglob("*") if not p.is_dir()
    )
    meta = stage / "DEBIAN"
    meta.mkdir()
    (meta / "control").write_text(_render_control(version, arch, installed_kib, depends),
                                  encoding="utf-8")
    for script in ("postinst", "prerm", "postrm"):
        shutil.copyfile(HERE / "debian" / script, meta / script)
        (meta / script).chmod(0o755)
    with (meta / "md5sums").open("w", encoding="utf-8") as fh:
        for p in sorted(stage.rglob("*")):
            if p.is_file() and not p.is_symlink() and meta not in p.parents:
                digest = hashlib.md5(p.read_bytes(), usedforsecurity=False).hexdigest()
                fh.write(f"{digest}  {p.relative_to(stage).as_posix()}\n")

    out.mkdir(parents=True, exist_ok=True)
    deb = out / f"preflight_{version}_{arch}.deb"
    cmd = ["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(stage), str(deb)]
    if compression == "zstd":
        cmd[3:3] = ["-z", "9"]  # a good ratio at a few seconds per 100 MB, multi-threaded
    env = dict(os.environ, SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "0"))
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    result = {
        "deb": str(deb),
        "version": version,
        "deb_bytes": deb.stat().st_size,
        "installed_kib": installed_kib,
        "depends": depends,
        "depends_derivation": dep_report,
        "compression": compression,
        "seconds": round(time.perf_counter() - started, 1),
    }
    shutil.rmtree(stage)  # hard links: the bundle in dist/ is untouched
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Preflight .deb from the bundle.")
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "preflight")
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--icons", type=Path, default=ROOT / "build" / "icons")
    parser.add_argument("--compression", choices=("zstd", "xz", "gzip"), default="zstd")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    for tool in ("dpkg-deb", "objdump", "ldconfig"):
        if shutil.which(tool) is None and not Path("/sbin", tool).exists():
            raise SystemExit(f"{tool} is missing: install dpkg and binutils (apt-get install "
                             "dpkg binutils)")
    result = build(args.bundle.resolve(), args.out.resolve(), args.icons.resolve(),
                   args.compression)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "depends_derivation"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
