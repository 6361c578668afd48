"""Names and addresses in real changelogs, against ground truth the format itself gives.

Run:  python -m preflight_eval.changelog_names [--entries 3] [--show 10] [--packages N]

Every Debian package on the machine ships ``/usr/share/doc/<package>/changelog.Debian.gz``;
each entry ends with a sign-off line ``" -- Jane Roe <jane@example.org>  Tue, 07 Oct 2025
14:22:08 +0200"`` (Debian Policy 4.4). The name and the address between ``" -- "`` and the
date are the ground truth: they come from the format, not from the detector under test.
The first ``--entries`` entries of each changelog (the bullets with their credits, "thx
…", "Thanks to …", and the sign-offs) are one document; it is sanitized under the default
policy ("Protect identifiers") as the product does it (the composition root's detector and
policy mechanism), and each signer's name and address is searched in the output
(case-folded, whitespace collapsed, as ``leak_check`` does for names and e-mails).

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
import tempfile
from dataclasses import dataclass
from pathlib import Path

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


def _folded(s: str) -> str:
    return " ".join(s.split()).casefold()


@dataclass
class Tally:
    names: int = 0
    names_out: int = 0
    addrs: int = 0
    addrs_out: int = 0
    docs: int = 0
    words: int = 0

    def line(self, label: str) -> str:
        def pct(a: int, n: int) -> str:
            return f"{100 * a / n:.1f} %" if n else "–"
        return (f"{label}: {self.docs} changelogs, {self.words:,} words; signers' names "
                f"replaced {self.names - self.names_out}/{self.names} "
                f"({pct(self.names - self.names_out, self.names)}), addresses replaced "
                f"{self.addrs - self.addrs_out}/{self.addrs} "
                f"({pct(self.addrs - self.addrs_out, self.addrs)})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=3, help="entries per changelog")
    ap.add_argument("--packages", type=int, default=0, help="first N changelogs (0: all)")
    ap.add_argument("--policy", default="identifiers")
    ap.add_argument("--show", type=int, default=10, help="print up to N names that went out")
    args = ap.parse_args(argv)
    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-changelogs-")

    from preflight.app.services import build_services
    from preflight.core.config import Settings
    from preflight.core.sanitize.base import SanitizeParams

    logs = load(args.entries, args.packages)
    if not logs:
        print(f"no changelog.Debian.gz with a person's sign-off under {DOC_ROOT}")
        return 1
    services = build_services(Settings())
    detector = services.detector()
    tallies = {"unseen": Tally(), "seen": Tally()}
    missed: list[str] = []
    for i, log in enumerate(logs):
        mech = services.mechanism(args.policy)
        out = mech.sanitize(log.text, detector.detect(log.text),
                            SanitizeParams(seed=i, epsilon=None)).text
        folded = _folded(out)
        t = tallies["seen" if log.package in SEEN else "unseen"]
        t.docs += 1
        t.words += len(log.text.split())
        for name in log.names:
            t.names += 1
            if _folded(name) in folded:
                t.names_out += 1
                missed.append(f"{log.package}: {name!r}")
        for addr in log.addresses:
            t.addrs += 1
            if _folded(addr) in folded:
                t.addrs_out += 1
                missed.append(f"{log.package}: {addr!r}")
    print(f"policy {args.policy!r}, first {args.entries} entries of each changelog, "
          f"detector {services.models.spec('ner').name}")
    print(tallies["unseen"].line("not looked at"))
    print(tallies["seen"].line(f"read while writing the rules ({', '.join(sorted(SEEN))})"))
    for line in missed[:args.show]:
        print(f"  went out: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
