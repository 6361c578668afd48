"""The sources of text annotated by people, each split by document into a dev part (looked
at while the detector is improved) and a held-out part (read once, to report).

- ``tab``: the Text Anonymization Benchmark's European Court of Human Rights judgments
  (MIT). Dev: the 40 documents of ``../shared/data/tab/`` (TAB's dev split). Held out:
  a sample of TAB's *test* split committed under ``data/annotated/tab_test/``.
- ``wnut17``: WNUT-17 "emerging entities" comments (CC-BY-4.0), committed under
  ``data/annotated/wnut17/``; each comment is a document, split in two by
  ``data/annotated/splits.json``. Its types map to TAB's levels: a person is DIRECT;
  a location, corporation or group QUASI; a product or creative work NO_MASK.

``data/annotated/splits.json`` records which document is in which part; the held-out
part of a source is read only when asked for by name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from preflight_eval.annotated.tab_metrics import AnnotatedDoc, Mention

SOURCES = ("tab", "wnut17")
PARTS = ("dev", "heldout")
#: WNUT-17 type -> (TAB-like type, level)
WNUT_TYPES = {
    "person": ("PERSON", "DIRECT"),
    "location": ("LOC", "QUASI"),
    "corporation": ("ORG", "QUASI"),
    "group": ("ORG", "QUASI"),
    "product": ("MISC", "NO_MASK"),
    "creative-work": ("MISC", "NO_MASK"),
}
_BRACKET = re.compile(r"\[\[(\S+) (.+?)\]\]")


class CorpusMissing(RuntimeError):
    """A source's files are not where they should be (the message says where and why)."""


def repo_root() -> Path:
    from preflight.core import paths

    return paths.install_root()


def data_dir() -> Path:
    return repo_root() / "data" / "annotated"


def shared_dir() -> Path:
    """``../shared`` beside the repository (as CI lays it), or ``$PREFLIGHT_SHARED``."""
    explicit = os.environ.get("PREFLIGHT_SHARED")
    return Path(explicit) if explicit else repo_root().parent / "shared"


def tab_dev_file() -> Path:
    return shared_dir() / "data" / "tab" / "echr_dev_sample.jsonl"


def splits() -> dict[str, dict[str, list[str]]]:
    return json.loads((data_dir() / "splits.json").read_text(encoding="utf-8"))


def load(source: str, part: str) -> list[AnnotatedDoc]:
    """The documents of ``source``'s ``part`` ("dev" or "heldout"), in split-file order."""
    if source not in SOURCES or part not in PARTS:
        raise ValueError(f"unknown source/part {source}/{part}")
    wanted = splits()[source][part]
    pool = {d.doc_id: d for d in _read(source, part)}
    missing = [doc_id for doc_id in wanted if doc_id not in pool]
    if missing:
        raise CorpusMissing(f"{len(missing)} documents of {source}/{part} named in "
                            f"splits.json are not in its data (first: {missing[0]}).")
    return [pool[doc_id] for doc_id in wanted]


def _read(source: str, part: str) -> list[AnnotatedDoc]:
    if source == "tab":
        path = tab_dev_file() if part == "dev" else \
            data_dir() / "tab_test" / "echr_test_sample.jsonl"
        if not path.is_file():
            raise CorpusMissing(
                f"The TAB {part} documents are not at {path}. "
                + ("Put the shared folder beside the repository (../shared) or set "
                   "PREFLIGHT_SHARED to it." if part == "dev" else "Restore data/annotated."))
        return read_tab_jsonl(path)
    return read_wnut(data_dir() / "wnut17" / "emerging_dev_sample.txt")


def read_tab_jsonl(path: Path) -> list[AnnotatedDoc]:
    """TAB documents, one JSON object a line (``doc_id``, ``text``, ``mentions``)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        mentions = tuple(Mention(m["start"], m["end"], m["type"], m["identifier"],
                                 m["entity_id"]) for m in d["mentions"])
        for m, raw in zip(mentions, d["mentions"]):
            if d["text"][m.start:m.end] != raw["span"]:
                raise CorpusMissing(f"{path.name}: {d['doc_id']} mention {raw['span']!r} "
                                    f"does not match its offsets")
        out.append(AnnotatedDoc(d["doc_id"], d["text"], mentions))
    return out


def parse_wnut_line(line: str, doc_id: str) -> AnnotatedDoc:
    """One comment with entities written ``[[type words]]`` (tokens joined by spaces)."""
    text, mentions, cursor = [], [], 0
    length = 0
    for i, m in enumerate(_BRACKET.finditer(line)):
        before = line[cursor:m.start()]
        text.append(before)
        length += len(before)
        kind, level = WNUT_TYPES[m.group(1)]
        words = m.group(2)
        mentions.append(Mention(length, length + len(words), kind, level,
                                f"{doc_id}_e{i + 1}"))
        text.append(words)
        length += len(words)
        cursor = m.end()
    text.append(line[cursor:])
    return AnnotatedDoc(doc_id, "".join(text), tuple(mentions))


def read_wnut(path: Path) -> list[AnnotatedDoc]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [parse_wnut_line(line, f"wnut17-dev-{i + 1:04d}") for i, line in enumerate(lines)]


def wnut_split(doc: AnnotatedDoc) -> str:
    """The fixed rule that split WNUT-17's sample: the parity of the text's sha256."""
    return "dev" if hashlib.sha256(doc.text.encode()).digest()[0] % 2 == 0 else "heldout"
