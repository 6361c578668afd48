"""The default d_X space on the real SLM GGUF (slow: reads and dequantizes 49152x576)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _models import unavailable

from preflight.core.errors import ModelUnavailableError
from preflight_eval.dx_reference import reference_outputs

pytestmark = pytest.mark.slow



def model_missing(what: str, exc: Exception) -> None:
    """A model that is not installed fails the run on CI and skips (with the reason)
    on a developer's machine."""
    unavailable(f"{what} is not installed under the models folder ({exc})")


def slm_path() -> Path:
    from preflight.runtime.models import ModelManager

    try:
        return ModelManager().path("slm")
    except ModelUnavailableError as exc:
        model_missing("the SLM", exc)
        raise


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    from preflight.runtime.token_space import GGUFTokenSpace

    # module-scoped (dequantizing takes seconds); its cache goes to a temporary home
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFLIGHT_HOME", str(tmp_path_factory.mktemp("tshome")))
        return GGUFTokenSpace(slm_path())


def test_matrix_and_filter(space):
    assert space.matrix.shape == (49152, 576) and space.matrix.dtype == np.float32
    info = space.filter_info()
    # measured: 17 control tokens, 313 partial UTF-8 byte tokens, 47 empty, 26 others
    assert info["total"] == 49152
    assert 48000 < info["kept"] < 49152
    assert info["dropped"]["special"] >= 17 and info["dropped"]["partial_utf8"] > 100
    for tid in space.candidate_ids[:: 997]:
        s = space.piece(int(tid)).decode("utf-8")
        assert all(c.isprintable() or c in "\t\n\r" for c in s)


def test_tokenize_keeps_exact_offsets(space):
    text = "Dear Ms. Müller,\r\nthe 👍 emoji — and 北京 stay.\n"
    tok = space.tokenize(text)
    assert b"".join(space.piece(int(i)) for i in tok.ids) == text.encode()
    covered = "".join(text[s:e] for s, e in zip(tok.unit_start, tok.unit_end))
    assert covered == text
    # the emoji is split over byte tokens; they form one unit (with the space before it)
    assert " 👍" in [text[s:e] for s, e in zip(tok.unit_start, tok.unit_end)]


def test_second_load_uses_the_cache(space, monkeypatch):
    from preflight.runtime.token_space import GGUFTokenSpace

    first = GGUFTokenSpace(space.path)          # fills this test's empty cache

    def no_dequantize(self):
        raise AssertionError("the cached matrix should have been used")

    monkeypatch.setattr(GGUFTokenSpace, "_read_embedding", no_dequantize)
    again = GGUFTokenSpace(space.path)
    assert again.key == first.key == space.key
    assert np.array_equal(again.matrix, space.matrix)
    assert np.array_equal(again.candidate_ids, space.candidate_ids)
    assert again.filter_info() == space.filter_info()


def test_real_embedding_fast_path_equals_exact_search(space):
    """Slider fast path vs the per-ε exact full scan on the real 48k-token vocabulary."""
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.sanitize.dx import DxMechanism

    mech = DxMechanism(space)
    lo, hi = mech.epsilon_range
    text = ("The quarterly report from Acme Corp lists 3 open issues, one of them at "
            "the Berlin office (contact: jane.doe@example.com).")
    for seed in (1, 2):
        prep = mech.prepare(text, [], SanitizeParams(seed=seed))
        for eps in (lo, np.sqrt(lo * hi), hi, lo / 2):
            _, fast = prep.token_outputs(eps)
            assert np.array_equal(fast, reference_outputs(prep, eps))


@pytest.mark.parametrize("text", [
    "Sep" + "-" * 55 + "\nSigned",                 # a 64-dash token: longer than 32 bytes
    "Title\n" + " " * 40 + "indented",
    "tab\tseparated\u00a0nbsp \ufffd replacement",
])
def test_long_and_odd_pieces_round_trip(space, text):
    # llama-cpp's detokenize() returns nothing for pieces over 32 bytes; the space reads
    # them whole, so the tokenization spells the text exactly.
    tok = space.tokenize(text)
    assert b"".join(space.piece(int(i)) for i in tok.ids) == text.encode()
    assert tok.unit_start[0] == 0 and tok.unit_end[-1] == len(text)
