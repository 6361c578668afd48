"""The second pass: features A–D and target E from the stored rows, with the product's
UtilityAssessor (fake SLM and embedder that follow its protocols), resumable."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "core" / "send"))
sys.path.insert(0, str(ROOT / "core" / "utility"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fakes import FakeDetector  # noqa: E402
from _loopback import CaptureServer, Reply  # noqa: E402
from _utility_fakes import FakeEmbedder, FakeSLM  # noqa: E402
from test_utility_generate import CorrectedRedact, _generator  # noqa: E402

from preflight.core.tasks import CORRECT  # noqa: E402
from preflight.core.utility.assess import UtilityAssessor  # noqa: E402
from preflight_eval.utility_data.corpus import Document  # noqa: E402
from preflight_eval.utility_data.features import FeaturePass, VerifiedRepairs  # noqa: E402
from preflight_eval.utility_data.features import main as features_main  # noqa: E402
from preflight_eval.utility_data.settings import OperatorKind  # noqa: E402
from preflight_eval.utility_data.shards import read_rows  # noqa: E402

DOC = Document("memo:0001", "business", "memo",
               "Alice Martin zzq wrote to bob@example.com about the zzk budget and the "
               "plan for Lyon; Bob Stone answered the same day.")


def _kinds() -> dict:
    return {"placeholder": OperatorKind("placeholder", 1.0),
            "redact_fixed": CorrectedRedact("redact_fixed", 1.0)}


class LiteralSLM(FakeSLM):
    """Another local model: its repair keeps every word."""

    def run(self, task, text, on_token=None, cancel=None):  # noqa: ANN001, ANN201
        return text if task.kind == "correct" else super().run(task, text, on_token, cancel)


def keyed(path: Path) -> dict:
    """A feature file's features by (document, setting key), whatever the row order."""
    return {(r["doc_id"], r["key"]): r["features"] for r in read_rows(path)}


def _generated(tmp_path: Path) -> Path:
    slm = FakeSLM()
    with CaptureServer() as srv:
        srv.default = Reply(deltas=["Alice Martin wrote about ", "the budget."])
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.corrector = lambda text: slm.run(CORRECT, text)
        gen.run([DOC])
    return gen.path


def test_features_and_target_from_stored_rows(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    out = tmp_path / "features.jsonl.gz"
    emb = FakeEmbedder()
    fp = FeaturePass(rows_path, out, UtilityAssessor(slm=FakeSLM(), embedder=emb),
                     FakeDetector(), kinds=_kinds(), seed=1)
    fp.run()
    feats = {r["setting"]["kind"]: r for r in read_rows(out)}
    assert set(feats) == {"placeholder", "redact_fixed"}        # originals are not rows
    stored = {r["setting"]["kind"]: r for r in read_rows(rows_path)}
    for kind, row in feats.items():
        assert row["reproduced"] is True                         # same seed, same text
        assert row["target"] == emb.similarity(DOC.text, stored[kind]["answer"])
        f = row["features"]
        assert {"sim_sanitized", "sim_slm_original", "sim_slm_sanitized"} <= set(f)
        assert f[f"method_{stored[kind]['setting']['method']}"] == 1.0
    assert feats["redact_fixed"]["repair_matches_payload"] is True
    assert "zzq" not in feats["redact_fixed"]["slm_answer"]
    again = FeaturePass(rows_path, out, UtilityAssessor(slm=FakeSLM(), embedder=emb),
                        FakeDetector(), kinds=_kinds(), seed=1)
    again.run()
    assert again.n_new == 0 and len(read_rows(out)) == 2


def test_a_different_slm_repair_is_flagged(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    out = tmp_path / "features-other.jsonl.gz"
    FeaturePass(rows_path, out, UtilityAssessor(slm=LiteralSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    fixed = [r for r in read_rows(out) if r["setting"]["corrected"]]
    assert fixed and fixed[0]["repair_matches_payload"] is False


class CappedSLM(FakeSLM):
    """Records the answer cap of every summary; its summary is that many words."""

    def __init__(self) -> None:
        super().__init__()
        self.caps: list[int] = []

    def run(self, task, text, on_token=None, cancel=None):  # noqa: ANN001, ANN201
        if task.kind == "correct":
            return super().run(task, text, on_token, cancel)
        self.caps.append(task.max_tokens)
        self.calls.append((task.kind, text))
        return " ".join(text.split()[: task.max_tokens])


def test_rows_record_the_answer_cap_and_the_assessor_applies_it(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    slm = CappedSLM()
    out = tmp_path / "features-t3.jsonl.gz"
    FeaturePass(rows_path, out, UtilityAssessor(slm=slm, embedder=FakeEmbedder(),
                                                answer_tokens=3),
                FakeDetector(), kinds=_kinds(), seed=1, answer_tokens=3).run()
    rows = read_rows(out)
    assert rows and all(r["slm_answer_tokens"] == 3 for r in rows)
    assert slm.caps and set(slm.caps) == {3}
    assert all(len(r["slm_answer"].split()) <= 3 for r in rows)


def test_verified_repairs_are_looked_up_and_give_the_same_features(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    earlier = tmp_path / "features-earlier.jsonl.gz"
    FeaturePass(rows_path, earlier, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    slm = FakeSLM()
    reusing = VerifiedRepairs.from_pass(slm, read_rows(rows_path), read_rows(earlier))
    again = tmp_path / "features-again.jsonl.gz"
    FeaturePass(rows_path, again, UtilityAssessor(slm=reusing, embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    assert reusing.reused == 1                              # the one corrected row
    assert not [c for c in slm.calls if c[0] == "correct"]  # never repaired again
    by_key = {r["key"]: r["features"] for r in read_rows(earlier)}
    assert {r["key"]: r["features"] for r in read_rows(again)} == by_key


def test_a_repair_the_earlier_pass_did_not_verify_is_generated(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    earlier = tmp_path / "features-other.jsonl.gz"
    FeaturePass(rows_path, earlier, UtilityAssessor(slm=LiteralSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()      # its repair ≠ payload
    slm = FakeSLM()
    reusing = VerifiedRepairs.from_pass(slm, read_rows(rows_path), read_rows(earlier))
    FeaturePass(rows_path, tmp_path / "f.jsonl.gz",
                UtilityAssessor(slm=reusing, embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    assert reusing.reused == 0
    assert [c for c in slm.calls if c[0] == "correct"]


def test_another_slm_reads_the_payload_as_its_repair_and_redoes_its_own_rows(
        tmp_path: Path) -> None:
    """--repair-from-payload: another SLM (whose repair would keep every word) computes
    the corrected row's features on the payload the stand-in read, never repairing; in the
    file that already holds its own-repair row, the row is redone (appended) once."""
    rows_path = _generated(tmp_path)
    out = tmp_path / "features-other.jsonl.gz"
    FeaturePass(rows_path, out, UtilityAssessor(slm=LiteralSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    [own] = [r for r in read_rows(out) if r["setting"]["corrected"]]
    assert own["repair_matches_payload"] is False and own["repair_from"] == "slm"

    slm = LiteralSLM()
    payloads = VerifiedRepairs.of_payloads(slm, read_rows(rows_path))
    redo = FeaturePass(rows_path, out, UtilityAssessor(slm=payloads, embedder=FakeEmbedder()),
                       FakeDetector(), kinds=_kinds(), seed=1, repair_from="payload")
    redo.run()
    assert redo.n_new == 1 and payloads.reused == 1          # looked up, never generated
    new = read_rows(out)[-1]
    assert new["key"] == own["key"] and new["repair_matches_payload"] is True
    assert new["repair_from"] == "payload" and new["features"] != own["features"]
    again = FeaturePass(rows_path, out, UtilityAssessor(slm=payloads, embedder=FakeEmbedder()),
                        FakeDetector(), kinds=_kinds(), seed=1, repair_from="payload")
    again.run()
    assert again.n_new == 0


def test_the_payload_repair_and_an_earlier_pass_repairs_exclude_each_other(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two sources for one repair: the command refuses them together, before loading any
    model, instead of silently preferring one."""
    with pytest.raises(SystemExit) as stop:
        features_main(["--reuse-repairs", "earlier.jsonl.gz", "--repair-from-payload"])
    assert stop.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_shards_split_the_documents_and_concatenate_into_the_whole_pass(tmp_path: Path) -> None:
    slm = FakeSLM()
    other = Document("memo:0002", "business", "memo",
                     "Carol Diaz zzq asked carol@example.org for the zzk invoice of the "
                     "Berlin office before Friday.")
    with CaptureServer() as srv:
        srv.default = Reply(deltas=["Carol wrote about ", "the invoice."])
        gen = _generator(tmp_path, srv.url, _kinds())
        gen.corrector = lambda text: slm.run(CORRECT, text)
        gen.run([DOC, other])
    whole = tmp_path / "whole.jsonl.gz"
    FeaturePass(gen.path, whole, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    parts = []
    for i in range(2):
        part = tmp_path / f"shard{i}.jsonl.gz"
        FeaturePass(gen.path, part, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder()),
                    FakeDetector(), kinds=_kinds(), seed=1, shard=(i, 2)).run()
        parts.append(part)
    docs = [{r["doc_id"] for r in read_rows(p)} for p in parts]
    assert docs[0] and docs[1] and not docs[0] & docs[1]        # one document each
    joined = tmp_path / "joined.jsonl.gz"
    joined.write_bytes(b"".join(p.read_bytes() for p in parts))   # `cat shard* > joined`

    assert keyed(joined) == keyed(whole)


def test_a_plain_pass_leaves_the_corrected_rows_to_a_later_pass(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    whole = tmp_path / "whole.jsonl.gz"
    FeaturePass(rows_path, whole, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()
    out = tmp_path / "features.jsonl.gz"
    slm = FakeSLM()
    FeaturePass(rows_path, out, UtilityAssessor(slm=slm, embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1, variant="plain").run()
    plain = read_rows(out)
    assert plain and not any(r["setting"]["corrected"] for r in plain)
    assert not [c for c in slm.calls if c[0] == "correct"]      # no repair was generated
    FeaturePass(rows_path, out, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder()),
                FakeDetector(), kinds=_kinds(), seed=1).run()       # the rest, resumed
    rows = read_rows(out)
    assert rows[:len(plain)] == plain and any(r["setting"]["corrected"] for r in rows)

    assert keyed(out) == keyed(whole)


def test_a_pass_without_unread_features_skips_the_sanitized_perplexity(tmp_path: Path) -> None:
    rows_path = _generated(tmp_path)
    rows = {}
    for every in (True, False):
        out = tmp_path / f"features-{every}.jsonl.gz"
        FeaturePass(rows_path, out, UtilityAssessor(slm=FakeSLM(), embedder=FakeEmbedder(),
                                                    all_features=every),
                    FakeDetector(), kinds=_kinds(), seed=1).run()
        rows[every] = {(r["doc_id"], r["key"]): r for r in read_rows(out)}
    assert rows[True].keys() == rows[False].keys()
    for key, full in rows[True].items():
        lean = rows[False][key]
        assert full["sanitized_perplexity"] and not lean["sanitized_perplexity"]
        assert math.isfinite(full["features"]["log_ppl_sanitized"])
        assert lean["features"]["log_ppl_sanitized"] is None
        assert lean["features"]["log_ppl_ratio"] is None
        same = {k: v for k, v in full["features"].items()
                if k not in ("log_ppl_sanitized", "log_ppl_ratio")}
        assert {k: lean["features"][k] for k in same} == same     # everything else unchanged
        assert lean["target"] == full["target"]
