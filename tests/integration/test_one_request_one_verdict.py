"""A question that names a person the document also names sends neither copy: `preflight
send` with the installed NER model, the default policy and the document's placeholder
memory, against the loopback capture server.

The document writes the name in lower case (a line pasted from a chat) and the surname
alone; the model finds neither there, but finds the name in the question. Before the
request was protected as a whole, the question's copy became ``<PERSON_1>`` while the
document's copies left verbatim and the re-scan let them pass.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _loopback import Reply

pytestmark = pytest.mark.slow

MINUTES = ("Minutes of the procurement board, 12 May.\n\n"
           "The framework contract was reviewed by karin lindqvist before the vote. "
           "Lindqvist asked for a two-week delay, which the board granted. The supplier "
           "will deliver the first batch in June.\n")


def run_cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "preflight", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_question_and_document_copies_of_a_name_both_stay_home(capture, cli_env, tmp_path):
    doc = tmp_path / "minutes.txt"
    doc.write_text(MINUTES, encoding="utf-8")
    proc = run_cli(["providers", "add", "cap", "--base-url", capture.url, "--model", "m"],
                   cli_env)
    assert proc.returncode == 0, proc.stderr
    capture.script(Reply(deltas=["<PERSON_1> asked for a delay."]))
    proc = run_cli(["send", str(doc), "--task", "question", "--question",
                    "What did Karin Lindqvist ask the board for?", "--provider", "cap",
                    "--yes", "--no-learn", "--json"], cli_env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (request,) = capture.requests
    wire = (request.all_bytes.decode("utf-8")
            + json.dumps(json.loads(request.body), ensure_ascii=False)).casefold()
    assert "lindqvist" not in wire and "karin" not in wire
    assert out["plan"]["blocking"] == []
    assert "Karin Lindqvist" in out["result"]["answer"]      # restored from one token

    # a later summary of the same file: the memory of the earlier request protects the
    # name although neither the document nor the task reveals it to the detector now
    capture.script(Reply(deltas=["Minutes."]))
    proc = run_cli(["send", str(doc), "--provider", "cap", "--yes", "--allow-resend",
                    "--no-learn", "--json"], cli_env)
    assert proc.returncode == 0, proc.stderr
    assert len(capture.requests) == 2
    assert "lindqvist" not in capture.requests[1].all_bytes.decode("utf-8").casefold()
