"""A long document from real text on the machine (never generated words): the TAB corpus's
ECHR judgments, then the licences of /usr/share/common-licenses, then package copyright
files, paragraphs kept, until the wanted size — the text ``preflight_eval.bench_chunked``
plans. Shared by the core, CLI and window tests of long documents."""

from __future__ import annotations

import json
from functools import lru_cache


@lru_cache(maxsize=4)
def long_document(min_chars: int = 900_000) -> str:
    from preflight_eval.bench_chunked import long_text

    return long_text(min_chars)


@lru_cache(maxsize=1)
def tab_person_names(limit: int = 40) -> tuple[str, ...]:
    """Person names the TAB annotators marked, as written in the judgments."""
    from preflight_eval.bench_detect import _default_tab

    names: dict[str, None] = {}
    for line in _default_tab().read_text(encoding="utf-8").splitlines():
        for m in json.loads(line)["mentions"]:
            if m["type"] == "PERSON" and " " in m["span"] and len(m["span"]) > 6:
                names.setdefault(m["span"], None)
    return tuple(list(names)[:limit])
