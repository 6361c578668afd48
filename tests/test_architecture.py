"""Dependencies point one way: faces (qt, cli) -> app -> runtime -> core.

Checked twice: by import-linter's contracts in pyproject.toml (run as `lint-imports`), and
independently by scanning every import statement — module level or inside a function —
of each layer, so even a lazy ``from preflight.runtime... import`` inside a core function
fails here.
"""

from __future__ import annotations

import ast
import re
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


# --- docs/ARCHITECTURE.md names only what exists ------------------------------------------

DOC = ROOT / "docs" / "ARCHITECTURE.md"
SOURCE_DIRS = ("app", "eval", "tests", "installer")
#: `file.py`, `dir/file.py`, `file.py::Name`
_PY_REF = re.compile(r"(?<![\w/.])((?:[\w.-]+/)*\w+\.py)(?:::(\w+))?")
#: `preflight.x.y`, `preflight_eval.x`, or a layer-relative `core.x.y` / `runtime.x` / `app.x`
_DOTTED = re.compile(r"(?<![\w./])((?:preflight_eval|preflight|core|runtime|app|qt|cli)"
                     r"(?:\.\w+)+)")
#: a class named in backticks: `SendSession`, `Ports`
_CLASS = re.compile(r"`([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z][a-z]{2,})`")
#: a class's member: `Services.policy`, `DxPrepared.at(ε)`, `UtilityAssessor.fast / refine`
_MEMBER = re.compile(r"(?<![\w.])([A-Z]\w+)\.([a-z_]\w*)")
#: names of other projects the page mentions in backticks
_EXTERNAL = {"None", "PySide6", "IndexFlatL2"}


def _source_files() -> list[Path]:
    return [p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py")
            if "__pycache__" not in p.parts]


def _defined(path: Path) -> set[str]:
    """Top-level names of a module, and the names defined in its classes."""
    return _names_in(ast.parse(path.read_text(encoding="utf-8")))


def _names_in(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def _class_members(files: list[Path]) -> dict[str, set[str]]:
    """Every class of ``files``: the names defined in it (methods, attributes, self.x)."""
    members: dict[str, set[str]] = {}
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                members.setdefault(node.name, set()).update(_names_in(node))
    return members


def _resolve_dotted(dotted: str) -> str | None:
    """None if `dotted` names a module (or a name in one); else what is missing."""
    parts = dotted.split(".")
    if parts[0] in ("core", "runtime", "app", "qt", "cli"):
        parts = ["preflight", *parts]
    base = ROOT / ("eval" if parts[0] == "preflight_eval" else "app")
    for cut in range(len(parts), 0, -1):
        stem = base.joinpath(*parts[:cut])
        module = stem.with_suffix(".py") if stem.with_suffix(".py").exists() else (
            stem / "__init__.py")
        if module.exists():
            rest = parts[cut:]
            if rest and rest[0] not in _defined(module):
                return f"{dotted}: {module.relative_to(ROOT)} defines no {rest[0]}"
            return None
    return f"{dotted}: no such module"


def architecture_doc_problems(text: str) -> list[str]:
    """Every module path, dotted module and backticked class the text names must exist."""
    files = _source_files()
    rel = ["/" + p.relative_to(ROOT).as_posix() for p in files]
    problems = []
    for ref, name in set(_PY_REF.findall(text)):
        hits = [f for f, r in zip(files, rel) if r.endswith("/" + ref)]
        if not hits:
            problems.append(f"{ref}: no such file")
        elif name and not any(name in _defined(f) for f in hits):
            problems.append(f"{ref}::{name}: not defined there")
    problems += [p for d in sorted(set(_DOTTED.findall(text))) if (p := _resolve_dotted(d))]
    product = [f for f in files if f.parts[len(ROOT.parts)] != "tests"]
    defined = set().union(*(_defined(f) for f in product))
    problems += [f"`{c}`: no such class or name in app/ or eval/"
                 for c in sorted(set(_CLASS.findall(text)) - _EXTERNAL) if c not in defined]
    members = _class_members(product)
    problems += [f"{cls}.{attr}: {cls} has no {attr}"
                 for cls, attr in sorted(set(_MEMBER.findall(text)))
                 if cls in members and attr not in members[cls]]
    return sorted(problems)


def test_architecture_doc_names_only_what_exists() -> None:
    problems = architecture_doc_problems(DOC.read_text(encoding="utf-8"))
    assert not problems, "docs/ARCHITECTURE.md names what the code lacks:\n" + "\n".join(
        problems)


def test_architecture_doc_check_sees_a_missing_module_and_name() -> None:
    text = ("`core/sanitize/policy.py` (`Policy`), `runtime/hf_space.py`, "
            "`core/send/session.py::SendSession`, `core/send/session.py::Doorway`, "
            "`preflight.core.org_policy.load_org_policy`, `preflight.core.word_space`, "
            "`WindowDoorway`, `FakeBackend`, `Services.policy`, `Services.release_all()`")
    assert architecture_doc_problems(text) == [
        "Services.release_all: Services has no release_all",
        "`FakeBackend`: no such class or name in app/ or eval/",
        "core/send/session.py::Doorway: not defined there",
        "preflight.core.word_space: app/preflight/core/__init__.py defines no word_space",
        "runtime/hf_space.py: no such file",
    ]


MAX_LINES = 400


def _long_modules_without_reason(package: Path) -> list[str]:
    """Modules over MAX_LINES lines whose docstring gives no "Size (~N lines): why"."""
    out = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not re.search(r"^Size \(~\d+ lines\): \S", doc, re.MULTILINE):
            out.append(str(path.relative_to(package.parent)))
    return out


def test_every_long_module_says_why() -> None:
    """No module of the product over 400 lines without a written reason at its top."""
    assert _long_modules_without_reason(ROOT / "app" / "preflight") == []


def test_the_size_check_sees_a_long_module(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "x = 1\n" * (MAX_LINES + 1)
    (pkg / "long.py").write_text('"""A module."""\n' + body)
    (pkg / "said.py").write_text('"""A module.\n\nSize (~400 lines): one table."""\n' + body)
    (pkg / "short.py").write_text('"""A module."""\nx = 1\n')
    assert _long_modules_without_reason(pkg) == ["pkg/long.py"]
