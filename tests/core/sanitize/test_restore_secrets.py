"""Secrets are never restored into a model's answer (the real operator, vault, restorers);
the sanitized document itself still restores exactly, secrets included."""

from __future__ import annotations

from _change_checks import span
from preflight.core.sanitize.base import SanitizeParams, create_mechanism
from preflight.core.sanitize.vault import StreamRestorer, Vault, restore, withheld_secrets

DOC = ("Ann Lee rotated the key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z; the database "
       "password is hunter2-Correct.")
SPANS = [("Ann Lee", "PERSON"), ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "API_KEY"),
         ("hunter2-Correct", "SECRET")]


def sanitized(method: str = "placeholder"):
    mech = create_mechanism(method)
    out = mech.sanitize(DOC, [span(DOC, *s) for s in SPANS], SanitizeParams(seed=4))
    mech.vault.bind(out.text)
    return out.text, mech.vault


def stream(vault: Vault, chunks: list[str]) -> tuple[str, list[str]]:
    text, sr = stream_notes(vault, chunks)
    return text, sr.withheld


def stream_notes(vault: Vault, chunks: list[str]) -> tuple[str, StreamRestorer]:
    sr = StreamRestorer(vault)
    return "".join(sr.feed(c) for c in chunks) + sr.flush(), sr


def test_the_stream_keeps_secret_placeholders_and_says_so():
    _, vault = sanitized()
    answer = "<PERSON_1> should revoke <API_KEY_1> and <SECRET_1>; <API_KEY_1> is public."
    text, sr = stream_notes(vault, [answer[:30], answer[30:33], answer[33:]])
    assert text == "Ann Lee should revoke <API_KEY_1> and <SECRET_1>; <API_KEY_1> is public."
    assert "sk-proj" not in text and "hunter2" not in text
    assert sr.withheld == ["<API_KEY_1>", "<SECRET_1>"]
    (note,) = sr.notes()          # beside the answer, not in it
    assert "2 secrets were not restored: <API_KEY_1>, <SECRET_1>" in note


def test_one_secret_note_and_no_note_without_secrets():
    _, vault = sanitized()
    text, sr = stream_notes(vault, ["Key: ", "<API_KEY_1>."])
    assert text == "Key: <API_KEY_1>."
    assert sr.notes() == ["1 secret was not restored: <API_KEY_1> — credentials are never "
                          "put back into a model's answer."]
    text, sr = stream_notes(vault, ["<PERSON_1> agrees."])
    assert text == "Ann Lee agrees." and sr.withheld == [] and sr.notes() == []


def test_restore_of_an_answer_withholds_but_the_document_itself_restores_exactly():
    out, vault = sanitized()
    answer = "Tell <PERSON_1> to rotate <API_KEY_1> now."
    assert restore(answer, vault) == "Tell Ann Lee to rotate <API_KEY_1> now."
    assert withheld_secrets(answer, vault) == ["<API_KEY_1>"]
    assert restore(out, vault) == DOC and withheld_secrets(out, vault) == []
    assert restore(answer, vault, secrets=True) == (
        "Tell Ann Lee to rotate sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z now.")


def test_pseudonym_surrogates_of_secrets_stay_too():
    out, vault = sanitized("pseudonym")
    (key,) = [e for e in vault.entries if e.type == "API_KEY"]
    text, withheld = stream(vault, [f"Rotate {key.token} today."])
    assert key.token in text and "sk-proj-Ab3d" not in text and withheld == [key.token]
