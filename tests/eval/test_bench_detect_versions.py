"""bench_detect_versions.extract: an earlier commit's package, renamed so it imports beside
this checkout's and never reaches into it."""

from __future__ import annotations

import importlib
import sys


def test_an_earlier_commit_imports_as_its_own_package(tmp_path):
    from preflight_eval.bench_detect_versions import extract

    app = extract("HEAD", tmp_path)
    sources = list((app / "preflight_old").rglob("*.py"))
    assert len(sources) > 50
    stray = [p for p in sources if "from preflight." in p.read_text(encoding="utf-8")
             or "import preflight." in p.read_text(encoding="utf-8")]
    assert not stray, stray[:3]
    assert (tmp_path / "resources").is_dir() and (tmp_path / "models").is_symlink()
    sys.path.insert(0, str(app))
    try:
        paths = importlib.import_module("preflight_old.core.paths")
        base = importlib.import_module("preflight_old.core.pii.recognizers.base")
        assert paths.install_root() == tmp_path        # its resources, not this checkout's
        assert base.__file__.startswith(str(app))
        assert base.make_result.__module__ == "preflight_old.core.pii.recognizers.base"
    finally:
        sys.path.remove(str(app))
        for name in [m for m in sys.modules if m.split(".")[0] == "preflight_old"]:
            del sys.modules[name]
