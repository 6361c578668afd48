"""Names written in another script inside English text: "chaired by 王小明", "our
contact Иван Петров", "the claimant محمد بن سلمان", "राहुल शर्मा joined".

The English NER model reads such words as firms, places or nothing. In a line of Latin
text, a short run of words in a script without capitals (Chinese, Japanese, Korean,
Arabic, Hebrew, Devanagari, Thai) or of capitalized words in Cyrillic or Greek is most
often a person's name, else a firm or a place: protected as a name, since a wrong type
here costs less than a name sent. A run counts only beside a word in Latin letters on its
line; whole sentences in those scripts (longer runs, lines of their own) are left to the
other rules.
"""

from __future__ import annotations

import re

from preflight.core.pii.name_shapes import CYRILLIC_GREEK_LO, CYRILLIC_GREEK_UP
from preflight.core.pii.recognizers.base import make_result
from preflight.core.pii.recognizers.names import PersonRecognizer
from preflight.core.types import Evidence

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_RTL_INDIC = "\u0590-\u05ff\u0600-\u06ff\u0750-\u077f\u0900-\u097f\u0980-\u09ff\u0e00-\u0e7f"
# a name in CJK: two to four characters (a family name and a given name), or two such
# words; in Arabic, Hebrew, Indic or Thai script: one to four words; in Cyrillic or
# Greek: one to three capitalized words
_CYR_GREEK_WORD = (rf"[{CYRILLIC_GREEK_UP}][{CYRILLIC_GREEK_LO}]+"
                   rf"(?:-[{CYRILLIC_GREEK_UP}][{CYRILLIC_GREEK_LO}]+)?")
_RUNS = re.compile(
    rf"(?<![{_CJK}])[{_CJK}]{{2,4}}(?:[ \u3000][{_CJK}]{{1,3}})?(?![{_CJK}])"
    rf"|(?<![{_RTL_INDIC}\w])[{_RTL_INDIC}]{{2,14}}(?:[ \t][{_RTL_INDIC}]{{2,14}}){{0,3}}"
    rf"(?![{_RTL_INDIC}\w])"
    rf"|(?<![\w]){_CYR_GREEK_WORD}(?:[ \t]+{_CYR_GREEK_WORD}){{0,2}}"
    rf"(?![\w])")
# the nearest word before or after a run, on its line, is a word in Latin letters
_LATIN_BEFORE = re.compile(r"[A-Za-zÀ-ɏ][\w'’.-]*[^\w\n]{1,3}$")
_LATIN_AFTER = re.compile(r"[^\w\n]{1,3}[A-Za-zÀ-ɏ]")


class ScriptNameRecognizer(PersonRecognizer):
    """Short runs of another script inside a line of English text (module docstring)."""

    evidence = Evidence.RULE

    WHY = "Written in another script inside English text, as names are"

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if (entities and "PERSON" not in entities) or text.isascii():
            return []
        out = []
        for m in _RUNS.finditer(text):
            if (_LATIN_BEFORE.search(text, max(0, m.start() - 40), m.start())
                    or _LATIN_AFTER.match(text, m.end())):
                out.append(make_result(self, "PERSON", m.start(), m.end(), 0.6, self.WHY))
        return out
