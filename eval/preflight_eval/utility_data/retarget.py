"""Rewrite a features file for issue 47: the faithful realized score as the target, and D
of the local answer restored as the cloud's answer is.

    nice -n 10 python -m preflight_eval.utility_data.retarget \
        data/utility/features-cloud_qwen15-slm_qwen05.jsonl.gz

For every row of the file (the committed rows: train, calibration and the committed test
split; the frozen test set, ``frozen-*.jsonl.gz``, is another file and is never read):

- ``target`` becomes the product's realized utility
  (:func:`~preflight.core.utility.answer_check.faithful_utility`): the cosine of the
  document's excerpt and the stand-in's restored answer (kept as ``target_cosine``),
  discounted by the facts the answer states that the document does not hold, checked as
  the send path checks an answer (:func:`~preflight.core.send.answer_review.review_answer`
  with the product's detector and the payload). ``target_original`` the same for the
  stand-in's answer to the unsanitized document (``target_original_cosine``).
- D (``sim_slm_sanitized``, and ``slm_d_minus_c``) is computed again from the stored
  ``slm_answer`` restored by the vault of the sanitization, recreated as the features pass
  recreates it (:mod:`.features`): only where the restoration changes the answer (rows of
  the placeholder and pseudonym kinds); elsewhere D is unchanged. ``d_restored`` says which.

Deterministic: the same rows in the same order, gzip members without a time stamp. The
rows are written to ``<file>.partial`` as they are done (a rerun resumes there) and the
file is replaced at the end. Idempotent: the cosine is read from ``target_cosine`` when
the row has one, D from the stored answer.

``--targets-from FILE``: an already rewritten file of the same cloud role (another SLM's
features of the same sends) gives the target fields of each row whose send it holds with
the same cosine (to 1e-6), so only D is computed again; the discount is the donor's
checked facts applied to this row's own cosine (the full computation's arithmetic):

    nice -n 10 python -m preflight_eval.utility_data.retarget \
        data/utility/features-cloud_qwen15-slm.jsonl.gz \
        --targets-from data/utility/features-cloud_qwen15-slm_qwen05.jsonl.gz
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from preflight.core.utility.answer_check import discounted
from preflight.core.utility.assess import answer_for_d
from preflight.core.utility.excerpt import excerpts
from preflight_eval.utility_data.corpus import DATA_DIR, SEED
from preflight_eval.utility_data.features import faithful_fields, from_stored
from preflight_eval.utility_data.settings import (
    DocumentContext, Setting, setting_kinds, use_mechanisms,
)
from preflight_eval.utility_data.shards import ShardWriter, read_rows

log = logging.getLogger("preflight_eval.utility_data.retarget")
NO_VAULT_KINDS = ("dx", "redact", "generalize")     # nothing in their answers to restore
SAME_COSINE = 1e-6      # a donor row's cosine within this of the row's: the same send


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return row["doc_id"], row["key"]


class Retarget:
    """One pass over a features file (see the module)."""

    def __init__(self, path: Path, cloud_rows: list[dict[str, Any]], detector: Any,
                 embedder: Any, seed: int = SEED,
                 donors: list[dict[str, Any]] | None = None) -> None:
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.detector = detector
        self.embedder = embedder
        self.kinds = setting_kinds()
        self.seed = seed
        self.cloud = {_key(r): r for r in cloud_rows if "error" not in r}
        self.originals = {r["doc_id"]: r for r in cloud_rows
                          if r.get("setting", {}).get("kind") == "original" and "error" not in r}
        self._ctx: DocumentContext | None = None
        self._excerpt_vec: tuple[str, Any] = ("", None)     # the last excerpt embedded
        self._orig_score: dict[str, tuple[float, float, int]] = {}
        self.donors: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in donors or ():
            if "target_cosine" in r:
                self.donors.setdefault(_key(r), []).append(r)
        self.copied = 0         # rows whose target fields came from a donor

    def _donor(self, row: dict[str, Any], cos: float, field: str) -> dict[str, Any] | None:
        """The donor row of ``row``'s send whose ``field`` is ``cos`` (to 1e-6), if any."""
        near = [(abs(float(d[field]) - cos), i, d)
                for i, d in enumerate(self.donors.get(_key(row), ()))]
        best = min(near, default=None)
        return best[2] if best is not None and best[0] <= SAME_COSINE else None

    def partials(self) -> list[Path]:
        return sorted(self.partial.parent.glob(self.partial.name + "*"))

    def run(self, time_limit_min: float = 600.0, backwards: bool = False,
            start_at: float = 0.0) -> bool:
        """True when every row is done and the file was replaced. ``backwards``: a second
        process from the last row (into ``<file>.partial-back``); stop both once they meet
        and run again (or ``--merge``) to assemble the file. ``start_at``: a third, from
        that share of the rows forwards (into ``<file>.partial-at<share>``)."""
        rows = read_rows(self.path)
        done = {_key(r) for p in self.partials() for r in read_rows(p)}
        name = self.partial.name + ("-back" if backwards else
                                    f"-at{start_at:g}" if start_at else "")
        writer = ShardWriter(self.partial.with_name(name))
        deadline = time.monotonic() + time_limit_min * 60
        order = list(enumerate(rows))[int(start_at * len(rows)):]
        for i, row in (reversed(order) if backwards else order):
            if _key(row) in done:
                continue
            if time.monotonic() > deadline:
                log.warning("time limit: %d of %d rows done; rerun to resume", len(done),
                            len(rows))
                return False
            writer.append(self.row(row))
            done.add(_key(row))
            if i % 100 == 0:
                log.info("%d / %d rows", i, len(rows))
        return self.merge(rows)

    def merge(self, rows: list[dict[str, Any]] | None = None) -> bool:
        """Write the file from the partial files, in the file's order (False: rows missing)."""
        rows = rows if rows is not None else read_rows(self.path)
        made = {_key(r): r for p in self.partials() for r in read_rows(p)}
        if any(_key(r) not in made for r in rows):
            log.warning("%d of %d rows not done yet", sum(_key(r) not in made for r in rows),
                        len(rows))
            return False
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        writer = ShardWriter(tmp)
        for r in rows:
            writer.append(_same_send(r, made[_key(r)]))
        os.replace(tmp, self.path)
        for p in self.partials():
            p.unlink()
        return True

    def _context(self, doc_id: str, text: str) -> DocumentContext:
        if self._ctx is None or self._ctx.doc_id != doc_id:
            self._ctx = DocumentContext(doc_id, text, self.detector.detect(text), self.seed)
        return self._ctx

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        cloud = self.cloud[_key(row)]
        orig = self.originals[row["doc_id"]]
        text = orig["text"]
        out = dict(row)
        cos = float(row.get("target_cosine", row["target"]))
        donor = self._donor(row, cos, "target_cosine")
        if donor is not None:       # the send's checked facts, on this row's cosine
            s, u = int(donor["supported_facts"]), int(donor["unsupported_facts"])
            out.update(target=discounted(cos, s, u), target_cosine=cos,
                       unsupported_facts=u, supported_facts=s)
            self.copied += 1
        else:
            out.update(faithful_fields(text, cloud["answer"], cos, self.detector,
                                       payload=cloud["payload"]))
        if row["doc_id"] not in self._orig_score:
            cos_o = float(row.get("target_original_cosine", row["target_original"]))
            donor = self._donor(row, cos_o, "target_original_cosine")
            if donor is not None:   # the donor's discount (only the score is kept)
                d_cos = float(donor["target_original_cosine"])
                d_score = float(donor["target_original"])
                faithful_o = d_score if d_cos == cos_o else \
                    cos_o * d_score / d_cos if d_cos else d_score
            else:
                faithful_o = faithful_fields(text, orig["answer"], cos_o,
                                             self.detector)["target"]
            self._orig_score[row["doc_id"]] = (cos_o, faithful_o, 0)
        cos_o, faithful_o, _ = self._orig_score[row["doc_id"]]
        out["target_original_cosine"] = cos_o
        out["target_original"] = faithful_o
        out["d_restored"] = False
        setting = Setting(**row["setting"])
        answer = row.get("slm_answer") or ""
        if setting.kind in NO_VAULT_KINDS or not answer:
            return out
        ctx = self._context(row["doc_id"], text)
        recreated, vault = self.kinds[setting.kind].sanitize(ctx, setting)
        restored = answer_for_d(answer, vault)
        if restored == answer:
            return out
        stored = cloud.get("sanitized", cloud["payload"])
        sanitized = recreated if recreated.text == stored else \
            from_stored(text, stored, recreated)
        if setting.corrected:       # D read the repaired text (the payload)
            sanitized = dataclasses.replace(sanitized, text=cloud["payload"], changes=())
        sample = excerpts(text, sanitized)
        if self._excerpt_vec[0] != sample.original:
            self._excerpt_vec = (sample.original, self.embedder.embed([sample.original])[0])
        d = float(np.dot(self._excerpt_vec[1], self.embedder.embed([restored])[0]))
        feats = dict(row["features"])
        feats["sim_slm_sanitized"] = round(d, 6)
        c = feats.get("sim_slm_original")
        if c is not None:
            feats["slm_d_minus_c"] = round(d - float(c), 6)
        out["features"] = feats
        out["d_restored"] = True
        out["sim_slm_sanitized_unrestored"] = row.get("sim_slm_sanitized_unrestored",
                                                      row["features"]["sim_slm_sanitized"])
        return out


#: What :meth:`Retarget.row` writes that depends on the send alone (the cloud's answer).
TARGET_FIELDS = ("target", "target_cosine", "unsupported_facts", "supported_facts",
                 "target_original", "target_original_cosine")


def _same_send(row: dict[str, Any], done: dict[str, Any]) -> dict[str, Any]:
    """``row`` rewritten, from ``done``: the rewrite of ``row`` or of another row of the same
    send. A file holds one send twice when a corrected d_X row was redone with the payload
    as the repair (``features --repair-from-payload``): both rows have the send's cloud
    answer, so its target; D is not touched for d_X, so only the target fields differ."""
    rewritten = (*TARGET_FIELDS, "features", "d_restored", "sim_slm_sanitized_unrestored")
    if all(row.get(k) == done.get(k) for k in row if k not in rewritten):
        return done
    cos = float(row.get("target_cosine", row["target"]))
    if row["setting"]["kind"] in NO_VAULT_KINDS and abs(cos - done["target_cosine"]) < 1e-5:
        # the two rows' cosines were embedded apart (float32: they differ by < 1e-6); the
        # check, so the discount, is the send's
        out = dict(row, d_restored=False, **{k: done[k] for k in TARGET_FIELDS})
        out["target_cosine"] = cos
        out["target"] = cos * done["target"] / done["target_cosine"] if done["target_cosine"] \
            else done["target"]
        return out
    raise RuntimeError(f"{_key(row)}: two rows of one send differ beyond their target")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("features", nargs="?",
                    default=str(DATA_DIR / "features-cloud_qwen15-slm_qwen05.jsonl.gz"))
    ap.add_argument("--cloud-rows", default=None, help="the stand-in's rows (default: "
                    "data/utility/<cloud role>.jsonl.gz from the file's name)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="minutes; rerun resumes")
    ap.add_argument("--backwards", action="store_true", help="a second process, from the "
                    "last row; stop both when they meet, then --merge")
    ap.add_argument("--start-at", type=float, default=0.0, help="a third process, from "
                    "this share of the rows (0.5: the middle) forwards")
    ap.add_argument("--merge", action="store_true", help="only assemble the file from the "
                    "partial files")
    ap.add_argument("--targets-from", default=None, metavar="FILE", help="a rewritten "
                    "file of the same cloud role: the target fields of its rows of the same "
                    "send and cosine are copied, not checked again (D is still recomputed)")
    args = ap.parse_args(argv)
    path = Path(args.features)
    if "frozen" in path.name.split("-")[:2]:
        ap.error("the frozen test set is read once, at the end of the issue, by someone else")
    donor = Path(args.targets_from) if args.targets_from else None
    if donor and (donor.name.startswith("frozen")
                  or donor.name.split("-")[1:2] != path.name.split("-")[1:2]):
        ap.error("--targets-from: a features file of the same cloud role (not frozen)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cloud_path = Path(args.cloud_rows) if args.cloud_rows else \
        path.parent / (path.name.split("-")[1] + ".jsonl.gz")

    from preflight.app.services import build_services
    from preflight.core.config import Settings

    services = build_services(Settings())       # the defaults, not this user's settings
    use_mechanisms(services.mechanism)
    donors = read_rows(donor) if donor else None
    job = Retarget(path, read_rows(cloud_path), services.detector(), services.embedder(),
                   donors=donors)
    if args.merge:
        return 0 if job.merge() else 75
    done = job.run(args.time_limit, args.backwards, args.start_at)
    if donors is not None:
        log.info("target fields copied for %d rows, checked for the others", job.copied)
    return 0 if done else 75


if __name__ == "__main__":
    raise SystemExit(main())
