"""No CLI flag reaches the window: every error raised below the faces whose words name a
flag (``--allow``, ``--epsilon``…) says in ``fix`` how the window words it instead, and
those words (``presentation.FIX_WORDS``) name none; a few errors the window can meet are
checked through :func:`~preflight.app.presentation.error_text` end to end."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from preflight.app.presentation import FIX_WORDS, error_text
from preflight.core.errors import PreflightError

APP = Path(__file__).resolve().parents[2] / "app" / "preflight"
FLAG = re.compile(r"(?<![\w-])--[a-z]")
#: Modules whose errors only the CLI can meet (the reason is the exemption).
CLI_ONLY = {
    "core/sanitize/vault_file.py": "vault files are written and read by `sanitize`/`restore` "
                                   "only; the window keeps its vault in memory",
}
_ERRORS = re.compile(r"(Error|SendBlocked|Cancelled|OverContext)$")


def _strings(node: ast.AST, consts: dict[str, str]) -> list[str]:
    """The literal text an expression can evaluate to (pieces of f-strings included)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in consts:
        return [consts[node.id]]
    if isinstance(node, ast.Attribute) and node.attr == "format":
        return []
    out: list[str] = []
    for child in ast.iter_child_nodes(node):
        out += _strings(child, consts)
    return out


def _raised_with_flags() -> list[tuple[str, int, str | None]]:
    """(module, line, fix) of each error constructed with a flag in its words."""
    found = []
    for path in sorted(APP.glob("*/**/*.py")):
        rel = path.relative_to(APP).as_posix()
        if rel.split("/")[0] not in ("core", "runtime", "app") or rel in CLI_ONLY:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        consts = {t.id: v.value for n in tree.body if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Name)
                  for v in [n.value] if isinstance(v, ast.Constant) and isinstance(v.value, str)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", "")
            if not _ERRORS.search(name):
                continue
            words = [s for a in node.args for s in _strings(a, consts)]
            words += [s for k in node.keywords if k.arg in ("message", "hint")
                      for s in _strings(k.value, consts)]
            if any(FLAG.search(w) for w in words):
                fix = next((k.value.value for k in node.keywords if k.arg == "fix"
                            and isinstance(k.value, ast.Constant)), None)
                if fix is None:       # a conditional fix: every branch must be worded
                    fixes = [k.value for k in node.keywords if k.arg == "fix"]
                    fix = "|".join(s for f in fixes for s in _strings(f, {})) or None
                found.append((rel, node.lineno, fix))
    return found


def test_the_scan_finds_the_errors_that_name_flags():
    # the scan itself works: it sees the send plan's confirmation errors
    assert any(rel == "core/send/plan.py" for rel, _, _ in _raised_with_flags())


def test_every_error_naming_a_flag_has_window_words():
    missing = [f"{rel}:{line}" for rel, line, fix in _raised_with_flags()
               if not fix or any("window" not in FIX_WORDS.get(f, {}) for f in fix.split("|"))]
    assert not missing, f"errors naming a CLI flag with no window words: {missing}"


def test_the_window_words_name_no_flag_nor_command():
    for key, words in FIX_WORDS.items():
        window = words.get("window", "")
        assert not FLAG.search(window) and "preflight " not in window, (key, window)


def _blocked(**kw):
    from preflight.core.send.plan import check_confirmation

    class Plan:
        degraded_detection = None
        blocking = kw.get("blocking", ())

    with pytest.raises(PreflightError) as info:
        check_confirmation(Plan(), kw.get("confirmation"))
    return info.value


def _finding(part: str):
    from preflight.core.send.plan import Finding
    from preflight.core.types import Category

    return Finding("f1", "EMAIL_ADDRESS", Category.DIRECT_IDENTIFIER, "a@b.example", part,
                   0, 11, 1.0, True, "an e-mail address", "leak")


@pytest.mark.parametrize("part", ["document", "instruction"])
def test_a_blocked_send_reads_without_flags_in_the_window(part):
    from preflight.core.send.plan import Confirmation

    err = _blocked(blocking=(_finding(part),), confirmation=Confirmation(confirmed=True))
    window = " ".join(error_text(err, "window"))
    cli = " ".join(error_text(err, "cli"))
    assert not FLAG.search(window), window
    assert "--allow ID" in cli
    if part == "instruction":
        assert "'a@b.example'" in window


def test_an_unconfirmed_send_and_a_missing_epsilon_read_without_flags():
    from preflight.core.send.plan import Confirmation

    err = _blocked(confirmation=Confirmation(confirmed=False))
    assert not FLAG.search(" ".join(error_text(err, "window")))
    assert "--yes" in " ".join(error_text(err, "cli"))


def test_a_detector_without_its_model_warns_in_words_both_faces_can_show(tmp_path):
    from preflight.core.pii.detector import PiiDetector

    det = PiiDetector(nlp_model_path=tmp_path / "gone")
    det.detect("Jane Doe wrote to jane@example.com.")
    assert det.warnings and not any(FLAG.search(w) for w in det.warnings), det.warnings
