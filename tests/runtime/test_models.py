"""Manifest parsing, tree hashing, verification cache, status and user overrides
(no network, no pip: installs are in test_models_install.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from preflight.core import paths
from preflight.core.config import Settings, load_settings, settings_path
from preflight.core.errors import ConfigError, ModelUnavailableError
from preflight.runtime import models as M


def ref_tree_sha(root: Path) -> str:
    """Independent statement of the documented tree digest (used to check the code)."""
    files = []
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name != "desktop.ini":
                files.append(Path(dirpath, name).relative_to(root).as_posix())
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0")
        h.update((root / rel).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_manifest(file_sha: str, dir_sha: str) -> M.Manifest:
    return M.parse_manifest({
        "schema_version": 1,
        "models": {
            "slm": {"name": "Tiny LM", "kind": "file", "file": "slm/tiny.gguf",
                    "sha256": file_sha, "licence": "MIT"},
            "similarity": {"name": "Tiny encoder", "kind": "dir", "file": "sim/tiny",
                           "sha256": dir_sha, "licence": "Apache-2.0"},
            "extra": {"name": "Optional", "kind": "file", "file": "x/opt.bin",
                      "sha256": "0" * 64, "optional": True},
        },
    })


@pytest.fixture
def installed(tmp_path):
    """A models folder with a valid file model and a valid folder model."""
    models = tmp_path / "models"
    (models / "slm").mkdir(parents=True)
    blob = os.urandom(50_000)
    (models / "slm" / "tiny.gguf").write_bytes(blob)
    d = models / "sim" / "tiny"
    (d / "sub").mkdir(parents=True)
    (d / "config.json").write_text('{"a": 1}')
    (d / "sub" / "weights.bin").write_bytes(os.urandom(10_000))
    (d / "desktop.ini").write_text("[.ShellClassInfo]")
    manifest = make_manifest(sha(blob), ref_tree_sha(d))
    return manifest, models


# ----------------------------------------------------------------- manifest


def test_real_manifest_lists_the_pinned_roles():
    manifest = M.load_manifest()
    assert manifest.roles() == ["slm", "dx_space", "similarity", "ner", "cloud_standin",
                                "cloud_qwen15", "slm_qwen05"]
    defaults = [m.role for m in manifest.models if not m.optional]
    assert defaults == ["slm", "dx_space", "similarity", "ner", "slm_qwen05"]
    # every assessor SLM the settings may name is installed by default
    from preflight.core.config import ASSESSOR_SLMS
    assert set(ASSESSOR_SLMS) <= set(defaults)
    # the d_X space has its own role, on the SmolLM2 file (see test_assessor_slm.py)
    assert manifest.get("dx_space").sha256 == manifest.get("slm").sha256
    assert "answer only" in manifest.get("slm_qwen05").system_prompt
    assert manifest.get("slm").system_prompt == ""
    mpnet = manifest.get("similarity")
    assert mpnet.kind == "dir" and mpnet.split_zip == "input/all-mpnet-base-v2.zip"
    assert len(mpnet.packages) == 5
    assert len(manifest.get("cloud_standin").concat) == 4
    assert manifest.get("ner").member.endswith("/")


@pytest.mark.parametrize(
    "patch, why",
    [
        ({"sha256": "abc"}, "malformed sha256"),
        ({"file": "../outside.bin"}, "inside models/"),
        ({"kind": "blob"}, "kind"),
        ({"source": {"packages": ["p==1"], "member": "a", "concat": ["b"]}}, "exactly one"),
        ({"source": {"packages": ["p==1"]}}, "exactly one"),
    ],
)
def test_bad_manifest_entries_are_refused(patch, why):
    entry = {"name": "x", "kind": "file", "file": "x.bin", "sha256": "a" * 64}
    entry.update(patch)
    with pytest.raises(ModelUnavailableError) as err:
        M.parse_manifest({"models": {"slm": entry}})
    assert why in err.value.message
    assert "manifest.toml" in err.value.hint


def test_manifest_missing_field_and_missing_file(tmp_path):
    with pytest.raises(ModelUnavailableError, match="lacks 'sha256'"):
        M.parse_manifest({"models": {"slm": {"name": "x", "kind": "file", "file": "x"}}})
    with pytest.raises(ModelUnavailableError, match="missing"):
        M.load_manifest(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("models = [")
    with pytest.raises(ModelUnavailableError, match="unusable"):
        M.load_manifest(bad)


def test_unknown_role_names_the_known_ones(installed):
    manifest, models = installed
    manager = M.ModelManager(manifest, models, Settings())
    with pytest.raises(ConfigError) as err:
        manager.path("llm")
    assert "slm, similarity, extra" in err.value.hint


# ----------------------------------------------------------------- hashing


def test_tree_sha_matches_reference_and_ignores_desktop_ini(tmp_path):
    d = tmp_path / "m"
    (d / "b").mkdir(parents=True)
    (d / "a.txt").write_bytes(b"hello")
    (d / "b" / "c.bin").write_bytes(b"\x00\x01" * 1000)
    before = M.tree_sha256(d)
    assert before == ref_tree_sha(d)
    (d / "desktop.ini").write_text("junk")
    (d / "b" / "desktop.ini").write_text("junk")
    assert M.tree_sha256(d) == before


def test_tree_sha_depends_on_names_and_boundaries(tmp_path):
    def digest(files: dict[str, bytes]) -> str:
        root = tmp_path / sha(repr(sorted(files.items())).encode())[:8]
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        return M.tree_sha256(root)

    base = digest({"a": b"12", "b": b"34"})
    assert digest({"a": b"1", "b": b"234"}) != base        # same bytes, other boundary
    assert digest({"a": b"12", "c": b"34"}) != base        # renamed file
    assert digest({"a": b"12", "b": b"34", "d": b""}) != base  # an extra empty file


def test_file_sha_is_plain_digest(tmp_path):
    f = tmp_path / "x.bin"
    data = os.urandom(3 * M.CHUNK + 17)
    f.write_bytes(data)
    assert M.file_sha256(f) == sha(data)
    assert M.content_sha256(f) == sha(data)


REAL_DIRS = [
    ("similarity", paths.models_dir() / "similarity/all-mpnet-base-v2"),
    ("ner", paths.models_dir() / "ner/en_core_web_sm-3.8.0"),
]


@pytest.mark.slow
@pytest.mark.parametrize("role, folder", REAL_DIRS, ids=[str(p) for _, p in REAL_DIRS])
def test_tree_hash_reproduces_manifest_on_real_folders(role, folder):
    if not folder.is_dir():
        reason = f"{folder} is not installed (preflight models install)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    assert M.tree_sha256(folder) == M.load_manifest().get(role).sha256


# ----------------------------------------------------------------- status and path


def test_status_ok_missing_and_optional(installed):
    manifest, models = installed
    states = {s.role: s for s in M.ModelManager(manifest, models, Settings()).status()}
    assert states["slm"].state == "ok"
    assert states["similarity"].state == "ok"
    assert states["extra"].state == "missing" and states["extra"].optional
    assert states["slm"].path == models / "slm" / "tiny.gguf"
    assert states["slm"].licence == "MIT"


def test_missing_model_error_names_file_and_command(installed):
    manifest, models = installed
    (models / "slm" / "tiny.gguf").unlink()
    manager = M.ModelManager(manifest, models, Settings())
    with pytest.raises(ModelUnavailableError) as err:
        manager.path("slm")
    assert "tiny.gguf" in err.value.message
    assert "preflight models install --role slm" in err.value.hint
    assert "./setup.sh run" in err.value.hint


def test_corrupt_file_is_detected_even_after_a_good_check(installed):
    manifest, models = installed
    manager = M.ModelManager(manifest, models, Settings())
    target = manager.path("slm")
    assert target == models / "slm" / "tiny.gguf"
    data = bytearray(target.read_bytes())
    data[100] ^= 0xFF                                    # same size, one flipped byte
    target.write_bytes(bytes(data))
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert {s.role: s.state for s in manager.status()}["slm"] == "corrupt"
    with pytest.raises(ModelUnavailableError) as err:
        manager.path("slm")
    assert "damaged" in err.value.message
    assert "preflight models install --role slm" in err.value.hint


def test_corrupt_folder_extra_file_and_wrong_kind(installed):
    manifest, models = installed
    manager = M.ModelManager(manifest, models, Settings())
    (models / "sim" / "tiny" / "sub" / "stray.txt").write_text("x")
    assert {s.role: s.state for s in manager.status()}["similarity"] == "corrupt"
    # a folder where a file is expected
    (models / "slm" / "tiny.gguf").unlink()
    (models / "slm" / "tiny.gguf").mkdir()
    status = {s.role: s for s in manager.status()}["slm"]
    assert status.state == "corrupt" and "file" in status.detail


def test_second_load_uses_the_cache_and_any_change_rehashes(installed, monkeypatch):
    manifest, models = installed
    M.ModelManager(manifest, models, Settings()).path("slm")      # hashes and records
    cache_file = paths.cache_dir() / M.VerifiedHashCache.FILE_NAME
    assert cache_file.exists()

    calls = []
    real = M.content_sha256
    monkeypatch.setattr(M, "content_sha256", lambda p, c=None: calls.append(p) or real(p, c))
    fresh = M.ModelManager(manifest, models, Settings())        # new process: same file
    assert fresh.path("slm") == models / "slm" / "tiny.gguf"
    assert fresh.path("similarity") == models / "sim" / "tiny"
    assert calls == [models / "sim" / "tiny"]  # only the folder was never checked before

    target = models / "slm" / "tiny.gguf"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))  # touched, unchanged
    assert M.ModelManager(manifest, models, Settings()).path("slm") == target
    assert calls[-1] == target                                   # re-hashed after the change


def test_damaged_hash_cache_only_costs_a_rehash(installed):
    manifest, models = installed
    (paths.cache_dir() / M.VerifiedHashCache.FILE_NAME).write_text("{not json")
    assert M.ModelManager(manifest, models, Settings()).path("slm").exists()
    data = json.loads((paths.cache_dir() / M.VerifiedHashCache.FILE_NAME).read_text())
    assert any(k.endswith("tiny.gguf") for k in data)


# ----------------------------------------------------------------- user overrides


def test_user_override_is_used_unchecked_and_persisted(installed, tmp_path):
    manifest, models = installed
    mine = tmp_path / "my-model.gguf"
    mine.write_bytes(b"anything at all")
    manager = M.ModelManager(manifest, models)                   # real settings (tmp home)
    assert manager.use("slm", mine) == mine.resolve()
    assert load_settings().model_paths == {"slm": str(mine.resolve())}

    again = M.ModelManager(manifest, models)
    assert again.path("slm") == mine.resolve()
    status = {s.role: s for s in again.status()}["slm"]
    assert status.state == "user" and status.path == mine.resolve()

    assert again.use("slm", None) is None
    assert load_settings().model_paths == {}
    assert M.ModelManager(manifest, models).path("slm") == models / "slm" / "tiny.gguf"


def test_override_that_vanished_says_how_to_fix(installed, tmp_path):
    manifest, models = installed
    gone = tmp_path / "gone.gguf"
    manager = M.ModelManager(manifest, models, Settings(model_paths={"slm": str(gone)}))
    with pytest.raises(ModelUnavailableError) as err:
        manager.path("slm")
    assert str(gone) in err.value.message
    assert "preflight models use slm --reset" in err.value.hint
    assert {s.role: s.state for s in manager.status()}["slm"] == "missing"


def test_use_refuses_wrong_kind_and_missing_path(installed, tmp_path):
    manifest, models = installed
    manager = M.ModelManager(manifest, models, Settings())
    with pytest.raises(ConfigError, match="single file"):
        manager.use("slm", tmp_path)
    f = tmp_path / "f.bin"
    f.write_bytes(b"x")
    with pytest.raises(ConfigError, match="must be a folder"):
        manager.use("similarity", f)
    with pytest.raises(ConfigError, match="does not exist"):
        manager.use("slm", tmp_path / "nope")


def test_status_survives_a_damaged_settings_file(installed):
    manifest, models = installed
    settings_path().write_text("{broken")
    states = {s.role: s.state for s in M.ModelManager(manifest, models).status()}
    assert states["slm"] == "ok"


def test_one_hash_cache_serves_the_manager_and_the_token_spaces(installed, monkeypatch):
    """A digest the manager recorded while verifying a model is what the d_X token space
    reads for its cache key (one cache file, no second hashing)."""
    from preflight.runtime import hashing

    manifest, models = installed
    cache = M.VerifiedHashCache()
    target = M.ModelManager(manifest, models, Settings(), hash_cache=cache).path("slm")
    calls = []
    real = hashing.content_sha256
    monkeypatch.setattr(hashing, "content_sha256",
                        lambda p, c=None: calls.append(p) or real(p, c))
    assert hashing.cached_file_sha256(target) == manifest.get("slm").sha256
    assert calls == []                               # read from the manager's record
    other = models / "other.bin"
    other.write_bytes(b"abc")
    assert hashing.cached_file_sha256(other) == sha(b"abc") and calls == [other]
    assert hashing.cached_file_sha256(other) == sha(b"abc") and calls == [other]
