"""A local model that is missing or damaged reads in each face's words: the window names
its own place (Settings → Local models), the CLI keeps its command; no Python exception
name reaches either."""

from __future__ import annotations

import re

import pytest

from preflight.app.presentation import error_text
from preflight.core.errors import PreflightError
from preflight.runtime.gguf_space import GGUFTokenSpace
from preflight.runtime.slm import LocalSLM

JARGON = re.compile(r"[A-Z][a-z]+(Error|Exception)\b|Errno|Traceback")


def _missing_slm(tmp_path):
    LocalSLM(model_path=tmp_path / "gone.gguf").load()


def _damaged_slm(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)          # a header and nothing else
    LocalSLM(model_path=bad).load()


def _missing_space(tmp_path):
    GGUFTokenSpace(tmp_path / "gone.gguf")


@pytest.mark.parametrize("fault", [_missing_slm, _damaged_slm, _missing_space])
def test_a_missing_or_damaged_model_reads_in_each_faces_words(tmp_path, fault):
    with pytest.raises(PreflightError) as info:
        fault(tmp_path)
    window = " ".join(error_text(info.value, "window"))
    cli = " ".join(error_text(info.value, "cli"))
    assert "Settings → Local models" in window and "preflight models" not in window
    assert "preflight models install" in cli
    assert not JARGON.search(window) and not JARGON.search(cli), (window, cli)


def test_plain_http_to_another_host_reads_in_each_faces_words():
    from preflight.core.config import ProviderSettings
    from preflight.core.send.route import check_cleartext

    with pytest.raises(PreflightError) as info:
        check_cleartext(ProviderSettings("office", "http://10.1.2.3/v1", "m"))
    window = " ".join(error_text(info.value, "window"))
    cli = " ".join(error_text(info.value, "cli"))
    assert "Settings → Providers" in window and "--allow-insecure-http" not in window
    assert "preflight providers add office ... --allow-insecure-http" in cli
