"""Copyright holders in real Debian copyright files, against ground truth from the layout.

Run:  python -m preflight_eval.copyright_names [--lines 400] [--show 10]

Every package on the machine ships ``/usr/share/doc/<package>/copyright``; those in the
machine-readable format (first line ``Format: …``) name their holders in ``Copyright:``
fields, with or without an address: ``Copyright: 2008 Andy Polyakov <appro@openssl.org>``
beside ``1995 Patrick Powell``. The ground truth needs no detector:

* a *person* is a name written ``Name <address>`` in some file's ``Copyright:`` field
  (two to four words; entries naming a team, a list or a company left out), and
* the values counted are those names where a ``Copyright:`` field writes them **without**
  an address (a bare holder: nothing vouches for them but the model and the rules), with
  the addresses of those fields.

Each file (its first ``--lines`` lines; identical files read once) is one document,
sanitized under the default policy by the composition root's detector and policy
mechanism, and each value is searched in the output as a whole word. Files read while
writing the rules are reported apart (:data:`SEEN`); the set of files is whatever this
machine has installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from preflight_eval.changelog_names import report
from preflight_eval.credits_names import _NOT_A_PERSON, DOC_ROOT

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: files read while the rules were written (session 18: git's and libssl3's)
SEEN = ("git", "libssl3")
_FIELD = re.compile(r"(?m)^Copyright:[^\n]*(?:\n[ \t]+[^\n]*)*")
_NAME = r"[^\W\d_][\w.'’-]*(?:[ \t][^\W\d_][\w.'’-]*){1,3}"
_ADDRESSED = re.compile(rf"(?P<name>{_NAME})[ \t]*<(?P<addr>[^<>\s]+@[^<>\s]+)>")
_ADDRESS = re.compile(r"<([^<>\s]+@[^<>\s]+)>")
#: words of a field's boilerplate that the name pattern can pick up before an address
_BOILERPLATE = re.compile(r"(?i)\b(?:rights|reserved|copyright|others|contributors|authors|"
                          r"project|team|the)\b")


@dataclass(frozen=True)
class CopyrightFile:
    package: str
    text: str
    names: tuple[str, ...]          # persons written here without an address
    addresses: tuple[str, ...]      # the addresses of this file's Copyright fields

    @property
    def label(self) -> str:
        return self.package


def _files(lines: int) -> dict[str, str]:
    out: dict[str, str] = {}
    digests: set[str] = set()
    for path in sorted(DOC_ROOT.glob("*/copyright")):
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not raw.startswith("Format:"):
            continue
        text = "".join(raw.splitlines(keepends=True)[:lines])
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest not in digests:
            digests.add(digest)
            out[path.parent.name] = text
    return out


def persons(texts: list[str]) -> set[str]:
    """Names written ``Name <address>`` in a Copyright field of any of ``texts``."""
    found = set()
    for text in texts:
        for field in _FIELD.finditer(text):
            for m in _ADDRESSED.finditer(field.group()):
                name = " ".join(m["name"].split())
                if not (_NOT_A_PERSON.search(name) or _BOILERPLATE.search(name)):
                    found.add(name)
    return found


def load(lines: int, limit: int = 0) -> list[CopyrightFile]:
    """The machine-readable copyright files where a person is written without address."""
    texts = _files(lines)
    names = persons(list(texts.values()))
    if not names:
        return []
    bare = re.compile(r"(?<![\w-])(" + "|".join(
        re.escape(n).replace(r"\ ", r"[ \t]+") for n in sorted(names, key=len, reverse=True))
        + r")(?![\w-])(?![ \t]*<)")
    out = []
    for package, text in texts.items():
        fields = [f.group() for f in _FIELD.finditer(text)]
        found = tuple(dict.fromkeys(" ".join(m.group(1).split())
                                    for f in fields for m in bare.finditer(f)))
        if found:
            addrs = tuple(dict.fromkeys(a for f in fields for a in _ADDRESS.findall(f)))
            out.append(CopyrightFile(package, text, found, addrs))
            if limit and len(out) >= limit:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=400, help="lines read per file")
    ap.add_argument("--files", type=int, default=0, help="first N files (0: all)")
    ap.add_argument("--policy", default="identifiers")
    ap.add_argument("--show", type=int, default=10, help="print up to N values that went out")
    args = ap.parse_args(argv)
    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-copyright-")

    files = load(args.lines, args.files)
    if not files:
        print(f"no machine-readable copyright file naming a person without address "
              f"under {DOC_ROOT}")
        return 1
    return report(files, args.policy, lambda f: f.package.startswith(SEEN), ", ".join(SEEN),
                  f"first {args.lines} lines of each file",
                  ("files", "holders without address"), args.show)


if __name__ == "__main__":
    raise SystemExit(main())
