"""Kinds of real text the utility model never trained on: court judgments and manuals.

- ``judgment``: European Court of Human Rights judgments of the Text Anonymization
  Benchmark (TAB, MIT): the 40 of its dev sample (``../shared/data/tab/``) and the 5 of
  ``data/annotated/tab_test/``, each cut at a paragraph boundary to the first ~600 words
  a user would paste, with TAB's DIRECT and QUASI identifier mentions inside the cut
  recorded as ground truth;
- ``manual``: manual pages (``man1``, rendered by the system's ``man``) and package READMEs
  of this machine, one per Debian package, from packages whose machine-readable
  ``/usr/share/doc/<package>/copyright`` names only licences that allow redistribution
  (the licence and copyright line are recorded per document).

The documents are committed (``data/utility/newkinds.jsonl.gz``): other machines have
neither these manual pages nor, always, the shared TAB folder. Part of them carries a
question whose answer is in the document (:mod:`.questions`) for the question-answering
task. They are the frozen test set (``data/utility/test_frozen.json``): the generator
sends them; nobody computes features on them or reads their rows before the end of
issue 47.

    python -m preflight_eval.utility_data.newkinds      # rebuild the committed file
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
from datetime import date
from pathlib import Path
from typing import Any, Iterator

from preflight.core.fsutil import atomic_write_bytes, atomic_write_text
from preflight_eval.utility_data.business import Truth
from preflight_eval.utility_data.corpus import DATA_DIR, SEED, Document, Question
from preflight_eval.utility_data.questions import judgment_questions, manual_questions
from preflight_eval.utility_data.shards import read_rows

NEWKINDS_FILE = "newkinds.jsonl.gz"
# the copyright files of the manuals' packages and the licence texts they refer to: the
# GPL family asks that a verbatim copy travel with its licence
LICENCES_FILE = "newkinds-licences.jsonl.gz"
COMMON_LICENCES = Path("/usr/share/common-licenses")
FROZEN_FILE = "test_frozen.json"
NEW_KINDS = ("judgment", "manual")
MIN_WORDS, MAX_WORDS = 150, 600
N_MANPAGES, N_READMES = 45, 15
QA_SHARE = 0.5                 # of the documents that have a question

# Licences (Debian short names, lower case, by prefix) that allow copying the text
# verbatim: a package whose copyright file names any other licence is left out.
FREE_LICENCES = (
    "gpl", "lgpl", "agpl", "bsd", "mit", "expat", "x11", "apache", "isc", "zlib",
    "public-domain", "artistic", "mpl", "bsl-1.0", "cc0", "psf", "python", "curl",
    "fsfap", "fsful", "gnu-all-permissive",
)
_README = re.compile(r"^README(\.(md|txt|rst))?(\.gz)?$")


def words(text: str) -> int:
    return len(text.split())


def cut_paragraphs(text: str, max_words: int = MAX_WORDS) -> str:
    """The leading paragraphs of ``text`` (blank-line separated) within ``max_words``."""
    out: list[str] = []
    n = 0
    for para in re.split(r"\n\s*\n", text.strip()):
        if not para.strip():
            continue
        if n + words(para) > max_words:
            break
        out.append(para.rstrip())
        n += words(para)
    return "\n\n".join(out)


# ------------------------------------------------------------------ judgments
def judgment_documents(sources: list[Path]) -> list[Document]:
    """TAB judgments cut to ``MAX_WORDS`` at a paragraph boundary, with their mentions."""
    from preflight_eval.annotated.corpus import read_tab_jsonl

    docs = []
    for path in sources:
        for d in read_tab_jsonl(path):
            text = cut_paragraphs(d.text)
            if words(text) < MIN_WORDS:
                continue
            truth: list[Truth] = []
            for m in d.mentions:
                # the cut is a prefix of the text: offsets stay valid
                if m.end <= len(text) and m.identifier in ("DIRECT", "QUASI"):
                    t = Truth(m.type, d.text[m.start:m.end])
                    if t not in truth:
                        truth.append(t)
            docs.append(Document(
                f"echr:{d.doc_id}", "judgment", "echr", text, tuple(truth),
                source=f"TAB {path.name} {d.doc_id}", licence="MIT",
                family=f"echr:{d.doc_id}", questions=judgment_questions(text)))
    return docs


def tab_sources() -> list[Path]:
    from preflight_eval.annotated.corpus import data_dir, tab_dev_file

    return [tab_dev_file(), data_dir() / "tab_test" / "echr_test_sample.jsonl"]


# ------------------------------------------------------------------ manuals
def copyright_licences(package: str,
                       doc_root: Path = Path("/usr/share/doc")) -> dict[str, Any] | None:
    """The licences of a package's machine-readable copyright file (None if it has none)."""
    path = doc_root / package / "copyright"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not re.match(r"(?i)format:", text):
        return None
    stanzas = re.split(r"\n\s*\n", text)
    names: set[str] = set()
    main, holder = None, ""
    for st in stanzas:
        lic = re.search(r"(?m)^License:[ \t]*(\S.*)$", st)
        if not lic:
            continue
        names.update(n.strip().lower() for n in re.split(r"\s+or\s+|\s+and\s+|,", lic.group(1))
                     if n.strip())
        if re.search(r"(?m)^Files:\s*\*\s*$", st):
            main = lic.group(1).strip()
            cr = re.search(r"(?m)^Copyright:[ \t]*(.*)$", st)
            holder = cr.group(1).strip() if cr else ""
    if main is None:
        return None
    return {"licence": main, "all": sorted(names), "copyright": holder,
            "copyright_file": str(path)}


def free(licences: dict[str, Any]) -> bool:
    return bool(licences["all"]) and all(
        n.startswith(FREE_LICENCES) for n in licences["all"])


def file_packages(info_dir: Path = Path("/var/lib/dpkg/info")) -> dict[str, str]:
    """Installed file path → Debian package (from dpkg's file lists)."""
    out: dict[str, str] = {}
    for lst in sorted(info_dir.glob("*.list")):
        pkg = lst.name[:-len(".list")].split(":")[0]
        for line in lst.read_text(encoding="utf-8", errors="replace").splitlines():
            out.setdefault(line, pkg)
    return out


def render_manpage(path: Path) -> str:
    """A manual page as ``man`` shows it at 80 columns, without its header/footer lines."""
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    out = subprocess.run(["man", "--nh", "--nj", "-l", str(path)], env=env, capture_output=True,
                         timeout=60, check=False)
    plain = subprocess.run(["col", "-bx"], input=out.stdout, capture_output=True, timeout=60,
                           check=False).stdout.decode("utf-8", errors="replace")
    lines = plain.strip("\n").splitlines()
    if len(lines) > 2:
        lines = lines[1:-1]          # "LS(1)  User Commands  LS(1)" and the footer
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def read_doc_file(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def _manual_candidates(kind: str, packages: dict[str, str]) -> list[tuple[str, Path]]:
    """(package, path) of every man1 page or README, sorted."""
    if kind == "manpage":
        paths = [p for p in Path("/usr/share/man/man1").glob("*.1*.gz") if not p.is_symlink()]
    else:
        paths = [p for p in Path("/usr/share/doc").glob("*/*")
                 if _README.match(p.name) and p.is_file() and not p.is_symlink()]
    out = [(packages[str(p)], p) for p in paths if str(p) in packages]
    return sorted(out, key=lambda x: str(x[1]))


def manual_documents(n_manpages: int = N_MANPAGES, n_readmes: int = N_READMES,
                     seed: int = SEED) -> list[Document]:
    """A seeded sample of manual pages and READMEs, one document per package."""
    packages = file_packages()
    used: set[str] = set()
    docs: list[Document] = []
    for kind, wanted in (("manpage", n_manpages), ("readme", n_readmes)):
        pool = _manual_candidates(kind, packages)
        random.Random(f"{seed}|{kind}").shuffle(pool)
        got = 0
        for pkg, path in pool:
            if got >= wanted:
                break
            if pkg in used:
                continue
            lic = copyright_licences(pkg)
            if lic is None or not free(lic):
                continue
            try:
                full = render_manpage(path) if kind == "manpage" else read_doc_file(path)
            except (OSError, subprocess.SubprocessError, EOFError):
                continue
            text = cut_paragraphs(full)
            if not MIN_WORDS <= words(text) <= MAX_WORDS or "\ufffd" in text:
                continue
            name = path.name.split(".")[0] if kind == "manpage" else path.name
            docs.append(Document(
                f"{'man' if kind == 'manpage' else 'readme'}:{pkg}/{name}", "manual", kind,
                text, source=str(path), licence=lic["licence"], family=f"deb:{pkg}",
                meta={"package": pkg, "copyright": lic["copyright"],
                      "licences": lic["all"], "copyright_file": lic["copyright_file"]},
                questions=manual_questions(text, name) if kind == "manpage" else ()))
            used.add(pkg)
            got += 1
    return docs


# ------------------------------------------------------------------ the committed set
def choose_qa(docs: list[Document], seed: int = SEED) -> list[Document]:
    """Keep one question on about ``QA_SHARE`` of the documents that have one (by a hash
    of the id, so the choice does not depend on the order)."""
    from dataclasses import replace

    out = []
    for d in docs:
        h = int(hashlib.sha256(f"qa|{seed}|{d.doc_id}".encode()).hexdigest()[:8], 16)
        keep = d.questions and (h % 1000) < QA_SHARE * 1000
        out.append(replace(d, questions=(d.questions[h % len(d.questions)],) if keep else ()))
    return out


def document_json(d: Document) -> dict[str, Any]:
    out = d.to_json()
    out.update(source=d.source, licence=d.licence, family=d.family, meta=d.meta,
               questions=[q.to_json() for q in d.questions])
    return out


def document_from_json(r: dict[str, Any]) -> Document:
    return Document(r["doc_id"], r["kind"], r["subkind"], r["text"],
                    tuple(Truth(t["type"], t["value"]) for t in r["truth"]),
                    source=r["source"], licence=r["licence"], family=r["family"],
                    meta=r.get("meta", {}),
                    questions=tuple(Question(**q) for q in r["questions"]))


def load_newkinds(data_dir: Path = DATA_DIR) -> list[Document]:
    """The committed documents of the new kinds (empty when the file is absent)."""
    return [document_from_json(r) for r in read_rows(Path(data_dir) / NEWKINDS_FILE)]


def licence_rows(docs: list[Document]) -> list[dict[str, str]]:
    """One row per manual's package (its copyright file) and per licence text the files
    refer to in ``/usr/share/common-licenses``; the judgments' licence is TAB's
    (``data/annotated/tab_test/LICENSE.txt``)."""
    rows, referred = [], set()
    for path in sorted({d.meta["copyright_file"] for d in docs if "copyright_file" in d.meta}):
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        rows.append({"path": path, "text": text})
        referred.update(re.findall(re.escape(str(COMMON_LICENCES)) + r"/([\w.+-]*\w)", text))
    for name in sorted(referred):
        licence = COMMON_LICENCES / name
        if licence.is_file():
            rows.append({"path": str(licence),
                         "text": licence.read_text(encoding="utf-8", errors="replace")})
    return rows


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    atomic_write_bytes(path, gzip.compress(lines.encode("utf-8"), mtime=0), mode=0o644)


def frozen_table(docs: list[Document], today: date) -> dict[str, Any]:
    return {
        "about": "The untouched test set of issue 47: documents of kinds the utility model "
                 "never trained on (court judgments, manual pages and READMEs). It must be "
                 "read ONCE, at the end of the issue, after every feature, hyper-parameter, "
                 "margin, weight and default was chosen on train/calibration or out of fold: "
                 "until then nobody computes features on these documents or reads their rows "
                 "(the generator may send them: that is data collection).",
        "frozen_on": today.isoformat(),
        "rows_file": "frozen-<cloud role>.jsonl.gz",
        "counts": {k: sum(d.kind == k for d in docs) for k in NEW_KINDS},
        "question_answering": sorted(d.doc_id for d in docs if d.questions),
        "doc_ids": sorted(d.doc_id for d in docs),
    }


def frozen_ids(data_dir: Path = DATA_DIR) -> set[str]:
    path = Path(data_dir) / FROZEN_FILE
    if not path.exists():
        return set()
    return set(json.loads(path.read_text(encoding="utf-8"))["doc_ids"])


def build(seed: int = SEED) -> Iterator[Document]:
    yield from judgment_documents(tab_sources())
    yield from manual_documents(seed=seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DATA_DIR))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--freeze", action="store_true",
                    help=f"also write {FROZEN_FILE} (refused when it exists: it is frozen)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    docs = choose_qa(list(build(args.seed)), args.seed)
    _write_rows(out / NEWKINDS_FILE, [document_json(d) for d in docs])
    _write_rows(out / LICENCES_FILE, licence_rows(docs))
    if args.freeze:
        if (out / FROZEN_FILE).exists():
            print(f"{out / FROZEN_FILE} exists: the frozen set is not rewritten")
            return 1
        atomic_write_text(out / FROZEN_FILE, json.dumps(frozen_table(docs, date.today()),
                                                        indent=1) + "\n", mode=0o644)
    print(f"{len(docs)} documents: " + ", ".join(
        f"{k} {sum(d.kind == k for d in docs)}" for k in NEW_KINDS)
        + f", {sum(bool(d.questions) for d in docs)} with a question → {out / NEWKINDS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
