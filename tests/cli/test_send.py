"""`preflight send`, `providers`, `history` in-process against a loopback capture server.
The detector is a fake (the real one runs in tests/integration); the placeholder
operator, vault and stream restorer are the real ones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import FakeDetector, MemoryKeyring, fake_mechanisms  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402

from preflight.app.services import Services  # noqa: E402
from preflight.cli import main as cli  # noqa: E402
from preflight.cli.commands import send as send_cmd  # noqa: E402
from preflight.core.config import load_settings, settings_path  # noqa: E402

DOC = ("Alice Martin (alice.martin@corp.example) asked Bob Stone to review the Q3 budget "
       "before Friday. Alice Martin will present it to the board.")


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: _detector())
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def _detector(warnings: tuple[str, ...] = ()) -> FakeDetector:
    det = FakeDetector()
    det.warnings = list(warnings)      # the Detector port's warnings
    return det


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text(DOC, encoding="utf-8")
    return path


def add_provider(url: str, *extra: str) -> None:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["providers", "add", "loop", "--base-url", url, "--model", "m-1",
                         "--price-in", "3", "--price-out", "15", *extra]) == 0


class ScriptedTerminal:
    answers: list[bool] = []
    asked: list[str] = []

    def __init__(self, stdin_is_document: bool) -> None:
        pass

    available = True

    def ask(self, question: str) -> bool:
        ScriptedTerminal.asked.append(question)
        return ScriptedTerminal.answers.pop(0)

    def secret(self, prompt: str) -> str:
        return "sk-typed-in-session-000000"

    def close(self) -> None:
        pass


class NoTerminal(ScriptedTerminal):
    available = False


def test_providers_add_list_remove(server, capsys):
    add_provider(server.url, "--key-env", "LOOP_KEY")
    settings = load_settings()
    (p,) = settings.providers
    assert (p.name, p.model, p.key_env, p.price_input_per_mtok) == ("loop", "m-1", "LOOP_KEY", 3)
    assert settings.default_provider == "loop"
    capsys.readouterr()
    assert cli.main(["providers", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["providers"][0]["key"] == "none (local server)"
    assert cli.main(["providers", "remove", "loop"]) == 0
    assert load_settings().providers == []
    assert cli.main(["providers", "remove", "loop"]) == 2


def test_providers_add_rejects_bad_url_and_key_in_place_of_env(capsys):
    assert cli.main(["providers", "add", "x", "--base-url", "nonsense", "--model", "m"]) == 2
    assert "invalid base URL" in capsys.readouterr().err
    assert cli.main(["providers", "add", "x", "--base-url", "https://a.test/v1", "--model", "m",
                     "--key-env", "sk-abc.def"]) == 2


def test_set_key_goes_to_keyring_only(monkeypatch, fakes, capsys):
    assert cli.main(["providers", "add", "acme", "--base-url", "https://api.acme.test/v1",
                     "--model", "m"]) == 0
    monkeypatch.setattr(sys, "stdin", _Pipe("sk-acme-0123456789abcdef\n"))
    assert cli.main(["providers", "set-key", "acme"]) == 0
    assert fakes.store[("preflight", "acme @ https://api.acme.test:443")] == \
        "sk-acme-0123456789abcdef"
    assert "sk-acme" not in settings_path().read_text()
    capsys.readouterr()
    cli.main(["providers", "list"])
    out = capsys.readouterr().out
    assert "key: keyring" in out and "sk-acme" not in out


def test_set_key_without_keyring_explains(capsys):
    keyring.set_keyring(fail.Keyring())
    cli.main(["providers", "add", "acme", "--base-url", "https://api.acme.test/v1",
              "--model", "m"])
    assert cli.main(["providers", "set-key", "acme"]) == 2
    err = capsys.readouterr().err
    assert "No OS keyring" in err and "--key-env" in err


def test_send_yes_json_restores_answer_and_audits(server, doc, capsys):
    add_provider(server.url)
    server.script(Reply(deltas=["<PERS", "ON_1> will", " present."]))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                     "--no-learn"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sent"] is True
    assert out["result"]["answer"] == "Alice Martin will present."
    assert out["result"]["answer_raw"] == "<PERSON_1> will present."
    body = server.requests[0].body
    assert out["plan"]["payload"].encode() == body
    for value in ("Alice Martin", "alice.martin@corp.example", "Bob Stone"):
        assert value.encode() not in body
    capsys.readouterr()
    assert cli.main(["history", "--json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)["records"]
    assert rec["status"] == "done" and rec["payload"].encode() == body
    # storing originals is off by default: the log keeps the answer as it came back,
    # never the restored one with the real names
    assert rec["answer_restored"] is None
    assert rec["answer_raw"] == "<PERSON_1> will present."


def test_send_text_mode_streams_answer_to_stdout(server, doc, capsys):
    add_provider(server.url)
    server.script(Reply(deltas=["<PERSON_2>", " agrees."]))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "Bob Stone agrees."
    assert "Exact request body" not in captured.out   # --yes: no plan, just the answer
    assert "audit record 1" in captured.err
    assert captured.err.index("--- answer from") < captured.err.index("audit record 1")


def test_send_shows_the_detectors_warnings(server, doc, capsys, monkeypatch):
    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: _detector(
        ("The NER model is missing. Names are not detected until it is restored.",)))
    add_provider(server.url)
    server.script(Reply(deltas=["ok"]))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn",
                     "--accept-degraded-detection"]) == 0
    assert "warning: The NER model is missing" in capsys.readouterr().err


def test_no_terminal_and_no_yes_refuses_and_sends_nothing(server, doc, capsys, monkeypatch):
    add_provider(server.url)
    monkeypatch.setattr(send_cmd, "_Terminal", NoTerminal)
    assert cli.main(["send", str(doc), "--method", "placeholder"]) == 2
    captured = capsys.readouterr()
    assert "Exact request body" in captured.out and "Cost:" in captured.out
    assert "no terminal to confirm on" in captured.err
    assert server.requests == []


def test_terminal_confirmation_yes_and_no(server, doc, monkeypatch, capsys):
    add_provider(server.url)
    monkeypatch.setattr(send_cmd, "_Terminal", ScriptedTerminal)
    ScriptedTerminal.answers = [False]
    assert cli.main(["send", str(doc), "--method", "placeholder", "--no-learn"]) == 2
    assert "not confirmed" in capsys.readouterr().err and server.requests == []
    ScriptedTerminal.answers = [True]
    assert cli.main(["send", str(doc), "--method", "placeholder", "--no-learn"]) == 0
    assert len(server.requests) == 1


def test_residual_pii_is_asked_item_by_item(server, doc, monkeypatch, capsys):
    add_provider(server.url)
    monkeypatch.setattr(send_cmd, "_Terminal", ScriptedTerminal)
    # fake-identity leaves everything: 3 blocking items (2 names, 1 email), then "send?"
    ScriptedTerminal.asked = []
    ScriptedTerminal.answers = [True, False, True, True]
    assert cli.main(["send", str(doc), "--policy", "fake-identity", "--no-learn"]) == 2
    assert sum("as it is?" in q for q in ScriptedTerminal.asked) == 3
    assert "1 identifier" in capsys.readouterr().err and server.requests == []


def test_yes_needs_allow_for_each_blocking_item(server, doc, capsys):

    add_provider(server.url)
    assert cli.main(["send", str(doc), "--policy", "fake-identity", "--yes", "--json"]) == 2
    err = capsys.readouterr().err
    assert "3 identifier" in err and server.requests == []
    assert cli.main(["send", str(doc), "--policy", "fake-identity", "--yes",
                     "--allow", "nope"]) == 2
    from preflight.core.send.session import finding_id

    ids = [finding_id("PERSON", "Alice Martin"), finding_id("PERSON", "Bob Stone"),
           finding_id("EMAIL_ADDRESS", "alice.martin@corp.example")]
    args = ["send", str(doc), "--policy", "fake-identity", "--yes", "--no-learn"]
    for i in ids:
        args += ["--allow", i]
    assert cli.main(args) == 0 and len(server.requests) == 1


def test_resend_needs_allow_resend_only_when_it_adds_epsilon(server, doc, capsys,
                                                           monkeypatch):
    from dataclasses import replace

    from preflight.core.types import DxReport

    add_provider(server.url)
    base = ["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]
    assert cli.main(base) == 0
    assert cli.main(base) == 0              # no d_X: adds ε 0, nothing to acknowledge
    real = Services.sanitize

    def noisy(self, *a, **kw):              # the same payload, said to carry d_X at ε 12
        out, vault = real(self, *a, **kw)
        return replace(out, report=replace(out.report, dx=DxReport(12.0))), vault

    monkeypatch.setattr(Services, "sanitize", noisy)
    capsys.readouterr()
    assert cli.main(base) == 2
    err = capsys.readouterr().err
    assert "already sent 2 time" in err and "adds ε 12" in err
    assert "this send adds 12 → 12 in total" in err           # the ledger, before it
    assert cli.main(base + ["--allow-resend"]) == 0
    assert len(server.requests) == 3


def test_provider_error_is_one_line_with_hint(server, doc, capsys):
    add_provider(server.url)
    server.script(Reply(status=404, body=b'{"error": {"message": "model m-1 not found"}}'))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 4
    err = capsys.readouterr().err
    assert "HTTP 404" in err and "Traceback" not in err and "base URL" in err
    assert "answer from" not in err          # no empty answer heading above the error


def test_question_task_flags(server, doc, capsys):
    add_provider(server.url)
    assert cli.main(["send", str(doc), "--method", "placeholder", "--task", "question",
                     "--yes"]) == 2
    assert "--question" in capsys.readouterr().err
    assert cli.main(["send", str(doc), "--method", "placeholder", "--task", "question",
                     "--question", "When is the review?", "--yes", "--no-learn"]) == 0
    assert b"When is the review?" in server.requests[0].body


def test_question_and_instruction_leave_sanitized(server, doc, capsys):
    """`send --question/--instruction`: a name typed there goes out as the document's
    placeholder (the same vault)."""
    add_provider(server.url)
    assert cli.main(["send", str(doc), "--policy", "identifiers", "--task", "question",
                     "--question", "What did Bob Stone ask Alice Martin?",
                     "--instruction", "Answer for Carol Diaz", "--yes", "--no-learn"]) == 0
    body = json.loads(server.requests[0].body)["messages"][1]["content"]
    typed = body.split("Document:")[0]
    doc_part = body.split("Document:")[1]
    for name in ("Bob Stone", "Alice Martin", "Carol Diaz"):
        assert name not in body
    bob = doc_part[doc_part.index("asked ") + 6:].split(" ")[0]
    assert bob.startswith("<PERSON_") and f"What did {bob} ask" in typed
    assert "Additional instruction: Answer for <PERSON_" in typed


def test_history_export(server, doc, tmp_path, capsys):
    add_provider(server.url)
    cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"])
    out = tmp_path / "h.csv"
    assert cli.main(["history", "--export", str(out)]) == 0
    assert "placeholder" in out.read_text()
    assert cli.main(["history", "--export", str(tmp_path / "h.txt")]) == 2
    capsys.readouterr()
    assert cli.main(["history"]) == 0
    assert "done" in capsys.readouterr().out


class _Pipe:
    def __init__(self, text: str) -> None:
        self._text = text

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        return self._text


def test_crash_report_never_holds_a_key(monkeypatch, capsys):
    from preflight.cli.commands import providers as providers_cmd
    from preflight.core import paths

    def boom(args):
        raise RuntimeError("upstream said: invalid key sk-live-abcdefghijklmnop0123")

    monkeypatch.setattr(providers_cmd, "_list", boom)
    assert cli.main(["providers", "list"]) == 70
    log = (paths.cache_dir() / "crash.log").read_text()
    assert "RuntimeError" in log and "sk-live-abcdefghijklmnop0123" not in log


def test_remember_allow_sends_and_adds_the_value_to_the_allow_list(server, doc, capsys):
    from preflight.core.send.session import finding_id

    add_provider(server.url)
    bob = finding_id("PERSON", "Bob Stone")
    args = ["send", str(doc), "--policy", "fake-identity", "--yes", "--no-learn",
            "--allow", finding_id("PERSON", "Alice Martin"),
            "--allow", finding_id("EMAIL_ADDRESS", "alice.martin@corp.example")]
    assert cli.main(args + ["--remember-allow", bob]) == 0 and len(server.requests) == 1
    assert load_settings().detection.allow_list == ["Bob Stone"]
    err = capsys.readouterr().err
    assert "'Bob Stone' is on the detection allow-list" in err and "settings.json" in err
    # --allow alone never remembers anything.
    assert cli.main(args + ["--allow", bob, "--allow-resend"]) == 0
    assert load_settings().detection.allow_list == ["Bob Stone"]


def test_remember_allow_refuses_a_secret(server, tmp_path, capsys):
    from preflight.core.send.session import finding_id

    key = "sk-Zq8Rt5Yw2Xc9Vb6Nm3Lk"
    path = tmp_path / "k.txt"
    path.write_text(f"The billing key is {key}.")
    add_provider(server.url)
    assert cli.main(["send", str(path), "--policy", "fake-identity", "--yes",
                     "--remember-allow", finding_id("API_KEY", key)]) == 2
    assert "never added to the allow-list" in capsys.readouterr().err
    assert load_settings().detection.allow_list == [] and server.requests == []


INVENTED = ["<PERSON_2> approved $55,000", " on 3 January 2025 with Carol Diaz."]


def test_send_json_lists_what_the_answer_states_that_the_document_does_not(server, doc,
                                                                           capsys):
    """Issue 48: an answer with a date, an amount and a name the document does not hold;
    `send --json` reports all three under ``answer_check``."""
    add_provider(server.url)
    server.script(Reply(deltas=INVENTED))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                     "--no-learn"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"]["answer"].startswith("Bob Stone approved")
    check = out["answer_check"]
    flagged = {(f["kind"], f["text"]) for f in check["facts"] if not f["supported"]}
    assert flagged == {("amount", "$55,000"), ("date", "3 January 2025"),
                       ("name", "Carol Diaz")}
    assert check["unsupported"] == 3
    assert check["summary"] == "not in your document: $55,000, 3 January 2025, Carol Diaz"
    assert not any(f["from_noise"] for f in check["facts"])


def test_send_prints_the_check_after_the_answer(server, doc, capsys):
    add_provider(server.url)
    server.script(Reply(deltas=INVENTED))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "Bob Stone approved $55,000 on 3 January 2025 with Carol Diaz."
    assert ("preflight: check: not in your document: $55,000, 3 January 2025, Carol Diaz\n"
            in err)
    assert err.index("preflight: check:") < err.index("audit record")
    # a faithful answer: no check line
    server.script(Reply(deltas=["<PERSON_1> will present the Q3 budget to the board."]))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn",
                     "--allow-resend"]) == 0
    assert "preflight: check:" not in capsys.readouterr().err


def test_send_names_a_fact_that_came_from_the_text_sent(server, doc, capsys):
    """A stand-in the answer repeats is in the payload, not in the document: said so."""
    add_provider(server.url)
    server.script(Reply(deltas=["Carol Diaz will present it."]))
    assert cli.main(["send", str(doc), "--policy", "fake-surrogate", "--yes",
                     "--no-learn"]) == 0
    err = capsys.readouterr().err
    assert ("preflight: check: not in your document: Carol Diaz; Carol Diaz came from the "
            "changed text that was sent, not from your document") in err


def test_keep_local_checks_the_local_answer_too(doc, capsys, monkeypatch):
    class InventingSLM:
        def run(self, task, text, on_token=None, cancel=None):
            return "Alice Martin asked Carol Diaz for $55,000."

    monkeypatch.setattr(Services, "slm", lambda self: InventingSLM())
    assert cli.main(["send", str(doc), "--keep-local", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [f["text"] for f in out["answer_check"]["facts"] if not f["supported"]] == [
        "Carol Diaz", "$55,000"]
    assert cli.main(["send", str(doc), "--keep-local"]) == 0
    err = capsys.readouterr().err
    assert "preflight: check: not in your document: Carol Diaz, $55,000" in err
