"""The core never imports Qt: checked by import-linter's contracts in pyproject.toml and,
independently, by scanning every import statement of the core and runtime packages."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "app" / "preflight"
FORBIDDEN = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "preflight.qt", "preflight.cli")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("layer", ["core", "runtime"])
def test_layer_never_imports_qt_or_faces(layer: str) -> None:
    offenders = []
    for path in sorted((PKG / layer).rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed in this environment")
    proc = subprocess.run(
        [exe, "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_import_does_not_load_qt() -> None:
    code = (
        "import sys, preflight.core.config, preflight.core.types, preflight.core.textio;"
        "import preflight.core.sanitize.base as b; b.mechanism_names();"
        "assert not any(m.startswith('PySide6') for m in sys.modules), 'Qt loaded'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
