"""A long document from real text on the machine (never generated words): the TAB corpus's
ECHR judgments, then the licences of /usr/share/common-licenses, then package copyright
files, paragraphs kept, until the wanted size. Shared by the core, CLI and window tests
of long documents."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TAB = Path("/work/shared/data/tab/echr_dev_sample.jsonl")
SOURCES = (Path("/usr/share/common-licenses"), Path("/usr/share/doc"))


def _texts():
    if TAB.is_file():
        for line in TAB.read_text(encoding="utf-8").splitlines():
            yield json.loads(line)["text"]
    for folder in SOURCES:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.suffix not in (".gz", ".html"):
                if path.parent == folder or path.name == "copyright":
                    try:
                        yield path.read_text(encoding="utf-8")
                    except (UnicodeDecodeError, OSError):
                        continue


@lru_cache(maxsize=4)
def long_document(min_chars: int = 900_000) -> str:
    out, size = [], 0
    for text in _texts():
        text = text.strip()
        if text:
            out.append(text)
            size += len(text) + 2
        if size >= min_chars:
            return "\n\n".join(out)
    raise RuntimeError(f"only {size} characters of real text on this machine")


@lru_cache(maxsize=1)
def tab_person_names(limit: int = 40) -> tuple[str, ...]:
    """Person names the TAB annotators marked, as written in the judgments."""
    names: dict[str, None] = {}
    for line in TAB.read_text(encoding="utf-8").splitlines():
        for m in json.loads(line)["mentions"]:
            if m["type"] == "PERSON" and " " in m["span"] and len(m["span"]) > 6:
                names.setdefault(m["span"], None)
    return tuple(list(names)[:limit])
