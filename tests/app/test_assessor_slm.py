"""The assessor's SLM is a setting; the d_X token space has its own manifest role and
never follows it (same tokens, same embeddings, same calibration)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from _models import require_model

from preflight.app.services import Services
from preflight.cli.commands import info
from preflight.core.config import SCHEMA_VERSION, Settings, load_settings
from preflight.core.errors import ConfigError, ModelUnavailableError
from preflight.core.tasks import SUMMARIZE
from preflight.runtime.slm import LocalSLM

SAMPLE = "Alice Martin met the Lyon team on Friday to discuss the budget overrun."


def _space_digest(services: Services) -> tuple[str, str, list[int], str]:
    space = services.token_space()
    ids = [int(t) for t in space.tokenize(SAMPLE).ids]
    rows = np.ascontiguousarray(space.matrix[ids], dtype=np.float32)
    return space.key, str(space.path), ids, hashlib.sha256(rows.tobytes()).hexdigest()


@pytest.mark.slow
def test_switching_the_assessor_slm_leaves_the_dx_space_and_calibration_identical():
    require_model("slm")
    require_model("slm_qwen05")
    smol = Services(Settings(assessor_slm="slm"))
    qwen = Services(Settings(assessor_slm="slm_qwen05"))
    # the assessor really changes ...
    assert smol.slm_choice().role == "slm" and qwen.slm_choice().role == "slm_qwen05"
    assert smol.slm().model_path != qwen.slm().model_path
    assert qwen.slm().model_path.name.startswith("qwen2.5-coder-0.5b")
    # ... the d_X space does not: same file, key (names caches and calibration), token
    # ids and embedding rows
    assert _space_digest(smol) == _space_digest(qwen)
    assert smol.dx().calibration == qwen.dx().calibration
    # and switching in place keeps the very same space object
    space = smol.token_space()
    smol.update_settings(Settings(assessor_slm="slm_qwen05"))
    assert smol.token_space() is space
    assert smol.slm_choice().role == "slm_qwen05"


def test_a_missing_chosen_slm_falls_back_to_the_default_with_a_warning(tmp_path):
    require_model("slm")
    gone = tmp_path / "gone.gguf"
    services = Services(Settings(assessor_slm="slm_qwen05",
                                 model_paths={"slm_qwen05": str(gone)}))
    choice = services.slm_choice()
    assert choice.role == "slm" and choice.name.startswith("SmolLM2")
    assert "Qwen2.5-Coder-0.5B-Instruct" in choice.warning
    assert "Using SmolLM2-135M-Instruct" in choice.warning
    assert str(gone) in choice.warning                      # what happened
    assert "preflight models use slm_qwen05" in choice.warning   # what to do
    assert services.slm().model_path == services.models.path("slm")


def test_a_missing_default_slm_falls_back_to_smollm2_and_none_usable_raises(tmp_path):
    """An install that predates the 0.5B default (its model not installed yet) keeps an
    assessor — SmolLM2's, with the warning — instead of losing the prediction."""
    require_model("slm")
    services = Services(Settings(model_paths={"slm_qwen05": str(tmp_path / "gone.gguf")}))
    choice = services.slm_choice()
    assert services.settings.assessor_slm == "slm_qwen05"
    assert choice.role == "slm" and "Using SmolLM2-135M-Instruct" in choice.warning
    assert services.assessor_slm_role() == "slm"
    nothing = Services(Settings(model_paths={"slm_qwen05": str(tmp_path / "gone.gguf"),
                                             "slm": str(tmp_path / "gone too.gguf")}))
    with pytest.raises(ModelUnavailableError) as err:
        nothing.slm_choice()
    assert "gone.gguf" in err.value.message                 # the chosen model's reason
    assert nothing.assessor_slm_role() == "slm_qwen05"


def test_smollm2_files_keep_their_names_whatever_the_default(tmp_path):
    """The user's learned pairs and refits of SmolLM2 stay where the first versions put
    them; another SLM's carry its role, so the two never mix."""
    from preflight.core.utility.flow import FlowLearner
    from preflight.core.utility.slm_roles import BASE_SLM_ROLE, shipped_folder

    assert BASE_SLM_ROLE == "slm" and shipped_folder("slm") == ("utility",)
    assert shipped_folder("slm_qwen05") == ("utility", "slm_qwen05")
    smol = FlowLearner(slm_role="slm", predictor=object())
    qwen = FlowLearner(slm_role="slm_qwen05", predictor=object())
    assert smol.db_path.name == "utility_flow.sqlite"
    assert qwen.db_path.name == "utility_flow-slm_qwen05.sqlite"
    assert smol.bundle_root.parts[-1] == "utility"
    assert qwen.bundle_root.parts[-2:] == ("utility", "slm_qwen05")


def test_info_shows_the_assessor_slm_and_its_warning(tmp_path, capsys, monkeypatch):
    require_model("slm")
    settings = Settings(assessor_slm="slm_qwen05",
                        model_paths={"slm_qwen05": str(tmp_path / "gone.gguf")})
    monkeypatch.setattr(info, "_services", lambda: Services(settings))
    section = info._assessor_slm()
    assert section["chosen"] == "slm_qwen05" and section["used"] == "slm"
    assert "Using SmolLM2" in section["warning"]
    monkeypatch.setattr(info, "SECTIONS", [("assessor_slm", info._assessor_slm)])
    import argparse

    assert info.run(argparse.Namespace(json=False)) == 0
    out, err = capsys.readouterr()
    assert "assessor_slm:" in out and "used: slm" in out
    assert "warning: The chosen local model" in err


def test_the_setting_is_checked_on_load(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"assessor_slm": "gpt-5"}))
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert "assessor_slm must be one of slm_qwen05, slm" in err.value.message
    path.write_text(json.dumps({"assessor_slm": "slm"}))
    assert load_settings(path).assessor_slm == "slm"
    assert Settings().assessor_slm == "slm_qwen05"          # the default since session 23


def test_a_version_1_file_follows_the_new_default_slm_and_a_choice_stays(tmp_path):
    """Version-1 files name SmolLM2 because it was the default then (every key is
    written); from version 2 on, naming it is a choice and is kept."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"schema_version": 1, "assessor_slm": "slm"}))
    settings = load_settings(path)
    assert settings.assessor_slm == "slm_qwen05" and settings.schema_version == SCHEMA_VERSION
    path.write_text(json.dumps({"schema_version": 2, "assessor_slm": "slm"}))
    assert load_settings(path).assessor_slm == "slm"
    path.write_text(json.dumps({"schema_version": 1, "assessor_slm": "slm_qwen05"}))
    assert load_settings(path).assessor_slm == "slm_qwen05"


def test_the_manifest_system_prompt_replaces_the_tasks_system_message(tmp_path):
    plain = LocalSLM(tmp_path / "x.gguf")
    told = LocalSLM(tmp_path / "x.gguf", system_prompt="Reply with the answer only.")
    try:
        assert plain.messages(SUMMARIZE, "doc") == SUMMARIZE.messages("doc")
        msgs = told.messages(SUMMARIZE, "doc")
        assert msgs[0] == {"role": "system", "content": "Reply with the answer only."}
        assert msgs[1:] == [m for m in SUMMARIZE.messages("doc") if m["role"] != "system"]
    finally:
        plain.close()
        told.close()


def test_the_chosen_slm_gets_its_manifest_system_prompt():
    require_model("slm_qwen05")
    slm = Services(Settings(assessor_slm="slm_qwen05")).slm()
    assert "answer only" in slm.messages(SUMMARIZE, "doc")[0]["content"]
    smol = Services(Settings(assessor_slm="slm")).slm()
    assert smol.messages(SUMMARIZE, "doc") == SUMMARIZE.messages("doc")   # none in its entry
