"""Dependencies point one way: faces (qt, cli) -> app -> runtime -> core.

Checked twice: by import-linter's contracts in pyproject.toml (run as `lint-imports`), and
independently by scanning every import statement — module level or inside a function —
of each layer, so even a lazy ``from preflight.runtime... import`` inside a core function
fails here.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _models import unavailable

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "app" / "preflight"
QT = ("PySide6", "PyQt5", "PyQt6", "shiboken6")
FACES = ("preflight.qt", "preflight.cli")

#: What each layer must never import (anything above it, and Qt below the window).
FORBIDDEN = {
    "core": (*QT, *FACES, "preflight.app", "preflight.runtime"),
    "runtime": (*QT, *FACES, "preflight.app"),
    "app": (*QT, *FACES),
    "cli": (*QT, "preflight.qt"),
    "qt": ("preflight.cli",),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import anywhere in the file, functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append((node.lineno, node.module))
            if node.module == "preflight":     # `from preflight import runtime`
                names.extend((node.lineno, f"preflight.{a.name}") for a in node.names)
    return names


def offenders(layer: str) -> list[str]:
    found = []
    for path in sorted((PKG / layer).rglob("*.py")):
        for line, name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer]):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_below_itself(layer: str) -> None:
    found = offenders(layer)
    assert not found, "\n".join(found)


def test_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from preflight.runtime.slm import LocalSLM\n"
                   "    import preflight.qt.qt_app\n", encoding="utf-8")
    assert [n for _l, n in _imports(src)] == ["preflight.runtime.slm", "preflight.qt.qt_app"]


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        unavailable("import-linter (a dev dependency) is not installed: run ./setup.sh test")
    proc = subprocess.run(
        [exe, "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "app")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_contract_names_every_layer() -> None:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    assert layers == ["preflight.qt | preflight.cli", "preflight.app", "preflight.runtime",
                      "preflight.core"]


def test_core_import_does_not_load_qt() -> None:
    code = (
        "import sys, preflight.core.config, preflight.core.types, preflight.core.textio;"
        "import preflight.core.sanitize.base as b; b.mechanism_names();"
        "import preflight.app.services, preflight.app.window_doorway;"
        "assert not any(m.startswith('PySide6') for m in sys.modules), 'Qt loaded'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_product_package_holds_no_evaluation_code() -> None:
    """`pip install .` ships what `packages.find where=["app"]` finds: no research code
    (eval/ is installed beside it for development only), and nothing shipped imports it."""
    from setuptools import find_packages

    shipped = find_packages(str(ROOT / "app"))
    assert shipped and all(p == "preflight" or p.startswith("preflight.") for p in shipped)
    found = [f"{path.relative_to(ROOT)}:{line}"
             for path in sorted(PKG.rglob("*.py"))
             for line, name in _imports(path)
             if name == "preflight_eval" or name.startswith("preflight_eval.")]
    assert not found, "\n".join(found)
