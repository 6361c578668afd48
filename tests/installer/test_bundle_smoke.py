"""Smoke test of the frozen one-folder bundle (dist/preflight), offline.

Needs a built bundle: `installer/build_linux.sh` (docs/INSTALLER.md). Without one every
test here is skipped, saying so — except under CI (CI=true), where .ci/run builds the
bundle before running these tests and a missing bundle, guard or tool fails them.
PREFLIGHT_BUNDLE=/path/to/preflight (the executable) tests another copy, e.g. the installed
/opt/preflight/preflight.

Every command runs from an empty folder, with PREFLIGHT_HOME in a temporary folder and
PREFLIGHT_MODELS_DIR unset (so only the bundled models can be used), inside a network
namespace with no interface when root may create one, and under strace: any connect() to
a non-loopback address fails the test, and so does a run under neither guard.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from _models import unavailable
from _sandbox import Run, can_strace, can_unshare_net, run_offline

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BUNDLE = ROOT / "dist" / "preflight" / "preflight"
SAMPLE = ("Dear Ms. Jane Miller, your account 4111 1111 1111 1111 was charged. "
          "Reply to jane.miller@example.com or call +1 212 555 0100.\n")

pytestmark = pytest.mark.slow


def bundle_executable() -> Path:
    return Path(os.environ.get("PREFLIGHT_BUNDLE") or DEFAULT_BUNDLE)


@pytest.fixture(scope="module")
def exe() -> Path:
    path = bundle_executable()
    if not path.is_file():
        unavailable(f"no built bundle at {path}: build it with installer/build_linux.sh "
                    "(or point PREFLIGHT_BUNDLE at an installed one)")
    return path


NO_GUARD = ("neither `unshare -n` (root) nor strace works on this machine, so a run cannot "
            "be shown to stay offline: apt-get install strace (or run as root)")


@pytest.fixture(scope="module")
def guarded() -> None:
    if not (can_unshare_net() or can_strace()):
        unavailable(NO_GUARD)


@pytest.fixture
def run(exe, guarded, tmp_path):
    """Run the bundled CLI offline; assert it ran isolated and tried no network connection."""
    work = tmp_path / "cwd"
    work.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFLIGHT_MODELS_DIR", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PREFLIGHT_HOME=str(tmp_path / "home"), QT_QPA_PLATFORM="offscreen",
               HOME=str(tmp_path / "user"))

    def _run(*args: str, stdin: str | None = None, extra_env: dict | None = None,
             timeout: float = 600) -> Run:
        result = run_offline([str(exe), *args], env={**env, **(extra_env or {})}, cwd=work,
                             log_dir=logs, stdin=stdin, timeout=timeout)
        assert result.isolated, "the command ran under no network guard"
        assert not result.connects, f"network connection attempted: {result.connects}"
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result

    return _run


def test_the_sandbox_catches_a_connection(guarded, tmp_path):
    """Guard the guard: a process that tries the network is caught (and cannot reach it)."""
    probe = ("import socket\ntry:\n    socket.create_connection(('192.0.2.1', 9), timeout=2)\n"
             "    print('connected')\nexcept OSError as e:\n    print('failed', e.errno)")
    result = run_offline([sys.executable, "-c", probe], env=dict(os.environ), cwd=tmp_path,
                         log_dir=tmp_path)
    assert result.isolated, "the probe ran under no network guard"
    if can_strace():
        assert result.connects == ("192.0.2.1:9",)
    if can_unshare_net():
        assert result.stdout.startswith("failed"), result.stdout


def test_version_is_the_one_in_pyproject(run):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"preflight {version}"


def test_bundle_check_loads_every_library_and_model(run):
    result = run("--bundle-check", "--json")
    report = json.loads(result.stdout)
    failed = {c["check"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert not failed, failed
    assert report["frozen"] is True


def test_info_json_reports_the_bundled_models(run, exe):
    result = run("info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    text = json.dumps(info)
    internal = str(exe.resolve().parent / "_internal")
    assert internal in text, "info should report paths inside the bundle"
    models = info.get("models")
    if models is None:
        pytest.fail(f"info has no 'models' section: {sorted(info)}")
    states = {m["role"]: m.get("status", m.get("state")) for m in models}
    for role in ("slm", "slm_qwen05", "similarity", "ner"):
        assert states.get(role) == "ok", states


def test_sanitize_with_placeholders(run):
    result = run("sanitize", "-", "--method", "placeholder", "--json", stdin=SAMPLE)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    text = out["text"] if isinstance(out, dict) and "text" in out else json.dumps(out)
    assert "jane.miller@example.com" not in text
    assert "4111 1111 1111 1111" not in text
    assert "Jane Miller" not in text


def test_detect_finds_the_pii(run):
    result = run("detect", "-", "--json", stdin=SAMPLE)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    spans = data.get("entities", data.get("spans")) if isinstance(data, dict) else data
    found = {(SAMPLE[s["start"]:s["end"]], s["type"]) for s in spans}
    assert ("jane.miller@example.com", "EMAIL_ADDRESS") in found
    # A name needs the spaCy NER model: proves the bundled model loads, not only the regexes.
    assert ("Jane Miller", "PERSON") in found, found


def _numbers_named(obj, word: str) -> list[float]:
    """Every number in a JSON tree whose key contains ``word``."""
    found = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if word in key and isinstance(value, (int, float)) and not isinstance(value, bool):
                found.append(float(value))
            found += _numbers_named(value, word)
    elif isinstance(obj, list):
        for value in obj:
            found += _numbers_named(value, word)
    return found


def test_assess_runs_the_local_models(run, exe):
    """SLM (llama.cpp), sentence embedder (torch) and the shipped regressor, frozen."""
    if not any((exe.parent / "_internal" / "resources" / "utility").glob("*")):
        unavailable("this bundle ships no utility regressor (resources/utility/ was empty "
                    "when it was built)")
    doc = ("The board of Acme Corp met on 3 March 2024 in Berlin. Jane Miller, the CFO, "
           "presented the budget for the new plant and asked for approval by the end of the "
           "month. The board approved it and asked her to report back in June.\n")
    result = run("assess", "-", "--method", "placeholder", "--json", stdin=doc)
    assert result.returncode == 0, result.stderr[-3000:]
    predicted = _numbers_named(json.loads(result.stdout), "predict")
    assert predicted and all(-1.5 <= v <= 1.5 for v in predicted), result.stdout[:2000]


# The window closes itself after this many seconds (PREFLIGHT_GUI_SMOKE, qt/qt_app.py):
# long enough for the background model loading to finish even under strace.
GUI_SECONDS = "15"


def test_gui_opens_a_document_and_quits_offscreen(run, tmp_path):
    # Opening a document makes the window detect PII in its child process ("spawn"): in a
    # frozen app that re-runs the executable, which entry.py's freeze_support() handles.
    doc = tmp_path / "letter.txt"
    doc.write_text(SAMPLE, encoding="utf-8")
    result = run("-v", "gui", str(doc), extra_env={"PREFLIGHT_GUI_SMOKE": GUI_SECONDS},
                 timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "window shown" in result.stderr


def test_gui_closed_while_models_load_exits_cleanly(run):
    # Closing the window at once, while models still load in background workers: earlier
    # builds (PySide6 6.12.0) ended here with SIGSEGV or a worker traceback, frozen only.
    result = run("gui", extra_env={"PREFLIGHT_GUI_SMOKE": "0"}, timeout=240)
    assert result.returncode == 0, f"exit code {result.returncode}\n{result.stderr[-3000:]}"


def test_gui_closed_while_llama_cpp_loads_exits_cleanly(run, tmp_path):
    # Closed at the moment the SLM starts loading in a worker (native code no cancel flag
    # reaches): the process still ends by itself, code 0 (qt/qt_app.py, _end_now). On a
    # crash, faulthandler's dump of every thread is in stderr.
    doc = tmp_path / "letter.txt"
    doc.write_text(SAMPLE, encoding="utf-8")
    result = run("gui", str(doc), extra_env={"PREFLIGHT_GUI_SMOKE": "on:loading SLM"},
                 timeout=240)
    assert result.returncode == 0, f"exit code {result.returncode}\n{result.stderr[-3000:]}"
    assert "loading SLM" in result.stderr, result.stderr[-3000:]


@pytest.fixture
def x_display():
    """A private Xvfb server, started outside the sandbox; the app reaches it through its
    socket file /tmp/.X11-unix/X<n> (no TCP)."""
    if shutil.which("Xvfb") is None:
        unavailable("Xvfb is not installed (apt-get install xvfb)")
    for n in range(87, 140):
        sock = Path(f"/tmp/.X11-unix/X{n}")
        if sock.exists() or Path(f"/tmp/.X{n}-lock").exists():
            continue
        proc = subprocess.Popen(["Xvfb", f":{n}", "-screen", "0", "1280x800x24",
                                 "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None and not sock.exists():
            time.sleep(0.1)
        if sock.exists():
            try:
                yield f":{n}"
            finally:
                proc.terminate()
                proc.wait(timeout=20)
            return
        proc.kill()
        proc.wait()
    unavailable("could not start Xvfb on any display :87 to :139")


def test_gui_starts_on_an_x_server(run, x_display):
    # The platform plugin a Linux desktop uses (xcb), against a real X server: proves the
    # bundled xcb libraries and the system ones named in the .deb's Depends are enough.
    result = run("gui", extra_env={"PREFLIGHT_GUI_SMOKE": GUI_SECONDS, "QT_QPA_PLATFORM": "xcb",
                                   "DISPLAY": x_display}, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Could not load the Qt platform plugin" not in result.stderr


def test_bad_input_is_a_message_not_a_traceback(run, tmp_path):
    result = run("sanitize", str(tmp_path / "missing.txt"), "--method", "redact")
    assert result.returncode != 0
    assert result.stderr.startswith("preflight: error:"), result.stderr
