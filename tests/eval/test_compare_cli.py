"""compare_cli: the same commands on two revisions, per command identical or a diff."""

from __future__ import annotations

import subprocess
from pathlib import Path

from _models import require_model
from preflight_eval import compare_cli

ROOT = Path(__file__).resolve().parents[2]

#: A stand-in ``preflight`` entry: prints its arguments, where it lives, its home's
#: contents and a duration, so a revision's folder, a leftover home or a clock would show.
MAIN = '''\
import os, sys, time
def main():
    cmd = sys.argv[1]
    print({greeting!r}, cmd, open(sys.argv[2]).read().split()[0] if cmd == "detect" else "")
    print("from", __file__)
    print('{{"seconds": %r}}' % time.perf_counter())
    print("home holds", sorted(os.listdir(os.environ["PREFLIGHT_HOME"])))
    open(os.path.join(os.environ["PREFLIGHT_HOME"], "settings.toml"), "w").write("x")
    return 3 if cmd == "send" else 0
'''


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


def _commit(repo: Path, detect_greeting: str) -> None:
    main = repo / "app" / "preflight" / "cli" / "main.py"
    main.write_text(MAIN.format(greeting=detect_greeting), encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", detect_greeting)


def _tiny_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "app" / "preflight" / "cli").mkdir(parents=True)
    (repo / "app" / "preflight" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "app" / "preflight" / "cli" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "resources" / "samples").mkdir(parents=True)
    (repo / "resources" / "samples" / "hr-offer-email.txt").write_text(
        "Dear Ms Okafor, your offer is attached.\n", encoding="utf-8")
    (repo / "models").mkdir()
    (repo / "models" / "manifest.toml").write_text("[models]\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _commit(repo, "hello")
    _commit(repo, "good morning")
    return repo


def test_same_revision_twice_is_identical_everywhere(tmp_path: Path) -> None:
    repo = _tiny_repo(tmp_path)
    lines: list[str] = []
    results = compare_cli.compare(repo, "HEAD", "HEAD", ["detect", "info", "send-no-provider"],
                                  echo=lines.append)
    # the tree's own folder is neutralised and every command starts with an empty home
    assert results == {"detect": True, "info": True, "send-no-provider": True}
    assert lines[-1] == "3 of 3 commands identical"
    # a command that fails the same way on both sides is identical, and says it failed
    assert {line.split()[0]: line.split()[1:] for line in lines[1:4]} == {
        "detect": ["identical"], "info": ["identical"],
        "send-no-provider": ["identical", "(a", "step", "ended", "with", "exit", "3)"]}


def test_a_changed_output_is_reported_with_its_diff(tmp_path: Path) -> None:
    repo = _tiny_repo(tmp_path)
    lines: list[str] = []
    results = compare_cli.compare(repo, "HEAD~1", "HEAD", ["detect", "info"],
                                  echo=lines.append)
    assert results == {"detect": False, "info": False}
    text = "\n".join(lines)
    assert "-hello detect Dear" in text
    assert "+good morning detect Dear" in text
    assert compare_cli.main(["--repo", str(repo), "--base", "HEAD~1", "--head", "HEAD",
                             "--only", "detect"]) == 1


def test_the_working_tree_is_the_default_head(tmp_path: Path) -> None:
    repo = _tiny_repo(tmp_path)
    main = repo / "app" / "preflight" / "cli" / "main.py"
    main.write_text(main.read_text(encoding="utf-8").replace("good morning", "good evening"),
                    encoding="utf-8")     # not committed
    lines: list[str] = []
    results = compare_cli.compare(repo, "HEAD", None, ["detect"], echo=lines.append)
    assert results == {"detect": False}
    assert any("+good evening detect Dear" in line for line in lines)


def test_the_real_cli_gives_the_same_sanitized_sample_twice() -> None:
    require_model("ner")
    lines: list[str] = []
    results = compare_cli.compare(ROOT, "HEAD", "HEAD", ["sanitize-method-pseudonym"],
                                  echo=lines.append)
    assert results == {"sanitize-method-pseudonym": True}, "\n".join(lines)
    assert lines[1].split() == ["sanitize-method-pseudonym", "identical"]   # and exit 0
