"""Detection speed of this checkout against an earlier commit, both in one process.

Run:  python -m preflight_eval.bench_detect_versions REV [--rounds 7] [--mode one|two]
          [--corpora tab mail paper] [--spam-cache DIR]

This virtual machine's speed moves by half within minutes, so two benchmark runs minutes
apart cannot tell a 10 % change from the noise. Here the detector of commit ``REV``
(``app/preflight`` extracted with ``git archive`` into a temporary folder and imported
as ``preflight_old``) and this checkout's detector are loaded side by side, over the same
NER model, and detect the same documents in turn, document by document, the order
swapped each round; each round gives the ratio new / old of the two sums, which the same
moment's load hits alike. Prints, per corpus, the median ms per 1,000 words of each and
the median ratio with its range. ``--mode one``: process CPU time of the detector in one
process; ``--mode two``: wall time with the NER model in its helper process (as the
product runs it). Corpora as in :mod:`preflight_eval.bench_detect`.

Each corpus also prints how many spans (start, end, type) only one of the two found, from
the first warm-up pass; ``--differences N`` shows up to N of them in their context.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from preflight_eval.bench_detect import CORPORA, _default_tab, corpus

_IMPORTS = re.compile(r"\bpreflight(\.[a-z_]|\s+import\b)")


def extract(rev: str, dest: Path) -> Path:
    """``app/preflight`` and ``resources`` of ``rev`` under ``dest`` (with ``models``
    pointing at this checkout's), the package renamed ``preflight_old``; the folder to
    put on ``sys.path``."""
    from preflight.core.paths import install_root, models_dir

    root = install_root()
    tar = subprocess.run(["git", "-C", str(root), "archive", rev, "app/preflight", "resources"],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(dest, filter="data")
    app = dest / "app"
    (app / "preflight").rename(app / "preflight_old")
    for path in (app / "preflight_old").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        path.write_text(_IMPORTS.sub(r"preflight_old\1", source), encoding="utf-8")
    (dest / "models").symlink_to(models_dir(), target_is_directory=True)
    return app


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rev", help="the commit to compare with (e.g. HEAD~3)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mode", choices=("one", "two"), default="two")
    ap.add_argument("--words", type=int, default=4000)
    ap.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    ap.add_argument("--spam-cache", type=Path, default=None)
    ap.add_argument("--differences", type=int, default=0, metavar="N",
                    help="show up to N spans only one of the two found")
    args = ap.parse_args(argv)

    from preflight.core.paths import install_root
    from preflight.core.pii.detector import PiiDetector

    from preflight_eval.eval_pii import resolve_ner_path

    ner = resolve_ner_path(None)
    spam = args.spam_cache or install_root() / ".cache" / "spam-assassin"
    with tempfile.TemporaryDirectory(prefix="preflight-old-") as tmp:
        sys.path.insert(0, str(extract(args.rev, Path(tmp))))
        old_cls = importlib.import_module("preflight_old.core.pii.detector").PiiDetector
        two = args.mode == "two"
        detectors = {}
        for name, cls in (("old", old_cls), ("new", PiiDetector)):
            detector = cls(nlp_model_path=ner, ner_process=two)
            detector.load()
            detector.detect("warm up")
            if two and not detector.ner_helper.wait_ready(120):
                raise SystemExit("a NER helper process did not load its model")
            detectors[name] = detector
        clock = time.perf_counter if two else time.process_time
        print(f"{args.rev} → this checkout, {args.mode} process(es), {args.rounds} rounds")
        for cname in args.corpora:
            docs = corpus(cname, args.words, _default_tab(), spam)
            words = sum(len(t.split()) for t in docs)
            only = {"old": [], "new": []}
            for warm in range(2):                       # warm-up
                for text in docs:
                    found = {name: {(s.start, s.end, s.type) for s in d.detect(text)}
                             for name, d in detectors.items()}
                    if warm == 0:
                        only["old"] += [(text, s) for s in found["old"] - found["new"]]
                        only["new"] += [(text, s) for s in found["new"] - found["old"]]
            print(f"{cname:6} spans found by one only: old {len(only['old'])}, "
                  f"new {len(only['new'])}")
            for name, spans in only.items():
                for text, (start, end, kind) in sorted(spans, key=lambda x: x[1])[
                        :args.differences]:
                    print(f"  {name} only {kind:13} {text[start:end]!r:32} in "
                          f"{text[max(0, start - 40):end + 20]!r}")
            per: dict[str, list[float]] = {"old": [], "new": []}
            for rnd in range(args.rounds):
                spent = {"old": 0.0, "new": 0.0}
                order = ("old", "new") if rnd % 2 == 0 else ("new", "old")
                for text in docs:
                    for name in order:
                        t0 = clock()
                        detectors[name].detect(text)
                        spent[name] += clock() - t0
                for name, seconds in spent.items():
                    per[name].append(seconds / words * 1e6)
            ratios = sorted(n / o for n, o in zip(per["new"], per["old"]))
            print(f"{cname:6} old {statistics.median(per['old']):6.1f}  new "
                  f"{statistics.median(per['new']):6.1f} ms per 1,000 words   new / old "
                  f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}–{ratios[-1]:.3f})",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
