"""The held-out report reads the committed features files, splits by document, and scores
models against the ε-only baseline and the setting-mean reference."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from preflight.core.types import DxReport, SanitizeReport
from preflight.core.tasks import ASSESSOR_ANSWER_TOKENS
from preflight.core.utility.features import ALL_FEATURES
from preflight_eval import eval_utility
from preflight_eval.utility_data.corpus import SEED, split_of
from preflight_eval.utility_data.rows import (
    LEGACY_ANSWER_TOKENS, feature_files, load, original_rows,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows


def _features(rng: random.Random, eps: float, quality: float) -> dict[str, float | None]:
    feats: dict[str, float | None] = {n: None for n in ALL_FEATURES}
    feats.update(epsilon=eps, log_epsilon=math.log(eps), method_dx=1.0,
                 frac_tokens_changed=rng.random(), frac_chars_changed=rng.random(),
                 length_ratio=1.0, sim_sanitized=quality, sim_slm_original=0.7,
                 sim_slm_sanitized=quality * 0.9, slm_d_minus_c=quality * 0.9 - 0.7)
    return feats


def _write(path: Path, docs: int = 90, seed: int = 3) -> None:
    """Documents whose E follows B (sim_sanitized), which ε alone cannot know: the
    document's own 'fragility' moves B and E together."""
    rng = random.Random(seed)
    writer = ShardWriter(path)
    for d in range(docs):
        doc_id = f"synthetic:{d:04d}"   # an id split.json does not list: its stored split
        fragility = rng.random()
        for i, eps in enumerate((20.0, 60.0, 150.0)):
            quality = min(1.0, max(0.0, 1.0 - fragility * 60 / eps))
            writer.append({
                "doc_id": doc_id, "key": f"dx|dx|{eps}|1|0", "split": split_of(doc_id, SEED),
                "doc_kind": ("business", "email")[d % 2], "setting": {"kind": "dx", "method": "dx",
                                                    "epsilon": eps, "seed": 1,
                                                    "corrected": False},
                "features": _features(rng, eps, quality),
                "target": 0.2 + 0.6 * quality + rng.gauss(0, 0.02),
                "target_original": 0.85, "reproduced": i != 2 or d % 10 != 0,
                "slm_answer_tokens": ASSESSOR_ANSWER_TOKENS,
            })


def test_report_scores_on_test_documents_only(tmp_path: Path) -> None:
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path)
    assert feature_files(tmp_path) == [("cloud_x", "slm_y", path)]
    data = load(path)
    assert data.dropped == {"features of another text": 9}
    report = eval_utility.evaluate(data)
    plain = report["variants"]["plain"]
    test_docs = {r["group"] for r in data.rows if r["split"] == "test"}
    assert plain["test_documents"] == len(test_docs) > 0
    fitted = {r["group"] for r in data.split("train") + data.split("calibration")}
    assert plain["train_documents"] == len(fitted) and not fitted & test_docs
    models = plain["models"]
    # B carries what ε cannot: the full model beats the baseline and the setting mean.
    assert models[eval_utility.FULL]["rmse"] < models[eval_utility.BASELINE]["rmse"]
    assert models[eval_utility.FULL]["rmse"] < models[eval_utility.SETTING_MEAN]["rmse"]
    assert plain["failed_reduction_points"] > 0
    lo, hi = plain["reduction_ci"]
    assert lo <= plain["failed_reduction_points"] <= hi
    cv = plain["cross_validated"]        # out of fold, never reading a test document
    held = {r["group"] for r in data.rows if r["split"] in ("train", "calibration")
            and r["variant"] == "plain"}
    assert cv["documents"] == len(held) and not held & test_docs
    assert cv["models"][eval_utility.FULL]["rmse"] < cv["models"][eval_utility.BASELINE]["rmse"]
    kinds = cv["by_document_kind"]         # the same out-of-fold rows, per kind of document
    assert set(kinds) == {"business", "email"}
    assert sum(k["rows"] for k in kinds.values()) == cv["rows"]
    pooled = sum(k[eval_utility.FULL] * k["rows"] for k in kinds.values()) / cv["rows"]
    assert pooled == pytest.approx(cv["models"][eval_utility.FULL]["failed_pct"], abs=0.1)
    interval = plain["interval"]           # cross-conformal over train + calibration
    assert interval["method"] == "cross" and interval["n_calibration"] == len(
        [r for r in data.rows if r["group"] in fitted and r["variant"] == "plain"])
    assert abs(interval["coverage"] - interval["level"]) < 0.2
    assert interval["split"]["method"] == "split"
    text = eval_utility.format_report(report)
    assert "cloud_x" in text and "covers" in text and "per kind of document" in text


def test_rows_from_answers_of_another_length_are_dropped(tmp_path: Path) -> None:
    """C and D of a row depend on how long the SLM's answers were: rows made with another
    cap than the product's assessor uses (legacy rows: 142 tokens) are not trained on."""
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path, docs=4)
    rows = read_rows(path)
    rows[0]["slm_answer_tokens"] = ASSESSOR_ANSWER_TOKENS + 16
    del rows[1]["slm_answer_tokens"]
    mixed = tmp_path / "features-cloud_x-slm_z.jsonl.gz"
    writer = ShardWriter(mixed)
    for r in rows:
        writer.append(r)
    data = load(mixed)
    expected_legacy = 0 if ASSESSOR_ANSWER_TOKENS == LEGACY_ANSWER_TOKENS else 1
    assert data.dropped.get("answers of another length", 0) == 1 + expected_legacy
    assert len(data.rows) == load(path).read - data.dropped.get(
        "features of another text", 0) - 1 - expected_legacy


def test_corrected_rows_of_a_repair_the_stand_in_did_not_read_are_dropped(
        tmp_path: Path) -> None:
    """A corrected row whose features describe another SLM's repair than the payload the
    stand-in answered is not trained on; the same setting redone on the payload, appended
    later to the file, is."""
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path, docs=4)
    rows = [r for r in read_rows(path) if r["reproduced"]][:2]
    for r in rows:
        r["setting"]["corrected"] = True
    rows[0]["repair_matches_payload"] = False                      # this SLM's own repair
    redone = {**rows[0], "repair_matches_payload": True, "repair_from": "payload"}
    mixed = tmp_path / "features-cloud_x-slm_z.jsonl.gz"
    writer = ShardWriter(mixed)
    for r in (*rows, redone):
        writer.append(r)
    data = load(mixed)
    assert data.dropped == {"repair the stand-in did not read": 1}
    assert [r["key"] for r in data.rows] == [rows[1]["key"], redone["key"]]
    assert all(r["variant"] == "corrected" for r in data.rows)


def test_original_rows_one_per_document(tmp_path: Path) -> None:
    path = tmp_path / "features-a-b.jsonl.gz"
    _write(path, docs=12)
    rows = original_rows(load(path))
    assert len(rows) == 12 and all(r["target"] == 0.85 for r in rows)


def test_no_features_file_is_a_clear_message(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    assert eval_utility.main(["--data", str(tmp_path)]) == 2
    assert "preflight_eval.utility_data.features" in capsys.readouterr().err


def test_later_documents_draw_fewer_settings_and_the_first_are_unchanged(monkeypatch) -> None:  # noqa: ANN001
    """From the 25th document on, about six settings instead of ten; the first 24
    documents keep exactly the draw their committed rows were made from."""
    from preflight_eval.utility_data import settings as S

    class Space:
        epsilon_range = (15.0, 250.0)

    kinds = {"dx": S.DxKind(Space())}
    for name, p in S.OPERATOR_P.items():
        kinds[name] = S.OperatorKind(name, p)
    kinds["identifiers"] = S.PolicyKind("identifiers", S.POLICY_P["identifiers"])
    monkeypatch.setattr(S, "_KINDS", {"dx": kinds["dx"]})   # identifiers-dx reads dx's range
    kinds["identifiers-dx"] = S.PolicyKind("identifiers-dx", S.POLICY_P["identifiers-dx"], (2,))

    def draw(i: int, light: bool) -> list:
        return S.document_settings(S.DocumentContext(f"d{i}", "x", (), 7, light), kinds)

    full = [len(draw(i, False)) for i in range(400)]
    light = [len(draw(i, True)) for i in range(400)]
    assert 9.0 < sum(full) / 400 < 10.5 and 5.5 < sum(light) / 400 < 6.7
    assert all(d[0] == S.ORIGINAL for d in (draw(i, True) for i in range(50)))
    # The full draw is deterministic per document: the rows already made stay valid.
    assert [s.key for s in draw(3, False)] == [s.key for s in draw(3, False)]


def test_features_of_a_payload_todays_code_no_longer_makes() -> None:
    """A stored payload that differs from today's output is described by a diff against
    the original: the changed words, not those of the re-created text."""
    from preflight.core.types import SanitizedText
    from preflight.core.utility.features import fast_features
    from preflight_eval.utility_data.features import from_stored, old_dx_row

    original = "Alice Martin met Bob Stone in Lyon on Friday about the budget."
    stored = "<PERSON_1> met Bob Stone in Lyon on Friday about the budget."   # older detector
    recreated = SanitizedText("<PERSON_1> met <PERSON_2> in Lyon on Friday about the budget.",
                              "placeholder", (),
                              SanitizeReport(dx=DxReport(5.0, tokens_total=99, tokens_changed=50)))
    made = from_stored(original, stored, recreated)
    assert made.text == stored
    assert [(c.original, c.replacement) for c in made.changes] == [("Alice Martin",
                                                                     "<PERSON_1>")]
    feats = fast_features(original, made)
    assert feats.frac_tokens_changed == pytest.approx(2 / 12)
    row = {"setting": {"kind": "dx"}, "created": "2026-11-22T22:59:00+00:00"}
    assert old_dx_row(row) and not old_dx_row(dict(row, created="2026-11-23T01:00:00+00:00"))
    assert not old_dx_row({"setting": {"kind": "placeholder"}, "created": "2026-11-22T10:00"})


def test_card_command_reproduces_its_numbers_after_the_data_grew(tmp_path: Path) -> None:
    """train_utility names the row count it read; after more rows are appended, that
    command (and eval_utility --rows) gives the card's numbers again, not the new ones."""
    import json
    import shlex

    from preflight_eval import train_utility

    data_dir, out = tmp_path / "data", tmp_path / "out"
    data_dir.mkdir()
    path = data_dir / "features-cloud_x-slm_y.jsonl.gz"
    _write(path, docs=60)
    assert train_utility.main(["--data", str(data_dir), "--cloud-role", "cloud_x",
                               "--slm-role", "slm_y", "--out", str(out)]) == 0
    card = (out / "MODEL_CARD.md").read_text(encoding="utf-8")
    first = json.loads((out / "eval_report.json").read_text(encoding="utf-8"))
    assert "--rows 180" in card and "eval_utility --rows 180" in card

    _write(path, docs=90, seed=4)           # the data set grows at its end (append-only)
    assert load(path).read == 450 and load(path, 180).read == 180
    command = card.split("by `", 1)[1].split("`", 1)[0]
    args = shlex.split(command)[3:]        # after "python -m preflight_eval.train_utility"
    assert train_utility.main([*args, "--data", str(data_dir), "--out", str(out)]) == 0
    again = json.loads((out / "eval_report.json").read_text(encoding="utf-8"))
    assert again["variants"] == first["variants"]
    grown = eval_utility.evaluate(load(path))
    assert grown["variants"]["plain"]["test_rows"] > first["variants"]["plain"]["test_rows"]


def test_slms_are_compared_on_the_same_sends(tmp_path: Path) -> None:
    """Two features files of one stand-in: the SLM whose features carry the document's
    fragility wins; rows only one file holds are left out of the comparison."""
    from preflight_eval.utility_data.shards import read_rows

    good = tmp_path / "features-cloud_x-slm_good.jsonl.gz"
    _write(good, docs=40)
    rng = random.Random(9)
    writer = ShardWriter(tmp_path / "features-cloud_x-slm_noise.jsonl.gz")
    for i, row in enumerate(read_rows(good)):
        if i % 3 == 0 and i < 30:
            continue                      # the slower SLM's pass has not reached these
        feats = dict(row["features"], sim_sanitized=rng.random(),
                     sim_slm_sanitized=rng.random(), slm_d_minus_c=rng.random() - 0.7)
        writer.append(dict(row, features=feats))
    datasets = [load(p) for _c, _s, p in feature_files(tmp_path)]
    comp = eval_utility.compare_slms(datasets)

    def compared(rows: list) -> list:
        return [r for r in rows if r["variant"] == "plain" and r["split"] != "test"]

    assert any(r["split"] == "test" for r in datasets[1].rows)
    # the test documents never enter the choice of SLM
    assert comp["rows"] == len(compared(datasets[1].rows)) < len(compared(datasets[0].rows))
    assert comp["documents"] == len({r["group"] for r in compared(datasets[1].rows)})
    full = {slm: models[eval_utility.FULL]["rmse"] for slm, models in comp["slms"].items()}
    assert full["slm_good"] < full["slm_noise"]
    kinds = comp["by_document_kind"]["slm_good"]
    assert set(kinds) == {"business", "email"}
    assert sum(k["rows"] for k in kinds.values()) == comp["rows"]
    text = eval_utility.format_comparison("cloud_x", comp)
    assert "slm_good" in text and "no test document" in text and "full per kind" in text
    assert eval_utility.compare_slms(datasets[:1]) is None


def test_failed_difference_interval_resamples_whole_documents() -> None:
    import numpy as np

    rows = [{"target": 0.5, "group": f"d{i // 3}"} for i in range(30)]     # 10 documents
    full = np.full(30, 0.5)
    base = np.full(30, 0.8)                  # the baseline fails every row, the model none
    assert eval_utility.reduction_interval(rows, base, full) == [100.0, 100.0]
    base[:3] = 0.5                           # one document where both are right
    lo, hi = eval_utility.reduction_interval(rows, base, full)
    assert lo < 90.0 < hi == 100.0           # resampling that document moves the difference


def test_tree_study_never_reads_a_test_document_and_ranks_the_shipped_settings(
        tmp_path: Path) -> None:
    from preflight_eval import tree_study

    path = tmp_path / "features-a-b.jsonl.gz"
    _write(path, docs=40)
    rows = [r for r in load(path).rows if r["variant"] == "plain"]
    assert any(r["split"] == "test" for r in rows)
    candidates = [{"learning_rate": 0.05, "max_iter": 150, "max_depth": 3,
                   "min_samples_leaf": 15},
                  {"learning_rate": 0.5, "max_iter": 5, "max_depth": 2,
                   "min_samples_leaf": 30}]
    poisoned = [dict(r, target=float("nan")) if r["split"] == "test" else r for r in rows]
    result = tree_study.study(poisoned, seeds=2, candidates=candidates)   # fits, so unread
    assert result["rows"] == sum(r["split"] != "test" for r in rows)
    full = result["models"]["full"]
    # the shipped settings join the candidates: on so few rows their leaf is smaller
    assert result["shipped"]["min_samples_leaf"] < 15
    assert len(full) == 3 and full[0]["failed_mean"] <= full[-1]["failed_mean"]
    assert all(len(s["failed"]) == 2 for s in full)
    # five trees of depth 2 cannot follow B as 150 trees do
    weak = next(s for s in full if s["params"]["max_iter"] == 5)
    assert weak["rmse_mean"] > min(s["rmse_mean"] for s in full)
    assert "shipped (rank" in tree_study.format_study(result)


def test_tree_settings_a_caller_gives_win_and_a_leaf_floor_still_holds() -> None:
    from preflight.core.utility.fitting import TREE_PARAMS, make_regressor

    default = make_regressor(600)
    assert default.max_depth == TREE_PARAMS["max_depth"] and default.min_samples_leaf == 15
    tuned = make_regressor(600, params={"max_depth": 5, "min_samples_leaf": 8})
    assert tuned.max_depth == 5 and tuned.min_samples_leaf == 8
    assert make_regressor(40, min_leaf=10).min_samples_leaf == 10
    assert make_regressor(40).min_samples_leaf == 3


def test_a_file_with_rows_lacking_the_sanitized_perplexity_leaves_out_that_model(
        tmp_path: Path) -> None:
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path)
    whole = eval_utility.evaluate(load(path))
    assert "full + sanitized-text perplexity" in whole["variants"]["plain"]["models"]
    lean = tmp_path / "lean" / path.name
    lean.parent.mkdir()
    writer = ShardWriter(lean)
    for i, r in enumerate(read_rows(path)):        # a later pass run with --skip-unread
        writer.append({**r, "sanitized_perplexity": i < 100})
    report = eval_utility.evaluate(load(lean))
    plain = report["variants"]["plain"]
    assert "full + sanitized-text perplexity" not in plain["models"]
    assert "full + sanitized-text perplexity" not in plain["cross_validated"]["models"]
    assert plain["not_scored"] == {"models": ["full + sanitized-text perplexity"],
                                   "rows_without": sum(not r["sanitized_perplexity"] for r in
                                                       load(lean).rows if r["variant"] == "plain")}
    # the other models, the rule's among them, read exactly as before
    for name in (eval_utility.FULL, eval_utility.BASELINE):
        assert plain["models"][name] == whole["variants"]["plain"]["models"][name]
    assert "not scored: full + sanitized-text perplexity" in eval_utility.format_report(report)


def test_the_rule_is_not_read_on_a_file_covering_part_of_the_test_split(tmp_path: Path) -> None:
    path = tmp_path / "features-cloud_x-slm_y.jsonl.gz"
    _write(path)
    data = load(path)
    n_test = len({r["group"] for r in data.rows if r["split"] == "test"
                  and r["variant"] == "plain"})
    whole = eval_utility.evaluate(data, answered_test_documents=n_test)
    assert whole["acceptance"]["covers_test_split"]
    assert whole["acceptance"]["met"] == eval_utility.evaluate(data)["acceptance"]["met"]
    part = eval_utility.evaluate(data, answered_test_documents=n_test + 5)
    acc = part["acceptance"]
    assert not acc["covers_test_split"] and not acc["met"]
    assert acc["reduction_points"] == whole["acceptance"]["reduction_points"]
    text = eval_utility.format_report(part)
    assert f"NOT READ — these features cover {n_test} of the {n_test + 5} test" in text
    assert "MET" not in text.replace("NOT READ", "")


def test_answered_test_documents_counts_what_a_feature_pass_can_compute(tmp_path: Path) -> None:
    from preflight_eval.utility_data.rows import answered_test_documents

    def send(doc: str, split: str, kind: str, **extra: object) -> dict:
        return {"doc_id": doc, "split": split, "key": kind, "answer": "An answer.",
                "finish_reason": "stop", "created": "2026-11-25T00:00:00+00:00",
                "setting": {"kind": kind, "method": kind}, **extra}

    path = tmp_path / "cloud_x.jsonl.gz"
    writer = ShardWriter(path)
    for row in (send("a", "test", "original"), send("a", "test", "placeholder"),
                send("b", "test", "original"),                       # only its unaltered send
                send("c", "test", "placeholder", error="HTTP 500"),  # the send failed
                send("d", "test", "dx", answer="", finish_reason=None),   # a torn stream
                send("e", "test", "dx", created="2026-11-22T20:00:00+00:00"),  # retired d_X
                send("f", "train", "placeholder")):
        writer.append(row)
    assert answered_test_documents(path) == 1
    assert answered_test_documents(tmp_path / "missing.jsonl.gz") is None
