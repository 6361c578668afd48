"""Stable placeholders: the same value keeps its token across edits and sends of one
document (the real operators and memory files), and another document starts afresh."""

from __future__ import annotations

import os
import stat

import pytest

from _change_checks import span
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.placeholder_memory import (
    PlaceholderMemory, document_identity, memory_path,
)
from preflight.core.sanitize.vault import restore

V1 = "Bob Stone met Carol Diaz in Lyon; Bob Stone wrote to carol@diaz.example."
V2 = "Ann Lee joined. " + V1      # an edit adds a name before the others
NAMES = ["Ann Lee", "Bob Stone", "Carol Diaz"]


def spans_of(text: str):
    found = [span(text, n, "PERSON", i) for n in NAMES for i in range(text.count(n))]
    found.append(span(text, "carol@diaz.example", "EMAIL_ADDRESS"))
    return found


def run(method: str, text: str, memory=None, seed=None):
    mech = create_mechanism(method, memory=memory) if memory is not None else create_mechanism(
        method)
    out = mech.sanitize(text, spans_of(text), SanitizeParams(seed=seed))
    return out, {e.original: e.token for e in mech.vault.entries}, mech.vault


def test_without_memory_an_added_name_renumbers_everyone():
    _, t1, _ = run("placeholder", V1)
    _, t2, _ = run("placeholder", V2)
    assert t1["Bob Stone"] == "<PERSON_1>" and t2["Bob Stone"] == "<PERSON_2>"


@pytest.mark.parametrize("method", ["placeholder", "pseudonym"])
def test_an_added_name_keeps_the_existing_tokens(method, tmp_path):
    memory = PlaceholderMemory.open("file:/docs/report.txt", tmp_path)
    _, t1, _ = run(method, V1, memory)
    out2, t2, vault2 = run(method, V2, memory)
    for value in ("Bob Stone", "Carol Diaz", "carol@diaz.example"):
        assert t2[value] == t1[value]
    assert t2["Ann Lee"] not in t1.values()
    if method == "placeholder":
        assert t2["Ann Lee"] == "<PERSON_3>"      # after the highest number used
    assert restore(out2.text, vault2, secrets=True) == V2


def test_two_sends_of_the_same_file_share_tokens_through_the_file(tmp_path):
    doc = tmp_path / "letter.txt"
    doc.write_text(V1)
    ident = document_identity(str(doc), V1)
    _, t1, _ = run("pseudonym", V1, PlaceholderMemory.open(ident, tmp_path))
    first = PlaceholderMemory.open(ident, tmp_path)
    assert len(first) == 0                          # nothing saved yet: the caller saves
    memory = PlaceholderMemory.open(ident, tmp_path)
    _, t1, _ = run("pseudonym", V1, memory)
    memory.save()
    _, t2, _ = run("pseudonym", V2, PlaceholderMemory.open(document_identity(doc, V2),
                                                           tmp_path))
    assert all(t2[v] == t1[v] for v in t1)
    path = memory_path(ident, tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    stored = path.read_text()
    assert not any(v in stored or v.lower() in stored for v in ("Bob Stone", "Carol Diaz",
                                                                "carol@diaz.example"))


def test_a_different_document_does_not_inherit_tokens(tmp_path):
    one = PlaceholderMemory.open("file:/docs/a.txt", tmp_path)
    run("placeholder", V2, one)
    one.save()
    other = PlaceholderMemory.open("file:/docs/b.txt", tmp_path)
    _, t, _ = run("placeholder", V1, other)
    assert t["Bob Stone"] == "<PERSON_1>" and len(other) == 3   # numbered afresh
    assert document_identity("-", V1) != document_identity("-", V2)


def test_a_remembered_token_the_new_text_writes_literally_is_not_reused(tmp_path):
    memory = PlaceholderMemory.open("sha256:x", tmp_path)
    _, t1, _ = run("placeholder", V1, memory)
    text = "PERSON_1 is a literal here. " + V1
    _, t2, _ = run("placeholder", text, memory)
    assert t1["Bob Stone"] == "<PERSON_1>" and t2["Bob Stone"] != "<PERSON_1>"


def test_a_damaged_memory_file_starts_empty(tmp_path):
    path = memory_path("sha256:y", tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    memory = PlaceholderMemory.open("sha256:y", tmp_path)
    assert len(memory) == 0
    run("placeholder", V1, memory)
    assert memory.save() == path and len(PlaceholderMemory.open("sha256:y", tmp_path)) == 3
