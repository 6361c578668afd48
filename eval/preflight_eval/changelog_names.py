"""Names and addresses in real changelogs, against ground truth the format itself gives.

Run:  python -m preflight_eval.changelog_names [--entries 3] [--show 10] [--packages N]

Every Debian package on the machine ships ``/usr/share/doc/<package>/changelog.Debian.gz``;
each entry ends with a sign-off line ``" -- Jane Roe <jane@example.org>  Tue, 07 Oct 2025
14:22:08 +0200"`` (Debian Policy 4.4). The name and the address between ``" -- "`` and the
date are the ground truth: they come from the format, not from the detector under test.
The first ``--entries`` entries of each changelog (the bullets with their credits, "thx
…", "Thanks to …", and the sign-offs) are one document; it is sanitized under the default
policy ("Protect identifiers") as the product does it (the composition root's detector and
policy mechanism), and each signer's name and address is searched in the output as a whole word
(case-folded, whitespace collapsed).

Packages whose changelogs were read while writing the rules they exercise (session 16:
git, curl, imagemagick, xorg-server's xvfb) are reported apart; the rest were not looked
at. The set of packages is whatever this machine has installed, so the count is printed
with the numbers.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DOC_ROOT = Path("/usr/share/doc")
#: changelogs read while the changelog rules were written (reported apart)
SEEN = frozenset({"git", "curl", "imagemagick", "xvfb"})
_SIGN_OFF = re.compile(r"(?m)^ -- (?P<name>[^<\n]*?\S) <(?P<addr>[^<>\s]+@[^<>\s]+)>  ")
#: sign-offs that name a team or a bot, not a person
_NOT_PERSON = re.compile(r"(?i)\b(?:team|maintainers?|project|group|debian|ubuntu|"
                         r"packagers?|bot|robot|janitor|autobuilder|qa|security|"
                         r"release|admin|lts)\b")


@dataclass(frozen=True)
class Changelog:
    package: str
    text: str
    names: tuple[str, ...]        # signers that are people (ground truth)
    addresses: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.package


def load(entries: int, limit: int = 0) -> list[Changelog]:
    """The first ``entries`` entries of every readable changelog with a person's sign-off."""
    out = []
    for path in sorted(DOC_ROOT.glob("*/changelog.Debian.gz")):
        try:
            raw = gzip.decompress(path.read_bytes()).decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        ends = [m.end() for m in re.finditer(r"(?m)^ -- .*$", raw)][:entries]
        if not ends:
            continue
        text = raw[:ends[-1]] + "\n"
        signs = list(_SIGN_OFF.finditer(text))
        names = tuple(dict.fromkeys(m["name"] for m in signs
                                    if not _NOT_PERSON.search(m["name"])))
        if not names:
            continue
        addrs = tuple(dict.fromkeys(m["addr"] for m in signs))
        out.append(Changelog(path.parent.name, text, names, addrs))
        if limit and len(out) >= limit:
            break
    return out


def folded(s: str) -> str:
    return " ".join(s.split()).casefold()


@dataclass
class Tally:
    names: int = 0
    names_out: int = 0
    addrs: int = 0
    addrs_out: int = 0
    docs: int = 0
    words: int = 0

    def line(self, label: str, docs: str = "changelogs", whose: str = "signers' names") -> str:
        def pct(a: int, n: int) -> str:
            return f"{100 * a / n:.1f} %" if n else "–"
        return (f"{label}: {self.docs} {docs}, {self.words:,} words; {whose} "
                f"replaced {self.names - self.names_out}/{self.names} "
                f"({pct(self.names - self.names_out, self.names)}), addresses replaced "
                f"{self.addrs - self.addrs_out}/{self.addrs} "
                f"({pct(self.addrs - self.addrs_out, self.addrs)})")


def went_out(value: str, output: str) -> bool:
    """``value`` stands in the folded ``output`` as a whole word ("Ann" is not in
    "announce")."""
    return re.search(rf"(?<!\w){re.escape(folded(value))}(?!\w)", output) is not None


def score(docs: list, policy: str, seen: Callable[[Any], bool]
          ) -> tuple[dict[str, Tally], list[str], str] | None:
    """Sanitize every document (``.text``, ``.names``, ``.addresses``, ``.label``) as the
    product does it under ``policy`` and count what went out, apart for the documents
    ``seen`` while writing the rules. None (the reason on stderr) when the detector runs
    degraded: a missing NER model would make every number the rules' alone."""
    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.sanitize.base import SanitizeParams

    services = build_services(Settings())     # the defaults, not this user's settings
    detector = services.detector()
    detector.load()
    if detector.warnings:
        print("the detector is degraded:", *detector.warnings, file=sys.stderr)
        return None
    tallies = {"unseen": Tally(), "seen": Tally()}
    missed: list[str] = []
    for i, doc in enumerate(docs):
        mech = services.mechanism(policy)
        output = folded(mech.sanitize(doc.text, detector.detect(doc.text),
                                      SanitizeParams(seed=i, epsilon=None)).text)
        t = tallies["seen" if seen(doc) else "unseen"]
        t.docs += 1
        t.words += len(doc.text.split())
        for value in doc.names:
            gone = went_out(value, output)
            t.names, t.names_out = t.names + 1, t.names_out + gone
            missed += [f"{doc.label}: {value!r}"] if gone else []
        for value in doc.addresses:
            gone = went_out(value, output)
            t.addrs, t.addrs_out = t.addrs + 1, t.addrs_out + gone
            missed += [f"{doc.label}: {value!r}"] if gone else []
    return tallies, missed, services.models.spec("ner").name


def report(docs: list, policy: str, seen: Callable[[Any], bool], seen_names: str,
           read: str, units: tuple[str, str], show: int) -> int:
    """Score ``docs`` (:func:`score`) and print the two tallies and what went out; the exit
    code (1 when the detector is degraded). ``read``: what of each document was read;
    ``units``: how documents and names are called."""
    scored = score(docs, policy, seen)
    if scored is None:
        return 1
    tallies, missed, ner = scored
    print(f"policy {policy!r}, {read}, detector {ner}")
    print(tallies["unseen"].line("not looked at", *units))
    print(tallies["seen"].line(f"read while writing the rules ({seen_names})", *units))
    for line in missed[:show]:
        print(f"  went out: {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=3, help="entries per changelog")
    ap.add_argument("--packages", type=int, default=0, help="first N changelogs (0: all)")
    ap.add_argument("--policy", default="identifiers")
    ap.add_argument("--show", type=int, default=10, help="print up to N names that went out")
    args = ap.parse_args(argv)
    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-changelogs-")

    logs = load(args.entries, args.packages)
    if not logs:
        print(f"no changelog.Debian.gz with a person's sign-off under {DOC_ROOT}")
        return 1
    return report(logs, args.policy, lambda log: log.package in SEEN, ", ".join(sorted(SEEN)),
                  f"first {args.entries} entries of each changelog",
                  ("changelogs", "signers' names"), args.show)


if __name__ == "__main__":
    raise SystemExit(main())
