"""Names and addresses in real AUTHORS and THANKS files, against ground truth from the layout.

Run:  python -m preflight_eval.credits_names [--lines 300] [--show 10]

Many packages on the machine ship a list of their people under ``/usr/share/doc/<package>/``
(``AUTHORS``, ``THANKS``, ``CREDITS``, ``CONTRIBUTORS``, ``MAINTAINERS``, plain or gzipped).
Two layouts give a person and an address without asking the detector:

* a line that is only ``Name <address>`` (a bullet before it allowed), where the address
  holds an ``@`` or is spelled with spaces (``<brad example com>``);
* a line that is a name, a column gap (two or more spaces, or a tab) and an address.

Those names and addresses are the ground truth. Each file (its first ``--lines`` lines;
packages that ship the same file are read once) is one document, sanitized under the
default policy by the composition root's detector and policy mechanism, and each name
and address is searched in the output as a whole word (case-folded, whitespace collapsed).
Entries that name a team, a list or a company (:data:`_NOT_A_PERSON`) are not counted as
names. Files read while writing the rules they exercise are reported apart
(:data:`SEEN`); the set of files is whatever this machine has installed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from preflight_eval.changelog_names import _NOT_PERSON, report

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DOC_ROOT = Path("/usr/share/doc")
KINDS = ("AUTHORS", "THANKS", "CREDITS", "CONTRIBUTORS", "MAINTAINERS")
#: files read while the rules were written (session 16: coreutils' THANKS; session 17:
#: adwaita-icon-theme's and dbus' AUTHORS)
SEEN = ("adwaita-icon-theme", "coreutils", "dbus")

_NAME = r"[^\W\d_][\w.'’-]*(?:[ \t][^\W\d_][\w.'’-]*){0,4}"
_BRACKETED = re.compile(
    rf"(?m)^[ \t]*(?:[-*•][ \t]+)?(?P<name>{_NAME})[ \t]*<(?P<addr>[^<>\n]+)>[ \t]*$")
_COLUMN = re.compile(
    rf"(?m)^[ \t]*(?P<name>{_NAME})(?:[ \t]{{2,}}|\t)<?(?P<addr>[^\s<>@]+@[^\s<>]+?)>?[ \t]*$")
#: entries that name a team, a list or a project rather than a person
_NOT_A_PERSON = re.compile(rf"{_NOT_PERSON.pattern}|(?i:\b(?:lists?|mailing|developers|"
                           r"contributors|foundation|inc|ltd|corporation)\b)")
_SPACED_ADDRESS = re.compile(r"[\w.+-]+(?: [\w-]+){2,5}")


def _is_address(addr: str) -> bool:
    addr = addr.strip()
    if "@" in addr:
        return " " not in addr
    return bool(_SPACED_ADDRESS.fullmatch(addr)) and addr.rsplit(" ", 1)[-1].isalpha()


@dataclass(frozen=True)
class CreditsFile:
    package: str
    kind: str
    text: str
    names: tuple[str, ...]
    addresses: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.package}/{self.kind}"


def _read(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def load(lines: int, limit: int = 0) -> list[CreditsFile]:
    """Every readable credits file with at least one person's line, first ``lines`` lines."""
    out, seen_texts = [], set()
    paths = sorted(p for kind in KINDS for p in DOC_ROOT.glob(f"*/{kind}*") if p.is_file())
    for path in paths:
        raw = _read(path)
        if raw is None:
            continue
        text = "".join(raw.splitlines(keepends=True)[:lines])
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen_texts:
            continue            # dbus-bin, dbus-daemon… ship the same AUTHORS
        seen_texts.add(digest)
        pairs = [(m["name"].strip(), m["addr"].strip())
                 for pattern in (_BRACKETED, _COLUMN) for m in pattern.finditer(text)
                 if _is_address(m["addr"])]
        names = tuple(dict.fromkeys(n for n, _ in pairs if not _NOT_A_PERSON.search(n)))
        if not names:
            continue
        addrs = tuple(dict.fromkeys(a for _, a in pairs))
        kind = path.name.split(".")[0]
        out.append(CreditsFile(path.parent.name, kind, text, names, addrs))
        if limit and len(out) >= limit:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=300, help="lines read per file")
    ap.add_argument("--files", type=int, default=0, help="first N files (0: all)")
    ap.add_argument("--policy", default="identifiers")
    ap.add_argument("--show", type=int, default=10, help="print up to N values that went out")
    args = ap.parse_args(argv)
    os.environ["PREFLIGHT_HOME"] = tempfile.mkdtemp(prefix="preflight-credits-")

    files = load(args.lines, args.files)
    if not files:
        print(f"no AUTHORS/THANKS file with a person's line under {DOC_ROOT}")
        return 1
    return report(files, args.policy, lambda f: f.package.startswith(SEEN), ", ".join(SEEN),
                  f"first {args.lines} lines of each file", ("files", "names"), args.show)


if __name__ == "__main__":
    raise SystemExit(main())
