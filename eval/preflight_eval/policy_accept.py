"""The default policy on real text: what it replaces, what leaves, and whether a confirmed
send is ever blocked by detector noise — against ground truth.

Run:  python -m preflight_eval.policy_accept [--split heldout] [--docs N]
                                             [--policies identifiers everything ...]

Documents: the precision evaluation set (``preflight_eval.precision``: SpamAssassin e-mail
and Brown-corpus news/report text, neither tuned on, with fictional PII inserted where it
sits in such text; the inserted values are the ground truth). Every document is sent
under each policy through the product's send path — the real detector, the policy
mechanism the composition root builds, the re-scan, a confirmed ``execute`` as
``send --yes`` does it — to a loopback capture server. Per policy it prints:

- spans replaced outside the inserted values (what the policy changes that was not PII
  we put there), per 1,000 words and by entity type;
- inserted values found in the bytes the server received (``leak_check.Wire``: verbatim,
  case-folded, digits-only, compact IBAN), and apart from those, values found in part (a
  given name or surname alone, 4 digits of a number in a row: ``Wire.parts``);
- confirmed sends blocked by the re-scan, split into blocks on an inserted value (a leak
  caught) and blocks on anything else (detector noise: must be 0).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: precision.py's inserted types → leak_check kinds (how a value is searched on the wire)
_KIND = {"PERSON": "PERSON", "EMAIL": "EMAIL", "PHONE": "PHONE", "SSN": "SSN",
         "CARD": "CARD", "IBAN": "IBAN", "API_KEY": "API_KEY", "ADDRESS": "ADDRESS",
         "DOB": "DOB"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="heldout", choices=("heldout", "tuning"))
    ap.add_argument("--docs", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--policies", nargs="+", default=["identifiers", "everything"])
    ap.add_argument("--show", type=int, default=10,
                    help="print up to N noise blocks and leaked values per policy")
    ap.add_argument("--cache", type=Path, default=None,
                    help="folder for the npm corpus tarballs (default: <install>/.cache)")
    args = ap.parse_args(argv)

    home = tempfile.mkdtemp(prefix="preflight-policy-accept-")
    os.environ["PREFLIGHT_HOME"] = home        # never the user's audit log or settings

    from preflight.app.services import build_services
    from preflight.core.config import ProviderSettings, Settings
    from preflight.core.sanitize.base import SanitizeParams
    from preflight.core.send.audit import AuditLog
    from preflight.core.send.session import Confirmation, SendBlocked, SendSession
    from preflight.core.tasks import SUMMARIZE
    from preflight_eval.bench_send import _Capture
    from preflight_eval.leak_check import Inserted, Wire, background
    from preflight_eval.precision import build

    if args.cache is None:
        from preflight.core import paths

        args.cache = paths.install_root() / ".cache"
    docs, hosts = build(args.split, args.cache)
    if args.docs:
        docs, hosts = docs[:args.docs], hosts[:args.docs]
    words = sum(len(d.text.split()) for d in docs)
    services = build_services(Settings())
    detector = services.detector()
    spans_of = [detector.detect(d.text) for d in docs]
    print(f"split={args.split}: {len(docs)} documents "
          f"(email {sum(h.corpus == 'email' for h in hosts)}, "
          f"news {sum(h.corpus == 'news' for h in hosts)}), {words} words, "
          f"{sum(len(d.gold) for d in docs)} inserted values; detector "
          f"{services.models.spec('ner').name}, default settings")

    replaced_outside: dict[str, Counter] = {}
    for name in args.policies:
        cap = _Capture(["ok"])
        session = SendSession(
            Settings(providers=[ProviderSettings("cap", cap.url, "m")]), detector=detector,
            audit=AuditLog(Path(home) / f"{name}.sqlite3"),
            token_counter=services.token_counter(), mechanism_factory=services.mechanism)
        outside, leaked, checked, partial = Counter(), Counter(), Counter(), Counter()
        leaks: list[str] = []
        partial_leaks: list[str] = []
        blocked_leak = blocked_noise = sent = 0
        noise_examples: list[str] = []
        try:
            for i, (doc, spans) in enumerate(zip(docs, spans_of)):
                plan = session.prepare_send(doc.text, "cap", name,
                                            SanitizeParams(seed=i, epsilon=None), SUMMARIZE,
                                            spans=spans)
                for c in plan.sanitized.changes:
                    if not any(c.source_start < g.end and g.start < c.source_end
                               for g in doc.gold):
                        outside[c.type] += 1
                inserted = [Inserted(_KIND[g.type], doc.text[g.start:g.end]) for g in doc.gold]
                before = len(cap.requests)
                try:
                    session.execute(plan, Confirmation(True, resend_acknowledged=True),
                                    learn=False)
                except SendBlocked:
                    values = {x.value.casefold() for x in inserted}
                    for f in plan.blocking:
                        if any(v in f.value.casefold() or f.value.casefold() in v
                               for v in values):
                            blocked_leak += 1
                        else:
                            blocked_noise += 1
                            noise_examples.append(f"{f.type} {f.value!r} ({f.reason})")
                    continue
                sent += 1
                wires = [Wire(h, b) for h, b in cap.requests[before:]]
                rest = background(doc.text, tuple(inserted))
                for item in inserted:
                    checked[item.kind] += 1
                    if any(w.holds(item) for w in wires):
                        leaked[item.kind] += 1
                        leaks.append(f"{item.kind} {item.value!r} ({doc.doc_id})")
                        continue
                    parts = sorted({p for w in wires for p in w.parts(item, rest)})
                    if parts:
                        partial[item.kind] += 1
                        partial_leaks.append(f"{item.kind} {item.value!r} -> {parts} "
                                             f"({doc.doc_id})")
        finally:
            cap.close()
        replaced_outside[name] = outside
        total = sum(outside.values())
        print(f"\npolicy {name}: sent {sent}/{len(docs)}; blocking findings on inserted "
              f"values {blocked_leak}, on anything else (noise) {blocked_noise}")
        print(f"  spans replaced outside the inserted values: {total} "
              f"({total * 1000 / words:.2f} per 1,000 words): "
              + ", ".join(f"{t} {n}" for t, n in outside.most_common()))
        direct = {k: v for k, v in checked.items() if k != "DOB"}
        print(f"  inserted direct identifiers and secrets on the wire whole: "
              f"{sum(leaked[k] for k in direct)} of {sum(direct.values())} "
              f"({', '.join(f'{k} {leaked[k]}/{n}' for k, n in sorted(direct.items()))}); "
              f"in part: {sum(partial[k] for k in direct)} "
              f"({', '.join(f'{k} {partial[k]}' for k in sorted(direct) if partial[k])}); "
              f"dates of birth verbatim {leaked['DOB']}/{checked['DOB']}")
        for ex in noise_examples[:args.show]:
            print(f"    noise block: {ex}")
        for ex in leaks[:args.show]:
            print(f"    on the wire: {ex}")
        for ex in partial_leaks[:args.show]:
            print(f"    in part on the wire: {ex}")
    if "identifiers" in replaced_outside and "everything" in replaced_outside:
        a = sum(replaced_outside["identifiers"].values())
        b = sum(replaced_outside["everything"].values())
        print(f"\nidentifiers replaces {a} spans outside the inserted values, everything "
              f"{b}: ratio {a / max(b, 1):.3f} (target ≤ 0.333)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
