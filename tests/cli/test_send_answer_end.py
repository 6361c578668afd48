"""`preflight send` ends an answer like the window: one stopped at the length limit is cut
back to its last full sentence with the window's note (without taking back printed text),
and the result says what was restored for the method used."""

from __future__ import annotations

import io
import json
import random

import pytest
import test_send
from _loopback import Reply, sse_event
from preflight.cli import main as cli
from preflight.cli.answer_stream import SentenceStream
from preflight.core.send.answer_text import LENGTH_NOTE, NOISE_NOTE, trim_to_sentence

# test_send's fixtures (loopback server, fake detector and keyring, the document)
server, doc, fakes = test_send.server, test_send.doc, test_send.fakes
_fake_mechanisms, add_provider = test_send._fake_mechanisms, test_send.add_provider

ANSWER = ("<PERSON_1> will present the budget. The board meets on Friday. It also wants "
          "the costs and the")


def _length_stop(text: str) -> Reply:
    """An SSE answer whose last event says it stopped on the length limit."""
    words = text.split(" ")
    events = [sse_event(w if i == 0 else " " + w, "chat") for i, w in enumerate(words)]
    return Reply(raw_chunks=[*events, sse_event(None, "chat", finish="length"),
                             b"data: [DONE]\n\n"])


def test_length_stop_is_cut_to_the_last_sentence_with_the_note(server, doc, capsys):
    add_provider(server.url)
    server.script(_length_stop(ANSWER))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "Alice Martin will present the budget. The board meets on Friday."
    assert LENGTH_NOTE in err
    assert "Placeholders were restored locally." in err


def test_complete_answer_is_printed_whole_without_the_note(server, doc, capsys):
    add_provider(server.url)
    server.script(Reply(deltas=["<PERSON_1> agrees", " and the"]))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--no-learn"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "Alice Martin agrees and the"
    assert LENGTH_NOTE not in err


def test_json_carries_the_shown_answer_and_notes(server, doc, capsys):
    add_provider(server.url)
    server.script(_length_stop(ANSWER))
    assert cli.main(["send", str(doc), "--method", "placeholder", "--yes", "--json",
                     "--no-learn"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer_shown"].endswith("meets on Friday.")
    assert out["result"]["answer"].endswith("costs and the")      # the raw answer is kept
    assert out["notes"][:2] == [LENGTH_NOTE, "Placeholders were restored locally."]


@pytest.mark.parametrize("args, line, noise", [
    (["--method", "pseudonym"], "Pseudonyms were mapped back to the original names locally.",
     False),
    (["--policy", "fake-identity", "--epsilon", "8"],
     "Nothing was restored: words changed by d_X noise cannot be restored.", True),
])
def test_restoration_line_per_method(server, doc, tmp_path, capsys, args, line, noise):
    add_provider(server.url)
    server.script(Reply(deltas=["Fine."]))
    if noise:       # the stand-in for d_X leaves names as they are: a document without any
        doc = tmp_path / "plain.txt"
        doc.write_text("The Q3 budget is late and the board wants a summary.", "utf-8")
    assert cli.main(["send", str(doc), *args, "--yes", "--no-learn"]) == 0
    err = capsys.readouterr().err
    assert line in err
    assert (NOISE_NOTE in err) is noise


@pytest.mark.parametrize("seed", range(40))
def test_streamed_output_equals_the_trimmed_answer_for_any_chunking(seed):
    rng = random.Random(seed)
    pieces = ["One.", " Two!", " 3.5 is a number", "\n- item", " Dr. Who?", "”", " tail",
              " end.)", " more", "…", " x"]
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 8))))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    for reason, expected in (("length", trim_to_sentence(text)), ("stop", text.rstrip())):
        out = io.StringIO()
        stream = SentenceStream(out)
        for chunk in chunks:
            stream.feed(chunk)
        note = stream.finish(reason)
        assert out.getvalue() == expected, (chunks, reason)
        assert (note == LENGTH_NOTE) is (reason == "length")


def test_an_answer_without_sentence_ends_still_streams():
    import io

    from preflight.cli.answer_stream import MAX_HOLD, SentenceStream

    out = io.StringIO()
    stream = SentenceStream(out)
    words = [f"word{i} " for i in range(200)]
    for w in words[:80]:
        stream.feed(w)
    assert out.getvalue().startswith("word0 ")               # not held back whole
    assert len("".join(words[:80])) - len(out.getvalue()) <= MAX_HOLD
    for w in words[80:]:
        stream.feed(w)
    stream.finish("stop")
    assert out.getvalue() == "".join(words).rstrip()
