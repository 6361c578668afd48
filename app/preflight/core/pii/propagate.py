"""Value propagation: once a value is detected somewhere, every other occurrence in the
document is covered too (a name tagged in the greeting but not in the signature must not
leak), and so are the parts of a person's name written alone — also where the NER model
read those words as a place, a firm or a group ("Hemus said…" beside the person "Solly
Hemus": the copy outranks the model's guess when overlaps are resolved). Every kind of value is
propagated, quasi-identifiers too: a nationality or a weekday the model reads in one
sentence and not in the next is protected at both under a policy that protects its kind,
as the re-scan (which blocks a value classified anywhere) requires.

The search runs once over the whole document after detection (so it also links values
across detection windows); the patterns are tries, so the cost does not grow with the
number of values.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence

from preflight.core.pii.cleaning import NAME_AFFIXES, NOT_NAMES, alone_on_line
from preflight.core.pii.overlaps import CoveringRanges
from preflight.core.types import Evidence, Span

PROPAGATED = "PropagatedValue"
#: Types of the NER model's spans a person's name copied onto the same words outranks.
_RETYPABLE = frozenset({"ORGANIZATION", "LOCATION", "NRP"})
_NAME_PART = re.compile(r"[^\W\d_][\w'’-]*")
_WS = re.compile(r"\s+")
_LOWER_WORD = re.compile(r"(?<!\w)[a-zß-öø-ÿ][\w'’-]*(?!\w)")


def trie_regex(terms: Iterable[str], fold: bool = True, literal: bool = False,
               atom: Callable[[str], str] | None = None) -> str | None:
    """A regex source matching any of ``terms`` (longest first, like a sorted
    alternation), factored as a trie so matching cost does not grow with their number.
    A space in a term matches any run of whitespace, unless ``literal`` (every character
    as written) or ``atom`` (the regex of each character) says otherwise. With ``fold``
    the trie merges terms by lower case: compile it with re.IGNORECASE."""
    root: dict = {}
    for term in terms:
        chars = term if literal else " ".join(term.split())
        if not chars:
            continue
        node = root
        for ch in chars:
            node = node.setdefault(ch.lower() if fold else ch, {})
        node[""] = {}
    if not root:
        return None
    if atom is not None:
        return _trie_source(root, lambda run: "".join(map(atom, run)))
    return _trie_source(root, re.escape if literal else _spaced)


def _spaced(run: str) -> str:
    """A run of characters as a regex, a space matching any run of whitespace
    (``re.escape`` writes a space as a backslash and a space, the only space it
    writes)."""
    return re.escape(run).replace("\\ ", r"\s+")


def _trie_source(root: dict, literal: Callable[[str], str]) -> str:
    """The regex of a trie, built bottom-up without recursion: a detected value can be
    thousands of characters long (a key block, a pasted log line), deeper than Python's
    call stack. Runs of single-child nodes become one literal (``literal``: the regex of
    a run of characters), so the pattern nests only where terms branch or end."""
    def chain(ch: str, child: dict) -> tuple[str, dict]:
        chars = [ch]
        while len(child) == 1 and "" not in child:   # one way on: no branch, no end
            (ch, child), = child.items()
            chars.append(ch)
        return literal("".join(chars)), child

    done: dict[int, str] = {}
    stack: list[tuple[dict, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        edges = [chain(ch, child) for ch, child in sorted(node.items()) if ch]
        if not children_done:
            stack.append((node, True))
            stack.extend((end, False) for _literal, end in edges)
            continue
        alts = [literal + done[id(end)] for literal, end in edges]
        body = "" if not alts else alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        done[id(node)] = f"(?:{body})?" if body and "" in node else body
    return done[id(root)]


def _uncased_script(part: str) -> bool:
    """Written in a script without capitals (Chinese, Arabic, Hebrew, Thai, Devanagari...)."""
    return all(c.isalpha() and not c.isupper() and not c.islower() for c in part)


def _boundless(part: str) -> bool:
    """Chinese, Japanese and Korean names are written without spaces between words."""
    return all(unicodedata.name(c, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))
               for c in part)


def name_parts(value: str) -> list[str]:
    """Parts of a person's name that are worth finding alone: capitalized parts of three
    letters or more, parts in scripts without capitals, and for a CJK name written as one
    word its given name (the characters after the one-character family name)."""
    parts = []
    for m in _NAME_PART.finditer(value):
        part = m.group()
        if part.lower() in NOT_NAMES or part.lower() in NAME_AFFIXES:
            continue
        if _boundless(part):
            if len(part) >= 2 and part != value.strip():
                parts.append(part)
            elif len(part) >= 3:
                parts.append(part[1:])
        elif _uncased_script(part):
            if len(part) >= 2:
                parts.append(part)
        elif len(part) >= 3 and part[0].isupper():
            parts.append(part)
    return parts


def propagate_values(text: str, spans: list[Span], allowed: set[str] = frozenset(),
                     within: Sequence[tuple[int, int]] | None = None) -> list[Span]:
    """Spans for every other whole-word occurrence of a detected value.

    Matching ignores case and runs of whitespace. For person names, the parts returned by
    :func:`name_parts` are propagated too, where they appear capitalized (or in their
    uncased script). Returned spans may overlap the input; the caller resolves overlaps.
    With ``within`` (sorted, disjoint ranges), only occurrences inside one of them.
    """
    by_value: dict[str, Span] = {}
    parts: dict[str, Span] = {}
    for span in spans:
        value = text[span.start:span.end].strip()
        if len(value) < 2 or value.casefold() in allowed:
            continue
        key = _WS.sub(" ", value).casefold()
        best = by_value.get(key)
        if best is None or span.score > best.score:
            by_value[key] = span
        if span.type == "PERSON":
            for part in name_parts(value):
                if part.casefold() not in allowed:
                    parts.setdefault(part, span)
    found: list[Span] = []
    seen = {(s.start, s.end) for s in spans}
    # a place, firm or group only the NER model saw, where the name of a person stands
    # ("Hemus said…" beside "Solly Hemus"): the person's copy competes for it
    retypable = {(s.start, s.end) for s in spans
                 if s.type in _RETYPABLE and Evidence.STATISTICAL in s.evidence}
    retypable -= {(s.start, s.end) for s in spans
                  if s.type not in _RETYPABLE or Evidence.STATISTICAL not in s.evidence}
    by_type: dict[str, list[tuple[int, int]]] = {}
    for s in spans:
        by_type.setdefault(s.type, []).append((s.start, s.end))
    covered = {t: CoveringRanges(ranges) for t, ranges in by_type.items()}

    def matches(pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
        if within is None:
            yield from pattern.finditer(text)
            return
        for a, b in within:
            # one character past the range, so a match's look-ahead sees what follows it
            yield from (m for m in pattern.finditer(text, a, b + 1) if m.end() <= b)

    def add(pattern: re.Pattern[str], lookup: Callable[[str], Span | None],
            case_sensitive: bool) -> None:
        for m in matches(pattern):
            at = (m.start(), m.end())
            if at in seen and at not in retypable:
                continue
            key = m.group() if case_sensitive else _WS.sub(" ", m.group()).casefold()
            source = lookup(key)
            if source is None or (case_sensitive and m.group()[0].islower()
                                  and not alone_on_line(text, m.start(), m.end())):
                continue          # "will", "mark" in prose; a sign-off "-tom" is the name
            if at in seen and source.type != "PERSON":
                continue
            retypable.discard(at)
            inside = covered.get(source.type)
            if inside is not None and inside.contains(m.start(), m.end()):
                continue  # already inside a detection of that type
            seen.add((m.start(), m.end()))
            label = source.type.replace("_", " ").lower()
            found.append(Span(
                m.start(), m.end(), source.type, source.category,
                round(source.score * 0.95, 4), PROPAGATED,
                f"Same {'name' if case_sensitive else 'value'} as a {label} detected "
                "elsewhere in this document", Evidence.COPY,
            ))

    sources = [text[s.start:s.end].strip() for s in by_value.values()]
    for terms, case_sensitive in ((sources, False), (list(parts), True)):
        lookup = parts.get if case_sensitive else by_value.get
        for whole_words in (True, False):  # CJK text has no spaces that mark words
            source = trie_regex([t for t in terms if _boundless(t) != whole_words],
                                fold=not case_sensitive)
            if source is None:
                continue
            if whole_words:
                source = rf"(?<![\w])(?:{source})(?![\w])"
            add(re.compile(source, 0 if case_sensitive else re.IGNORECASE), lookup,
                case_sensitive)
    if parts:  # a name part written in lower case alone on its line: a sign-off
        signed = {p.casefold(): s for p, s in parts.items()}
        add(_LOWER_WORD, lambda word: signed.get(word.casefold()), True)
    return found

