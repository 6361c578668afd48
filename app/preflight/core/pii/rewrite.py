"""Offset-preserving text rewriting for :mod:`preflight.core.pii.canonical`.

A :class:`View` is a text plus, for every character, the range of the original text it
came from (None = the original itself). :func:`rewrite` applies a regex-driven edit and
composes the mapping, so a chain of rewrites still maps back to the original.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

@dataclass(frozen=True)
class View:
    text: str
    starts: array | None
    ends: array | None


# An op rewrites part of a match: (a, b, None) keeps text[a:b] with its own mapping;
# (a, b, s) emits s, every character of it mapped to the range text[a:b] came from.
# Parts of the match no op mentions are deleted.
Op = tuple[int, int, "str | None"]


class _Builder:
    def __init__(self, view: View) -> None:
        self.view = view
        self.parts: list[str] = []
        self.starts = array("q")
        self.ends = array("q")

    def keep(self, a: int, b: int) -> None:
        if a >= b:
            return
        v = self.view
        self.parts.append(v.text[a:b])
        if v.starts is None:
            self.starts.extend(range(a, b))
            self.ends.extend(range(a + 1, b + 1))
        else:
            self.starts.extend(v.starts[a:b])
            self.ends.extend(v.ends[a:b])

    def emit(self, s: str, a: int, b: int) -> None:
        if not s:
            return
        v = self.view
        lo = a if v.starts is None else v.starts[a]
        hi = b if v.ends is None else v.ends[b - 1]
        self.parts.append(s)
        self.starts.extend([lo] * len(s))
        self.ends.extend([hi] * len(s))

    def result(self) -> View:
        return View("".join(self.parts), self.starts, self.ends)


def rewrite(view: View, pattern: re.Pattern[str],
             fn: Callable[[re.Match[str]], Sequence[Op] | None], retry: bool = False) -> View:
    """Apply ``fn`` to every match; unchanged when no match asks for a change. With
    ``retry``, a match ``fn`` declines is searched again from its next character."""
    builder: _Builder | None = None
    pos = 0
    m = pattern.search(view.text)
    while m is not None:
        ops = fn(m)
        if ops is None:
            m = pattern.search(view.text, m.start() + 1 if retry else m.end())
            continue
        if builder is None:
            builder = _Builder(view)
        builder.keep(pos, m.start())
        for a, b, s in ops:
            if s is None:
                builder.keep(a, b)
            else:
                builder.emit(s, a, b)
        pos = m.end()
        m = pattern.search(view.text, max(pos, m.start() + 1))
    if builder is None:
        return view
    builder.keep(pos, len(view.text))
    return builder.result()


