"""Web addresses that end where their host ends, and the company's internal host names.

Presidio's URL pattern ends at the first known top-level domain it meets, wherever that
is inside a label: "http://intranet.northwind.local" was the URL "http://intranet.no"
(``.no`` is Norway) and placeholders left "<URL_1>rthwind.local" in the payload.
:class:`WholeHostUrlRecognizer` keeps Presidio's pattern but lets a top-level domain
count only where the host really ends.

Internal names point at one company's machines ("build-07.corp.example.local" says who
the company is and how its network is built): :class:`InternalHostRecognizer` finds host
names under the suffixes of private networks (``.local``, ``.corp``, ``.internal``,
``.lan``, ``.intranet``, ``.home.arpa``…), the host of a URL whose name is no public
domain (``http://wiki/``, ``https://jenkins:8080/``, ``http://gitlab.northwind/``; the
offline public-suffix list decides) and the server of a Windows share (``\\\\fs01\\hr``).
The span is the whole host name, never the scheme, a password or the path around it.
"""

from __future__ import annotations

import re

from presidio_analyzer import EntityRecognizer, Pattern, PatternRecognizer
from presidio_analyzer.predefined_recognizers import UrlRecognizer

from preflight.core.pii.recognizers.base import make_result
from preflight.core.pii.suffixes import INTERNAL_SUFFIXES, offline_extractor
from preflight.core.types import Evidence

#: Where a host name ends: not inside a label, not before another label.
HOST_END = r"(?![a-z0-9\-]|\.[a-z0-9])"
_TLD_GROUP_END = r"))(?:/[^\s()<>\"']*)?)"


def _whole_host(pattern: str) -> str:
    """Presidio's URL pattern with the end of the host required after its TLD (and a
    port allowed there), and a path that does not swallow the sentence's punctuation."""
    if _TLD_GROUP_END not in pattern:     # a Presidio release changed its pattern
        raise RuntimeError("Presidio's URL pattern changed; update WholeHostUrlRecognizer")
    return pattern.replace(_TLD_GROUP_END, "))" + HOST_END + r"(?::\d{1,5})?"
                           r"(?:/(?:[^\s()<>\"']*[^\s()<>\"'.,;:!?])?)?)")


class WholeHostUrlRecognizer(PatternRecognizer):
    """Presidio's URL recognizer whose matches never stop inside a host name.

    Registered under Presidio's name, so its "why" line stays."""

    evidence = Evidence.RULE

    def __init__(self) -> None:
        base = _whole_host(UrlRecognizer.BASE_URL_REGEX)
        left = r"(?<![a-z0-9\-.@])"
        patterns = [
            Pattern("Standard Url", r"(?i)(?:https?://)" + base, 0.6),
            Pattern("Non schema URL", r"(?i)" + left + base, 0.5),
            Pattern("Quoted URL", r'(?i)["\'](https?://' + base + r')["\']', 0.6),
            Pattern("Quoted Non-schema URL", r'(?i)["\'](' + base + r')["\']', 0.5),
        ]
        super().__init__(supported_entity="URL", patterns=patterns,
                         context=list(UrlRecognizer.CONTEXT), supported_language="en",
                         name="UrlRecognizer")

    def analyze(self, text, entities, nlp_artifacts=None, regex_flags=None):  # noqa: D102
        # every pattern ends its host in a dot and a top-level domain: a text with no dot
        # before a letter is not scanned (the non-schema pattern tries every word)
        if _DOT_LETTER.search(text) is None:
            return []
        return super().analyze(text, entities, nlp_artifacts, regex_flags)


_DOT_LETTER = re.compile(r"\.[a-z]", re.IGNORECASE)


_LABEL = r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?"
_SUFFIXES = "|".join(re.escape(s) for s in sorted(INTERNAL_SUFFIXES, key=len, reverse=True))
# a host under an internal suffix, anywhere ("build-07.corp.example.local")
_INTERNAL_NAME = re.compile(
    r"(?<![\w.@\-])((?:" + _LABEL + r"\.)+(?:" + _SUFFIXES + r"))" + HOST_END, re.IGNORECASE)
# the host of a URL with a scheme (and maybe user:password@)
_URL_HOST = re.compile(
    r"\b[a-z][a-z0-9+.\-]{1,20}://(?:[^\s/@]+@)?(" + _LABEL + r"(?:\." + _LABEL + r")*)"
    r"(?=[:/?#\s)\]>\"',;]|$)", re.IGNORECASE)
# the server of a Windows share: \\fs01\hr
_UNC_HOST = re.compile(r"(?<![\w\\])\\\\(" + _LABEL + r"(?:\." + _LABEL + r")*)\\",
                       re.IGNORECASE)
#: Names that are no company's machine.
NOT_COMPANY_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost",
                               "broadcasthost"})
_NUMERIC = re.compile(r"[\d.]+")


def _internal_suffix(host: str) -> bool:
    """Whether ``host`` is one label ("wiki": a top-level domain alone is no web site), or
    ends in a private-network suffix or in none the public list knows."""
    if "." not in host:
        return True
    parts = offline_extractor()(host)
    return not parts.suffix or parts.suffix.casefold() in INTERNAL_SUFFIXES


def _package_name(host: str) -> bool:
    """A reverse-domain code name ("com.example.internal", "org.acme.lan"): its first
    label is a public top-level domain."""
    first = host.split(".", 1)[0].casefold()
    return host.count(".") >= 2 and offline_extractor()(f"x.{first}").suffix == first


class InternalHostRecognizer(EntityRecognizer):
    """Host names of a company's own network (see the module docstring)."""

    evidence = Evidence.RULE

    WHY = ("An internal host name (a private-network suffix such as .local, .corp or "
           ".internal): it names the company's machines")
    URL_WHY = "The host of a web address that is no public domain: an intranet machine"
    SHARE_WHY = "The server of a Windows network share"

    def __init__(self, name: str | None = None) -> None:
        super().__init__(supported_entities=["INTERNAL_HOST"], name=name,
                         supported_language="en")

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102 (Presidio API)
        if entities and "INTERNAL_HOST" not in entities:
            return []
        found: dict[tuple[int, int], str] = {}
        for m in _INTERNAL_NAME.finditer(text):
            if not _package_name(m.group(1)):
                found[m.span(1)] = self.WHY
        for m in _URL_HOST.finditer(text):
            host = m.group(1)
            if host.casefold() in NOT_COMPANY_HOSTS or _NUMERIC.fullmatch(host):
                continue
            if _internal_suffix(host):
                found.setdefault(m.span(1), self.URL_WHY)
        for m in _UNC_HOST.finditer(text):
            if not _NUMERIC.fullmatch(m.group(1)):
                found.setdefault(m.span(1), self.SHARE_WHY)
        return [make_result(self, "INTERNAL_HOST", start, end, 0.8, why)
                for (start, end), why in sorted(found.items())]


__all__ = ["HOST_END", "InternalHostRecognizer", "NOT_COMPANY_HOSTS", "WholeHostUrlRecognizer"]
